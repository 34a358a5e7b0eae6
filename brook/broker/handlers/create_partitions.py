"""CreatePartitions (37), v0-3: grow a topic to a new partition count, optionally with
explicit replica assignments for the new partitions; validate_only. Internal topics are
refused with INVALID_TOPIC_EXCEPTION, and a request adding more than 10,000 partitions in all
gets POLICY_VIOLATION for every topic (see metadata/controller.py).

Each topic needs ALTER (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.metadata.controller import Outcome
from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..controller_channel import call_controller
from ..registry import BROKER, CONTROLLER, RequestContext, handler

REMOTE_VERSION = 3
Request = list[tuple[str, int, list[list[int]] | None]]


def request_of(requests: Request, validate_only: bool, timeout_ms: int) -> dict:
    topics = [
        {
            "name": name,
            "count": count,
            "assignments": None
            if assignments is None
            else [{"broker_ids": tuple(a)} for a in assignments],
        }
        for name, count, assignments in requests
    ]
    return {"topics": topics, "timeout": timeout_ms, "validate_only": validate_only}


def results_of(response: Any) -> list[Outcome]:
    return [Outcome(r.error_code, r.error_message) for r in response.results]


@handler(ApiKey.CREATE_PARTITIONS, (0, 3), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    requests = [
        (
            t.name,
            t.count,
            None if t.assignments is None else [list(a.broker_ids) for a in t.assignments],
        )
        for t in request.topics
    ]
    allowed = {r[0] for r in requests}
    if not ctx.on_controller_listener:
        allowed = authz.allowed_names(ctx, AclOperation.ALTER, ResourceType.TOPIC, allowed)
    wanted = [r for r in requests if r[0] in allowed]
    decided: list[Outcome] = []
    if wanted:
        try:
            decided = await call_controller(
                ctx.broker,
                lambda c: c.create_partitions(wanted, bool(request.validate_only)),
                to_ms(request.timeout),
                local=ctx.on_controller_listener,
            )
        except ControllerError as exc:
            decided = [Outcome(exc.error_code, exc.message) for _ in wanted]
    answers = iter(decided)
    denied = Outcome(Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
    outcomes = [next(answers) if r[0] in allowed else denied for r in requests]
    results = [
        {"name": name, "error_code": o.error_code, "error_message": o.error_message}
        for (name, _, _), o in zip(requests, outcomes, strict=True)
    ]
    return {"throttle_time": 0, "results": results}
