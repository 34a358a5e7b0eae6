"""TxnOffsetCommit (28), v0-3: a transactional producer commits a consumer group's offsets
inside its transaction (``send_offsets_to_transaction``). They are written to the group's
``__consumer_offsets`` partition as a transactional batch of the producer and become the
group's committed offsets only when the transaction's COMMIT marker reaches that partition
(an ABORT drops them).

As Kafka, it needs WRITE on the transactional id
(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), READ on the group (GROUP_AUTHORIZATION_FAILED), READ
on each topic (TOPIC_AUTHORIZATION_FAILED); a topic that does not exist
UNKNOWN_TOPIC_OR_PARTITION. v3 (KIP-447) carries the member's generation, member id and
instance id, checked as OffsetCommit checks them.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.TXN_OFFSET_COMMIT, (0, 3))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    wanted = [(t.name, p) for t in request.topics for p in t.partitions]
    errors: dict[tuple[str, int], int] = {}
    if not authz.authorize(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        errors = {
            (t, p.partition_index): Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED for t, p in wanted
        }
    elif not authz.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        errors = {(t, p.partition_index): Errors.GROUP_AUTHORIZATION_FAILED for t, p in wanted}
    else:
        allowed = authz.allowed_names(
            ctx, AclOperation.READ, ResourceType.TOPIC, {t for t, _ in wanted}
        )
        offsets: dict[tuple[str, int], tuple[int, int, str | None]] = {}
        for topic, p in wanted:
            tp = (topic, int(p.partition_index))
            if topic not in allowed:
                errors[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
            elif ctx.broker.image.partition(topic, tp[1]) is None:
                errors[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                offsets[tp] = (
                    int(p.committed_offset),
                    int(getattr(p, "committed_leader_epoch", -1)),
                    p.committed_metadata,
                )
        if offsets:
            errors.update(
                await ctx.broker.group_coordinator.commit_txn_offsets(
                    request.group_id,
                    producer_id=int(request.producer_id),
                    producer_epoch=int(request.producer_epoch),
                    member_id=getattr(request, "member_id", ""),
                    group_instance_id=getattr(request, "group_instance_id", None),
                    generation_id=int(getattr(request, "generation_id", -1)),
                    offsets=offsets,
                )
            )
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, index), code in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": index, "error_code": code})
    return {
        "throttle_time": 0,
        "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
    }
