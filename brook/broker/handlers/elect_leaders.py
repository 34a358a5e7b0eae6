"""ElectLeaders (43), v0-2: preferred (0) or unclean (1) leader election, for listed partitions
or (null) all of them. v0 is always preferred."""

from __future__ import annotations

from typing import Any

from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms
from brook.protocol.errors import Errors

from ..controller_channel import call_controller
from ..registry import RequestContext, handler


@handler(ApiKey.ELECT_LEADERS, (0, 2))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    election_type = getattr(request, "election_type", 0)
    partitions = None
    if request.topic_partitions is not None:
        partitions = [(t.topic, p) for t in request.topic_partitions for p in t.partitions]
    try:
        results = await call_controller(
            ctx.broker,
            lambda c: c.elect_leaders(election_type, partitions),
            to_ms(request.timeout),
        )
    except ControllerError as exc:
        return {
            "throttle_time": 0,
            "error_code": exc.error_code,
            "replica_election_results": [],
        }
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, p, outcome in results:
        by_topic.setdefault(topic, []).append(
            {
                "partition_id": p,
                "error_code": outcome.error_code,
                "error_message": outcome.error_message,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "replica_election_results": [
            {"topic": t, "partition_result": results} for t, results in by_topic.items()
        ],
    }
