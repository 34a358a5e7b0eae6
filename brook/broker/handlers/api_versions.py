"""ApiVersions (18), v0-4: the ranges of the handler table of the listener asked (broker or
controller), nothing more.

v3+ carries the client's software name and version (KIP-511). The response never writes
tagged fields at their default values: librdkafka before 2.2 (Debian 12's kcat) cannot skip
them. An unsupported version is answered in v0 by the connection itself (network.py).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import BROKER, CONTROLLER, TABLES, RequestContext, handler


@handler(ApiKey.API_VERSIONS, (0, 4), scopes=(BROKER, CONTROLLER))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    keys = [
        {
            "api_key": spec.api_key,
            "min_version": spec.advertised_min,
            "max_version": spec.max_version,
        }
        for spec in sorted(TABLES[ctx.scope].values(), key=lambda s: s.api_key)
    ]
    return {
        "error_code": Errors.NONE,
        "api_keys": keys,
        "throttle_time": 0,
        "supported_features": (),
        "finalized_features_epoch": -1,
        "finalized_features": (),
        "zk_migration_ready": False,
    }
