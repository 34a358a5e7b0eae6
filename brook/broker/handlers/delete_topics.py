"""DeleteTopics (20), v1-6: by name, or by topic id (v6+). The partitions' logs are removed
when the metadata change reaches the replica manager. Internal topics are refused with
INVALID_TOPIC_EXCEPTION (Kafka leaves that to its authorizer; see docs/compatibility.md).

Each topic needs DESCRIBE, then DELETE (TOPIC_AUTHORIZATION_FAILED; by id, a topic the caller
may not describe is UNKNOWN_TOPIC_ID).
"""

from __future__ import annotations

import uuid
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

ZERO_UUID = uuid.UUID(int=0)
REMOTE_VERSION = 6


def request_of(names: list[str | None], ids: list[uuid.UUID | None], timeout_ms: int) -> dict:
    topics = [{"name": n, "topic_id": i or ZERO_UUID} for n, i in zip(names, ids, strict=True)]
    return {"topics": topics, "timeout": timeout_ms}


def results_of(response: Any) -> list[tuple[str | None, uuid.UUID | None, Outcome]]:
    return [
        (r.name, r.topic_id, Outcome(r.error_code, r.error_message)) for r in response.responses
    ]


def _refusals(
    ctx: RequestContext, names: list[str | None], ids: list[uuid.UUID | None]
) -> dict[int, tuple[str | None, uuid.UUID | None, Outcome]]:
    """Kafka's checks: DESCRIBE on the topic (a topic asked for by id and not describable is
    UNKNOWN_TOPIC_ID, as if it did not exist), then DELETE (TOPIC_AUTHORIZATION_FAILED)."""
    refused = {}
    image = ctx.broker.image
    for i, (name, topic_id) in enumerate(zip(names, ids, strict=True)):
        by_id = topic_id is not None and topic_id != ZERO_UUID
        info = image.topics_by_id.get(topic_id) if by_id else None
        resolved = info.name if info is not None else (None if by_id else name)
        if resolved is None:
            continue
        if not authz.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, resolved):
            if by_id:
                unknown = Outcome(
                    Errors.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."
                )
                refused[i] = (None, topic_id, unknown)
            else:
                denied = Outcome(Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
                refused[i] = (name, topic_id, denied)
        elif not authz.authorize(ctx, AclOperation.DELETE, ResourceType.TOPIC, resolved):
            denied = Outcome(Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            refused[i] = (resolved, topic_id, denied)
    return refused


@handler(ApiKey.DELETE_TOPICS, (1, 6), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.api_version >= 6:
        names = [t.name for t in request.topics]
        ids = [t.topic_id for t in request.topics]
    else:
        names = list(request.topic_names)
        ids = [None] * len(names)
    refused = {} if ctx.on_controller_listener else _refusals(ctx, names, ids)
    wanted = [i for i in range(len(names)) if i not in refused]
    decided: list[tuple[str | None, uuid.UUID | None, Outcome]] = []
    if wanted:
        try:
            decided = await call_controller(
                ctx.broker,
                lambda c: c.delete_topics([names[i] for i in wanted], [ids[i] for i in wanted]),
                to_ms(request.timeout),
                local=ctx.on_controller_listener,
            )
        except ControllerError as exc:
            failed = Outcome(exc.error_code, exc.message)
            decided = [(names[i], ids[i], failed) for i in wanted]
    answers = iter(decided)
    results = [refused[i] if i in refused else next(answers) for i in range(len(names))]
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
