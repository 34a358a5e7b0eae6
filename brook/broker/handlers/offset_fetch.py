"""OffsetFetch (9), v1-9 (v8+ several groups): committed offsets, leader epochs (v5+) and
metadata; null topics (v2+) fetch every committed offset. Unknown partitions give -1.
require_stable (v7+, KIP-447): a partition whose offset a transaction has committed but not
yet ended gets UNSTABLE_OFFSET_COMMIT (the consumer retries); v9 member epochs are not checked.

Needs DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED); a named topic the caller may not
describe gets TOPIC_AUTHORIZATION_FAILED, and "every committed offset" leaves such topics out.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..group.coordinator import GroupCoordinator
from ..registry import RequestContext, handler


@handler(ApiKey.OFFSET_FETCH, (1, 9))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    coordinator = ctx.broker.group_coordinator
    if ctx.api_version >= 8:
        groups = []
        for group in request.groups:
            error, topics = _fetch(
                ctx, coordinator, group.group_id, group.topics, _stable(request, ctx)
            )
            groups.append({"group_id": group.group_id, "topics": topics, "error_code": error})
        return {"throttle_time": 0, "groups": groups}
    error, topics = _fetch(
        ctx, coordinator, request.group_id, request.topics, _stable(request, ctx)
    )
    if error and ctx.api_version < 2:
        # v1 has no top-level error: every requested partition carries it.
        topics = [
            {
                "name": t.name,
                "partitions": [_partition(p, None, error) for p in t.partition_indexes],
            }
            for t in request.topics
        ]
    return {"throttle_time": 0, "topics": topics, "error_code": error}


def _stable(request: Any, ctx: RequestContext) -> bool:
    return ctx.api_version >= 7 and bool(getattr(request, "require_stable", False))


def _fetch(
    ctx: RequestContext,
    coordinator: GroupCoordinator,
    group_id: str,
    requested: Any,
    require_stable: bool = False,
) -> tuple[int, list[dict[str, Any]]]:
    if not authz.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
        return Errors.GROUP_AUTHORIZATION_FAILED, []
    denied: list[tuple[str, int]] = []
    if requested is None:
        wanted = None
    else:
        wanted = [(t.name, p) for t in requested for p in t.partition_indexes]
        visible = authz.allowed_names(
            ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t for t, _ in wanted)
        )
        denied = [tp for tp in wanted if tp[0] not in visible]
        wanted = [tp for tp in wanted if tp[0] in visible]
    error, offsets = coordinator.fetch_offsets(group_id, wanted)
    if error:
        return error, []
    if requested is None:
        # every committed offset: only those of topics the caller may describe
        visible = authz.allowed_names(
            ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t for (t, _), _ in offsets)
        )
        offsets = [item for item in offsets if item[0][0] in visible]
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, partition in denied:
        failed = _partition(partition, None, Errors.TOPIC_AUTHORIZATION_FAILED)
        by_topic.setdefault(topic, []).append(failed)
    for (topic, partition), value in offsets:
        if require_stable and coordinator.has_pending_txn(group_id, (topic, partition)):
            entry = _partition(partition, None, Errors.UNSTABLE_OFFSET_COMMIT)
        else:
            entry = _partition(partition, value, Errors.NONE)
        by_topic.setdefault(topic, []).append(entry)
    return Errors.NONE, [{"name": name, "partitions": parts} for name, parts in by_topic.items()]


def _partition(index: int, value: Any, error: int) -> dict[str, Any]:
    return {
        "partition_index": index,
        "committed_offset": value.offset if value is not None else -1,
        "committed_leader_epoch": value.leader_epoch if value is not None else -1,
        "metadata": value.metadata if value is not None else "",
        "error_code": error,
    }
