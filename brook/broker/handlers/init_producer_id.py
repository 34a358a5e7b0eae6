"""InitProducerId (22), v0-5, for idempotent producers: a fresh producer id at epoch 0 from
this broker's block of ids (blocks are allocated through the controller, so ids are never
reused, even across restarts). Transactions are not supported: a transactional id gets
COORDINATOR_NOT_AVAILABLE, as from a broker without a transaction coordinator."""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from ..registry import RequestContext, handler


@handler(ApiKey.INIT_PRODUCER_ID, (0, 5))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if request.transactional_id is not None:
        return {
            "throttle_time": 0,
            "error_code": Errors.COORDINATOR_NOT_AVAILABLE,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    try:
        producer_id = await ctx.broker.producer_ids.next_id()
    except KafkaError:
        # No block of ids can be committed (the metadata log's directory is offline): Kafka's
        # broker answers this while it has no block, and the client retries.
        return {
            "throttle_time": 0,
            "error_code": Errors.COORDINATOR_LOAD_IN_PROGRESS,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "producer_id": producer_id,
        "producer_epoch": 0,
    }
