"""BrokerHeartbeat (63), v0-1, controller listener only (KIP-631): a broker's session with
the active controller. The answer says whether it has caught up with the metadata log, whether
it is fenced, and (after it asked to shut down) whether it may stop. A stale broker epoch gets
STALE_BROKER_EPOCH; a node that is not the active controller NOT_CONTROLLER.
"""

from __future__ import annotations

from typing import Any

from brook.metadata.controller_api import BrokerHeartbeat, ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import CONTROLLER, RequestContext, handler

REMOTE_VERSION = 1


def request_of(hb: BrokerHeartbeat) -> dict[str, Any]:
    return {
        "broker_id": hb.broker_id,
        "broker_epoch": hb.broker_epoch,
        "current_metadata_offset": hb.current_metadata_offset,
        "want_fence": hb.want_fence,
        "want_shut_down": hb.want_shutdown,
        "offline_log_dirs": (),
    }


@handler(ApiKey.BROKER_HEARTBEAT, (0, 1), scopes=(CONTROLLER,))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    heartbeat = BrokerHeartbeat(
        request.broker_id,
        request.broker_epoch,
        request.current_metadata_offset,
        request.want_fence,
        request.want_shut_down,
    )
    try:
        reply = await ctx.broker.local_controller().broker_heartbeat(heartbeat)
    except ControllerError as exc:
        return {
            "throttle_time": 0,
            "error_code": exc.error_code,
            "is_caught_up": False,
            "is_fenced": True,
            "should_shut_down": False,
        }
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "is_caught_up": reply.is_caught_up,
        "is_fenced": reply.is_fenced,
        "should_shut_down": reply.should_shutdown,
    }
