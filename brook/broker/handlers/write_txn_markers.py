"""WriteTxnMarkers (27), v1: a transaction coordinator's COMMIT or ABORT markers, written to
every partition of the transaction that this broker leads, each with acks=all (Kafka's
coordinator appends them so), answered per partition once replicated or at
``request.timeout.ms``.

A partition this broker does not lead gets NOT_LEADER_OR_FOLLOWER (or
UNKNOWN_TOPIC_OR_PARTITION for one that does not exist); a marker of an older producer epoch
INVALID_PRODUCER_EPOCH; one from a coordinator epoch older than the last marker's
TRANSACTION_COORDINATOR_FENCED; an ISR below the effective min ISR NOT_ENOUGH_REPLICAS (the
coordinator retries each of these as Kafka's does). The sender needs CLUSTER_ACTION on the
cluster (CLUSTER_AUTHORIZATION_FAILED on every partition otherwise).

v2 (transaction version 2, KIP-890) is not served: Brook's coordinator writes v1 markers.
A marker written to ``__consumer_offsets`` also ends the offsets the transaction committed
there (TxnOffsetCommit): the group coordinator applies them on COMMIT, drops them on ABORT.
"""

from __future__ import annotations

import time
from typing import Any

from brook.broker.group.store import OFFSETS_TOPIC
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.txn_marker import TxnMarker
from brook.security.acl import AclOperation

from .. import authz
from ..delayed import DelayedProduce, PendingAcks
from ..registry import RequestContext, handler


async def write_local(
    broker: Any, marker: TxnMarker, partitions: list[tuple[str, int]], timeout_ms: int
) -> dict[tuple[str, int], int]:
    """Write ``marker`` to partitions this broker leads (the coordinator's own, without a
    request to itself): partition -> error, as WriteTxnMarkers would answer."""
    rm = broker.replica_manager
    now = int(time.time() * 1000)
    errors: dict[tuple[str, int], int] = {}
    pending: list[tuple[tuple[str, int], PendingAcks]] = []
    for tp in partitions:
        partition, code = rm.leader_partition(tp[0], tp[1])
        if partition is None:
            errors[tp] = code
            continue
        try:
            result = partition.append_marker(marker, now)
        except KafkaError as exc:
            errors[tp] = exc.code
            continue
        pending.append((tp, PendingAcks(partition, result.last_offset + 1)))
    delayed = DelayedProduce([item for _, item in pending])
    if delayed.waiting:
        await delayed.wait(timeout_ms)
    for tp, item in pending:
        errors[tp] = item.error_code
    _offsets_markers(broker, marker, errors)
    return errors


def _offsets_markers(broker: Any, marker: TxnMarker, errors: dict[tuple[str, int], int]) -> None:
    """Markers written to ``__consumer_offsets`` end the offsets the transaction committed
    there (TxnOffsetCommit): the group coordinator applies or drops them."""
    groups = broker.group_coordinator
    for (topic, index), code in errors.items():
        if topic == OFFSETS_TOPIC and code == Errors.NONE and groups is not None:
            groups.complete_txn(index, marker.producer_id, marker.commit)


@handler(ApiKey.WRITE_TXN_MARKERS, (1, 1))
def handle(ctx: RequestContext, request: Any) -> Any:
    rm = ctx.broker.replica_manager
    allowed = authz.authorize_cluster(ctx, AclOperation.CLUSTER_ACTION)
    now = int(time.time() * 1000)
    markers = []
    pending: list[tuple[dict[str, Any], PendingAcks, Any, TxnMarker, str]] = []
    for m in request.markers:
        marker = TxnMarker(
            int(m.producer_id),
            int(m.producer_epoch),
            bool(m.transaction_result),
            int(m.coordinator_epoch),
        )
        topics = []
        for t in m.topics:
            partitions = []
            for index in t.partition_indexes:
                entry: dict[str, Any] = {"partition_index": index, "error_code": Errors.NONE}
                partitions.append(entry)
                if not allowed:
                    entry["error_code"] = Errors.CLUSTER_AUTHORIZATION_FAILED
                    continue
                partition, code = rm.leader_partition(t.name, index)
                if partition is None:
                    entry["error_code"] = code
                    continue
                try:
                    result = partition.append_marker(marker, now)
                except KafkaError as exc:
                    entry["error_code"] = exc.code
                    continue
                acks = PendingAcks(partition, result.last_offset + 1)
                pending.append((entry, acks, ctx.broker, marker, t.name))
            topics.append({"name": t.name, "partitions": partitions})
        markers.append({"producer_id": marker.producer_id, "topics": topics})
    response = {"markers": markers}
    delayed = DelayedProduce([p[1] for p in pending])
    if not delayed.waiting:
        _settle(pending)
        return response
    return _complete(response, delayed, pending, int(ctx.broker.config["request.timeout.ms"]))


def _settle(pending: list[tuple[dict[str, Any], PendingAcks, Any, TxnMarker, str]]) -> None:
    for entry, item, broker, marker, topic in pending:
        entry["error_code"] = item.error_code
        _offsets_markers(broker, marker, {(topic, entry["partition_index"]): item.error_code})


async def _complete(
    response: dict[str, Any],
    delayed: DelayedProduce,
    pending: list[tuple[dict[str, Any], PendingAcks, Any, TxnMarker, str]],
    timeout_ms: int,
) -> dict[str, Any]:
    await delayed.wait(timeout_ms)
    _settle(pending)
    return response
