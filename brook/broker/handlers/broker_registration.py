"""BrokerRegistration (62), v0-4, controller listener only (KIP-631): a starting broker
registers its incarnation, listeners, features and rack and gets its broker epoch (the offset
of its RegisterBrokerRecord). A live session of another incarnation with the same id gets
DUPLICATE_BROKER_REGISTRATION, a cluster id that differs INCONSISTENT_CLUSTER_ID, a node that
is not the active controller NOT_CONTROLLER.
"""

from __future__ import annotations

from typing import Any

from brook.metadata.controller_api import BrokerRegistration, ControllerError
from brook.metadata.records import SECURITY_PROTOCOLS as _PROTOCOLS
from brook.metadata.records import BrokerFeature, Endpoint
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import CONTROLLER, RequestContext, handler

REMOTE_VERSION = 4
_PROTOCOL_NAMES = {v: k for k, v in _PROTOCOLS.items()}


def request_of(reg: BrokerRegistration) -> dict[str, Any]:
    return {
        "broker_id": reg.broker_id,
        "cluster_id": reg.cluster_id,
        "incarnation_id": reg.incarnation_id,
        "listeners": [
            {
                "name": ep.name,
                "host": ep.host,
                "port": ep.port,
                "security_protocol": _PROTOCOLS[ep.security_protocol],
            }
            for ep in reg.endpoints
        ],
        "features": [
            {
                "name": f.name,
                "min_supported_version": f.min_version,
                "max_supported_version": f.max_version,
            }
            for f in reg.features
        ],
        "rack": reg.rack,
        "is_migrating_zk_broker": False,
        "log_dirs": (),
        "previous_broker_epoch": reg.previous_broker_epoch,
    }


def registration_of(request: Any) -> BrokerRegistration:
    return BrokerRegistration(
        request.broker_id,
        request.cluster_id,
        request.incarnation_id,
        tuple(
            Endpoint(
                ep.name, ep.host, ep.port, _PROTOCOL_NAMES.get(ep.security_protocol, "PLAINTEXT")
            )
            for ep in request.listeners
        ),
        request.rack,
        tuple(
            BrokerFeature(f.name, f.min_supported_version, f.max_supported_version)
            for f in request.features
        ),
        getattr(request, "previous_broker_epoch", -1),
    )


@handler(ApiKey.BROKER_REGISTRATION, (0, 4), scopes=(CONTROLLER,))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        result = await ctx.broker.local_controller().register_broker(registration_of(request))
    except ControllerError as exc:
        return {"throttle_time": 0, "error_code": exc.error_code, "broker_epoch": -1}
    return {"throttle_time": 0, "error_code": Errors.NONE, "broker_epoch": result.value}
