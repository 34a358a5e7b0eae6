"""CreatePartitions (37), v0-3: grow a topic to a new partition count, optionally with
explicit replica assignments for the new partitions; validate_only. Internal topics are
refused with INVALID_TOPIC_EXCEPTION, and a request adding more than 10,000 partitions in all
gets POLICY_VIOLATION for every topic (see metadata/controller.py)."""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey

from ..registry import RequestContext, handler


@handler(ApiKey.CREATE_PARTITIONS, (0, 3))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    requests = [
        (
            t.name,
            t.count,
            None if t.assignments is None else [list(a.broker_ids) for a in t.assignments],
        )
        for t in request.topics
    ]
    decision = await ctx.broker.metadata.submit(
        lambda c: c.create_partitions(requests, bool(request.validate_only))
    )
    results = [
        {"name": name, "error_code": o.error_code, "error_message": o.error_message}
        for (name, _, _), o in zip(requests, decision.results, strict=True)
    ]
    return {"throttle_time": 0, "results": results}
