"""AlterPartition (56), v2-3 as Kafka 4.0 serves it, controller listener only: a partition
leader's ISR changes (KIP-497). v3 names each new ISR member with its broker epoch
(NewIsrWithEpochs, KIP-903); v2 sends ids only. A stale broker epoch fails the whole request
(STALE_BROKER_EPOCH); each partition gets its own error (in the order of Kafka's
ReplicationControlManager) or its new leader, leader epoch, ISR and partition epoch. A node
that is not the active controller answers NOT_CONTROLLER.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from brook.metadata.controller_api import ControllerError, IsrChange, IsrChangeResult
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import CONTROLLER, RequestContext, handler

REMOTE_VERSION = 3


def request_of(broker_id: int, broker_epoch: int, changes: Sequence[IsrChange]) -> dict[str, Any]:
    """The v3 request for ``changes``, grouped by topic in the order they come."""
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for c in changes:
        topics.setdefault(c.topic_id, []).append(
            {
                "partition_index": c.partition,
                "leader_epoch": c.leader_epoch,
                "new_isr_with_epochs": [{"broker_id": b, "broker_epoch": e} for b, e in c.new_isr],
                "leader_recovery_state": c.leader_recovery_state,
                "partition_epoch": c.partition_epoch,
            }
        )
    return {
        "broker_id": broker_id,
        "broker_epoch": broker_epoch,
        "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
    }


def changes_of(request: Any, version: int) -> list[IsrChange]:
    out = []
    for topic in request.topics:
        topic_id = topic.topic_id or uuid.UUID(int=0)
        for p in topic.partitions:
            if version >= 3:
                isr = tuple((int(b.broker_id), int(b.broker_epoch)) for b in p.new_isr_with_epochs)
            else:
                isr = tuple((int(b), -1) for b in p.new_isr)
            out.append(
                IsrChange(
                    topic_id,
                    p.partition_index,
                    p.leader_epoch,
                    isr,
                    p.partition_epoch,
                    p.leader_recovery_state,
                )
            )
    return out


def response_of(
    results: Sequence[IsrChangeResult], error_code: int = Errors.NONE
) -> dict[str, Any]:
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for r in results:
        topics.setdefault(r.topic_id, []).append(
            {
                "partition_index": r.partition,
                "error_code": r.error_code,
                "leader_id": r.leader_id,
                "leader_epoch": r.leader_epoch,
                "isr": list(r.isr),
                "leader_recovery_state": r.leader_recovery_state,
                "partition_epoch": r.partition_epoch,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": error_code,
        "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
    }


def results_of(response: Any) -> list[IsrChangeResult]:
    return [
        IsrChangeResult(
            topic.topic_id or uuid.UUID(int=0),
            p.partition_index,
            p.error_code,
            p.leader_id,
            p.leader_epoch,
            tuple(int(b) for b in p.isr),
            p.partition_epoch,
            p.leader_recovery_state,
        )
        for topic in response.topics
        for p in topic.partitions
    ]


@handler(ApiKey.ALTER_PARTITION, (2, 3), scopes=(CONTROLLER,))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    try:
        result = await ctx.broker.local_controller().alter_partition(
            request.broker_id, request.broker_epoch, changes_of(request, ctx.api_version)
        )
    except ControllerError as exc:
        return response_of([], exc.error_code)
    return response_of(result.value)
