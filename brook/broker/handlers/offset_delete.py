"""OffsetDelete (47), v0: removes a group's committed offsets for some partitions; refused
(GROUP_SUBSCRIBED_TO_TOPIC) for topics an active consumer group subscribes to, and
NON_EMPTY_GROUP for an active group of another protocol type.

Needs DELETE on the group (GROUP_AUTHORIZATION_FAILED) and READ on each topic
(TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.OFFSET_DELETE, (0, 0))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    image = ctx.broker.image
    codes: dict[tuple[str, int], int] = {}
    wanted = []
    if not authz.authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, request.group_id):
        return {"error_code": Errors.GROUP_AUTHORIZATION_FAILED, "throttle_time": 0, "topics": []}
    readable = authz.allowed_names(
        ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if topic.name not in readable:
                codes[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
            elif image.partition(*tp) is None:
                codes[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted.append(tp)
    error, deleted = await ctx.broker.group_coordinator.delete_offsets(request.group_id, wanted)
    if error:
        return {"error_code": error, "throttle_time": 0, "topics": []}
    codes.update(deleted)
    return {
        "error_code": Errors.NONE,
        "throttle_time": 0,
        "topics": [
            {
                "name": topic.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": codes[(topic.name, p.partition_index)],
                    }
                    for p in topic.partitions
                ],
            }
            for topic in request.topics
        ],
    }
