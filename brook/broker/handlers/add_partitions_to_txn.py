"""AddPartitionsToTxn (24), v0-5.

v0-3 (clients): a transactional producer adds partitions to its transaction before producing
to them (the coordinator writes Ongoing with them to ``__transaction_state``). The
transactional id needs WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition);
each topic WRITE (TOPIC_AUTHORIZATION_FAILED); a topic that does not exist
UNKNOWN_TOPIC_OR_PARTITION; when any partition is refused so, the others get
OPERATION_NOT_ATTEMPTED, as in Kafka. Otherwise every partition gets the coordinator's answer
(NOT_COORDINATOR, CONCURRENT_TRANSACTIONS, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below v2),
INVALID_PRODUCER_ID_MAPPING, ...).

v4-5 (KIP-890, broker to coordinator): a batch of transactions, each answered on its own;
the sender needs CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED as the top-level
error otherwise) and no topic is authorized. A transaction with ``verify_only`` is not
changed: each partition is answered NONE if it is in the ongoing transaction,
TRANSACTION_ABORTABLE if not (``txn/verification.py``); without it, its partitions are added
as v3 adds them. v5 differs from v4 only in that its sender understands
TRANSACTION_ABORTABLE; Brook's coordinator answers both alike, as Kafka's does.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler
from .txn_common import client_error, coordinator

# The first version only brokers send (KIP-890's batched form).
BROKER_VERSION = 4

TopicPartition = tuple[str, int]


@handler(ApiKey.ADD_PARTITIONS_TO_TXN, (0, 5))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.api_version >= BROKER_VERSION:
        return await _handle_batch(ctx, request)
    tid = request.v3_and_below_transactional_id
    wanted = [(t.name, int(p)) for t in request.v3_and_below_topics for p in t.partitions]
    errors: dict[TopicPartition, int] = {}
    if not authz.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        errors = dict.fromkeys(wanted, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        names = {t for t, _ in wanted}
        allowed = authz.allowed_names(ctx, AclOperation.WRITE, ResourceType.TOPIC, names)
        errors = _unknown_or_denied(ctx.broker, wanted, allowed)
        if not errors:
            error = await coordinator(ctx).add_partitions(
                tid,
                int(request.v3_and_below_producer_id),
                int(request.v3_and_below_producer_epoch),
                wanted,
            )
            error = client_error(error, "add_partitions", ctx.api_version)
            errors = dict.fromkeys(wanted, error)
    return {"throttle_time": 0, "results_by_topic_v3_and_below": _by_topic(errors)}


async def _handle_batch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not authz.authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        return {
            "throttle_time": 0,
            "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
            "results_by_transaction": [],
        }
    results = []
    for txn in request.transactions:
        wanted = [(t.name, int(p)) for t in txn.topics for p in t.partitions]
        errors = await answer_transaction(
            ctx.broker,
            txn.transactional_id,
            int(txn.producer_id),
            int(txn.producer_epoch),
            wanted,
            verify_only=bool(txn.verify_only),
        )
        results.append(
            {"transactional_id": txn.transactional_id, "topic_results": _by_topic(errors)}
        )
    return {"throttle_time": 0, "error_code": Errors.NONE, "results_by_transaction": results}


async def answer_transaction(
    broker: Any,
    transactional_id: str,
    producer_id: int,
    producer_epoch: int,
    partitions: list[TopicPartition],
    *,
    verify_only: bool,
) -> dict[TopicPartition, int]:
    """One transaction of a v4+ request, as its coordinator answers it; also how a leader
    verifies against the coordinator on its own node (no request to itself)."""
    errors = _unknown_or_denied(broker, partitions, {t for t, _ in partitions})
    if errors:
        return errors
    txn = broker.txn_coordinator
    if txn is None:
        return dict.fromkeys(partitions, Errors.COORDINATOR_NOT_AVAILABLE)
    if verify_only:
        txn.manager.num_partitions = txn.num_partitions
        return {
            tp: int(e)
            for tp, e in txn.manager.verify_partitions(
                transactional_id, producer_id, producer_epoch, partitions
            ).items()
        }
    error = await txn.add_partitions(transactional_id, producer_id, producer_epoch, partitions)
    return dict.fromkeys(partitions, error)


def _unknown_or_denied(
    broker: Any, wanted: list[TopicPartition], allowed: set[str]
) -> dict[TopicPartition, int]:
    """Kafka's per-partition refusals; when any, the rest get OPERATION_NOT_ATTEMPTED."""
    errors: dict[TopicPartition, int] = {}
    image = broker.image
    for tp in wanted:
        if tp[0] not in allowed:
            errors[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
        elif image.partition(tp[0], tp[1]) is None:
            errors[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
    if errors:
        for tp in wanted:
            errors.setdefault(tp, Errors.OPERATION_NOT_ATTEMPTED)
    return errors


def _by_topic(errors: dict[TopicPartition, int]) -> list[dict[str, Any]]:
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, p), code in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": p, "partition_error_code": code})
    return [{"name": topic, "results_by_partition": parts} for topic, parts in by_topic.items()]
