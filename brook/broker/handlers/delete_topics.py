"""DeleteTopics (20), v1-6: by name, or by topic id (v6+). The partitions' logs are removed
when the metadata change reaches the replica manager. Internal topics are refused with
INVALID_TOPIC_EXCEPTION (Kafka leaves that to its authorizer; see docs/compatibility.md)."""

from __future__ import annotations

import uuid
from typing import Any

from brook.metadata.controller import Outcome
from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms

from ..controller_channel import call_controller
from ..registry import BROKER, CONTROLLER, RequestContext, handler

ZERO_UUID = uuid.UUID(int=0)
REMOTE_VERSION = 6


def request_of(names: list[str | None], ids: list[uuid.UUID | None], timeout_ms: int) -> dict:
    topics = [{"name": n, "topic_id": i or ZERO_UUID} for n, i in zip(names, ids, strict=True)]
    return {"topics": topics, "timeout": timeout_ms}


def results_of(response: Any) -> list[tuple[str | None, uuid.UUID | None, Outcome]]:
    return [
        (r.name, r.topic_id, Outcome(r.error_code, r.error_message)) for r in response.responses
    ]


@handler(ApiKey.DELETE_TOPICS, (1, 6), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.api_version >= 6:
        names = [t.name for t in request.topics]
        ids = [t.topic_id for t in request.topics]
    else:
        names = list(request.topic_names)
        ids = [None] * len(names)
    try:
        results = await call_controller(
            ctx.broker,
            lambda c: c.delete_topics(names, ids),
            to_ms(request.timeout),
            local=ctx.on_controller_listener,
        )
    except ControllerError as exc:
        failed = Outcome(exc.error_code, exc.message)
        results = [(name, topic_id, failed) for name, topic_id in zip(names, ids, strict=True)]
    responses = [
        {
            "name": name,
            "topic_id": topic_id or ZERO_UUID,
            "error_code": outcome.error_code,
            "error_message": outcome.error_message,
        }
        for name, topic_id, outcome in results
    ]
    return {"throttle_time": 0, "responses": responses}
