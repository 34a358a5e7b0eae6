"""AllocateProducerIds (67), v0, controller listener only: a broker's next block of producer
ids for idempotent producers (KIP-730). A stale broker epoch gets STALE_BROKER_EPOCH; a node
that is not the active controller NOT_CONTROLLER."""

from __future__ import annotations

from typing import Any

from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import CONTROLLER, RequestContext, handler

REMOTE_VERSION = 0


@handler(ApiKey.ALLOCATE_PRODUCER_IDS, (0, 0), scopes=(CONTROLLER,))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        block = await ctx.broker.local_controller().allocate_producer_ids(
            request.broker_id, request.broker_epoch
        )
    except ControllerError as exc:
        return {
            "throttle_time": 0,
            "error_code": exc.error_code,
            "producer_id_start": -1,
            "producer_id_len": 0,
        }
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "producer_id_start": block.value.first_producer_id,
        "producer_id_len": block.value.size,
    }
