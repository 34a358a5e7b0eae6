"""CreatePartitions (37), v0-3: grow a topic to a new partition count, optionally with
explicit replica assignments for the new partitions; validate_only."""

from __future__ import annotations

from typing import Any

from brook.metadata.controller import Outcome
from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms

from ..controller_channel import call_controller
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
    try:
        outcomes = await call_controller(
            ctx.broker,
            lambda c: c.create_partitions(requests, bool(request.validate_only)),
            to_ms(request.timeout),
        )
    except ControllerError as exc:
        outcomes = [Outcome(exc.error_code, exc.message) for _ in requests]
    results = [
        {"name": name, "error_code": o.error_code, "error_message": o.error_message}
        for (name, _, _), o in zip(requests, outcomes, strict=True)
    ]
    return {"throttle_time": 0, "results": results}
