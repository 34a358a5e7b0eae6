"""OffsetCommit (8), v2-9: stores offsets, leader epochs (v6+) and metadata in
``__consumer_offsets`` for members of the current generation, or for anyone when the group is
Empty and the generation is -1. v2-4 retention times are kept per offset. v0-1 are not served.

Needs READ on the group (GROUP_AUTHORIZATION_FAILED on every partition) and READ on each
topic (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.OFFSET_COMMIT, (2, 9))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    version = ctx.api_version
    image = ctx.broker.image
    codes: dict[tuple[str, int], int] = {}
    wanted: dict[tuple[str, int], tuple[int, int, str | None]] = {}
    group_denied = not authz.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id)
    readable = authz.allowed_names(
        ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    for topic in request.topics:
        for p in topic.partitions:
            tp = (topic.name, p.partition_index)
            if group_denied:
                codes[tp] = Errors.GROUP_AUTHORIZATION_FAILED
            elif topic.name not in readable:
                codes[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
            elif image.partition(*tp) is None:
                codes[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                wanted[tp] = (
                    p.committed_offset,
                    getattr(p, "committed_leader_epoch", -1),
                    p.committed_metadata,
                )
    if wanted:
        codes.update(
            await ctx.broker.group_coordinator.commit_offsets(
                request.group_id,
                member_id=request.member_id,
                group_instance_id=getattr(request, "group_instance_id", None),
                generation_id=request.generation_id_or_member_epoch,
                offsets=wanted,
                retention_time_ms=to_ms(request.retention_time) if version <= 4 else -1,
                # Kafka 4 answers an unknown group by name from v9; older versions keep the
                # code clients have always handled.
                unknown_group_error=(
                    Errors.GROUP_ID_NOT_FOUND if version >= 9 else Errors.ILLEGAL_GENERATION
                ),
            )
        )
    return {
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
