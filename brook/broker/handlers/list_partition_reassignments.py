"""ListPartitionReassignments (46), v0: partitions with a move in progress."""

from __future__ import annotations

from typing import Any

from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import RequestContext, handler


@handler(ApiKey.LIST_PARTITION_REASSIGNMENTS, (0, 0))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    wanted = None
    if request.topics is not None:
        wanted = [(t.name, p) for t in request.topics for p in t.partition_indexes]
    try:
        moves = await ctx.broker.controller.list_partition_reassignments(wanted)
    except ControllerError as exc:
        return {
            "throttle_time": 0,
            "error_code": exc.error_code,
            "error_message": exc.message,
            "topics": [],
        }
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for move in moves:
        by_topic.setdefault(move.topic, []).append(
            {
                "partition_index": move.partition,
                "replicas": move.replicas,
                "adding_replicas": move.adding,
                "removing_replicas": move.removing,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "error_message": None,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
