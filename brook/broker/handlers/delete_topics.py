"""DeleteTopics (20), v1-6: by name, or by topic id (v6+). The partitions' logs are removed
when the metadata change reaches the replica manager. Internal topics are refused with
INVALID_TOPIC_EXCEPTION (Kafka leaves that to its authorizer; see docs/compatibility.md)."""

from __future__ import annotations

import uuid
from typing import Any

from brook.protocol.api import ApiKey

from ..registry import RequestContext, handler

ZERO_UUID = uuid.UUID(int=0)


@handler(ApiKey.DELETE_TOPICS, (1, 6))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.api_version >= 6:
        names = [t.name for t in request.topics]
        ids = [t.topic_id for t in request.topics]
    else:
        names = list(request.topic_names)
        ids = [None] * len(names)
    decision = await ctx.broker.metadata.submit(lambda c: c.delete_topics(names, ids))
    responses = [
        {
            "name": name,
            "topic_id": topic_id or ZERO_UUID,
            "error_code": outcome.error_code,
            "error_message": outcome.error_message,
        }
        for name, topic_id, outcome in decision.results
    ]
    return {"throttle_time": 0, "responses": responses}
