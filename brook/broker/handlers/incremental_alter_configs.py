"""IncrementalAlterConfigs (44), v0-1: SET, DELETE, APPEND and SUBTRACT (list configs only)
on topic configs and on brokers' dynamic defaults of topic configs."""

from __future__ import annotations

from typing import Any

from brook.metadata.controller import ConfigOp
from brook.protocol.api import ApiKey

from ..registry import BROKER, CONTROLLER, RequestContext, handler
from .alter_configs import Resources, alter
from .alter_configs import results_of as results_of

REMOTE_VERSION = 1


def request_of(resources: Resources, validate_only: bool) -> dict:
    return {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [
                    {"name": op.name, "config_operation": op.op, "value": op.value} for op in ops
                ],
            }
            for rtype, name, ops in resources
        ],
        "validate_only": validate_only,
    }


@handler(ApiKey.INCREMENTAL_ALTER_CONFIGS, (0, 1), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    resources = [
        (
            r.resource_type,
            r.resource_name,
            [ConfigOp(c.name, c.config_operation, c.value) for c in r.configs],
        )
        for r in request.resources
    ]
    return await alter(ctx, resources, True, bool(request.validate_only))
