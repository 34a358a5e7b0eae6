"""ListPartitionReassignments (46), v0: partitions with a move in progress."""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import RequestContext, handler


@handler(ApiKey.LIST_PARTITION_REASSIGNMENTS, (0, 0))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    wanted = None
    if request.topics is not None:
        wanted = [(t.name, p) for t in request.topics for p in t.partition_indexes]
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (
        topic,
        p,
        replicas,
        adding,
        removing,
    ) in ctx.broker.metadata.controller.list_partition_reassignments(wanted):
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": p,
                "replicas": replicas,
                "adding_replicas": adding,
                "removing_replicas": removing,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "error_message": None,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
