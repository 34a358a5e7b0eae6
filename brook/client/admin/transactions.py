"""The admin client's transaction operations (KIP-664), as Java's ``Admin`` has them:

- ``list_transactions``: ListTransactions to every broker (each lists the transactional ids
  it coordinates), with Kafka's state, producer id and duration (v1, KIP-994) filters;
  answers by broker id, as ``ListTransactionsResult.allByBrokerId``.
- ``describe_transactions``: FindCoordinator (key type 1) for each id, then
  DescribeTransactions to its coordinator.
- ``describe_producers``: DescribeProducers to each partition's leader, or to one broker
  when asked (to see a follower's state).
- ``abort_transaction``: an ABORT marker written with WriteTxnMarkers to the partition's
  leader under the producer id / epoch and coordinator epoch given: how an operator ends a
  *hanging* transaction, one whose coordinator will never send its marker. The broker needs
  CLUSTER_ACTION for it, as Kafka's does.

Retries follow Java's handlers: a coordinator loading or moving, a leader moving. An unknown
topic or partition fails at once (Java retries it until the call's timeout), as Brook's
``list_offsets`` does, so a mistyped name is reported rather than waited on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from brook.protocol.api import ApiKey, request_class
from brook.protocol.build import build
from brook.protocol.describe_transactions_codec import (
    MAX_VERSION,
    DescribedTransaction,
    read_describe_transactions_response,
)
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.framing import encode_kio

from ..cluster import BrokerNode, TopicPartition
from ..connection import ProtocolError
from ..list_offsets import describe_partition, group_by_leader
from .core import AdminCore, Outcome

__all__ = [
    "TRANSACTION_STATES",
    "AbortTransactionSpec",
    "ProducerState",
    "TransactionDescription",
    "TransactionListing",
    "abort_transaction",
    "describe_producers",
    "describe_transactions",
    "list_transactions",
]

TRANSACTION_KEY_TYPE = 1
BROKER_NOT_AVAILABLE = 8  # Kafka's code; not among brook.protocol.errors.Errors' names

# Kafka's TransactionState names (what ListTransactions filters on and answers).
TRANSACTION_STATES = (
    "Empty",
    "Ongoing",
    "PrepareCommit",
    "PrepareAbort",
    "CompleteCommit",
    "CompleteAbort",
    "Dead",
    "PrepareEpochFence",
)


@dataclass(frozen=True, slots=True)
class TransactionListing:
    """One transactional id as ListTransactions lists it."""

    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True, slots=True)
class TransactionDescription:
    """A transactional id's state at its coordinator (Java's TransactionDescription)."""

    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None  # None when no transaction is under way
    topic_partitions: frozenset[TopicPartition]


@dataclass(frozen=True, slots=True)
class ProducerState:
    """A producer a partition replica knows (Java's ProducerState); None for what the broker
    reports as -1 (no marker seen yet, no transaction open)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    current_transaction_start_offset: int | None


@dataclass(frozen=True, slots=True)
class AbortTransactionSpec:
    """What ``abort_transaction`` writes: an ABORT marker of this producer id and epoch to one
    partition, under this coordinator epoch (Java's AbortTransactionSpec)."""

    topic_partition: TopicPartition
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        tp = self.topic_partition
        return (
            f"AbortTransactionSpec(topicPartition={tp.topic}-{tp.partition}, "
            f"producerId={self.producer_id}, producerEpoch={self.producer_epoch}, "
            f"coordinatorEpoch={self.coordinator_epoch})"
        )


# ---------------------------------------------------------------------------------------------
# ListTransactions
# ---------------------------------------------------------------------------------------------


def _retry_listing(exc: KafkaError) -> bool:
    # Java retries a coordinator still loading; anything else from a broker is final.
    return exc.code == Errors.COORDINATOR_LOAD_IN_PROGRESS or (
        exc.retriable and exc.code != Errors.COORDINATOR_NOT_AVAILABLE
    )


async def list_transactions(
    core: AdminCore,
    *,
    states: Iterable[str] = (),
    producer_ids: Iterable[int] = (),
    duration_ms: int | None = None,
    timeout_ms: int | None = None,
) -> dict[int, list[TransactionListing]]:
    """The transactional ids every broker coordinates, by broker id; only those in ``states``
    (Kafka's names), of ``producer_ids``, or (``duration_ms`` >= 0, ListTransactions v1) whose
    transaction has run longer than that, when given."""
    wanted_states = list(states)
    unknown = [s for s in wanted_states if s not in TRANSACTION_STATES]
    if unknown:
        raise KafkaError(
            Errors.INVALID_REQUEST,
            f"unknown transaction state(s) {', '.join(unknown)}: "
            f"expected one of {', '.join(TRANSACTION_STATES)}",
        )
    body: dict[str, Any] = {
        "state_filters": wanted_states,
        "producer_id_filters": [int(p) for p in producer_ids],
        "duration_filter": -1 if duration_ms is None else int(duration_ms),
    }
    # Filtering by duration needs v1; a v0 broker would silently list everything.
    client_min = 1 if duration_ms is not None and duration_ms >= 0 else None
    deadline = core.deadline(timeout_ms)

    async def attempt(pending: dict[int, int], deadline: float) -> Outcome:
        out: Outcome = {}
        for node_id in pending:
            try:
                resp = await core.send_to(
                    node_id,
                    ApiKey.LIST_TRANSACTIONS,
                    body,
                    client_min=client_min,
                    timeout_ms=core.op_timeout(deadline),
                )
            except KafkaError as exc:
                out[node_id] = exc
                continue
            code = int(resp.error_code)
            if code:
                out[node_id] = KafkaError(code, f"ListTransactions sent to broker {node_id}")
                continue
            out[node_id] = [
                TransactionListing(s.transactional_id, int(s.producer_id), str(s.transaction_state))
                for s in resp.transaction_states
            ]
        return out

    await core.start()
    nodes = {n: n for n in sorted(core.network.cluster.brokers)}
    return dict(sorted((await core.per_item(nodes, attempt, deadline, _retry_listing)).items()))


# ---------------------------------------------------------------------------------------------
# DescribeTransactions
# ---------------------------------------------------------------------------------------------


def _retry_describe(exc: KafkaError) -> bool:
    return exc.code in (
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.NOT_COORDINATOR,
        Errors.COORDINATOR_NOT_AVAILABLE,
    ) or (exc.retriable and exc.code != Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)


async def find_transaction_coordinator(
    core: AdminCore, transactional_id: str, deadline: float
) -> BrokerNode:
    """FindCoordinator with key type 1: the broker coordinating ``transactional_id``."""
    body = {
        "key": transactional_id,
        "key_type": TRANSACTION_KEY_TYPE,
        "coordinator_keys": [transactional_id],
    }
    conn = await core.network.any_connection()
    version = conn.version_for(ApiKey.FIND_COORDINATOR, client_min=1)
    resp = await conn.send(
        ApiKey.FIND_COORDINATOR, body, version=version, timeout_ms=core.op_timeout(deadline)
    )
    answer = resp.coordinators[0] if version >= 4 else resp
    code = int(answer.error_code)
    if code:
        message = getattr(answer, "error_message", None) or ""
        raise KafkaError(
            code,
            f"FindCoordinator for transactional id `{transactional_id}` {message}".strip(),
        )
    return BrokerNode(int(answer.node_id), str(answer.host), int(answer.port))


def _description_error(tid: str, code: int) -> KafkaError:
    """Java's messages for the errors it names."""
    if code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
        why = "failed due to authorization failure"
    elif code == Errors.TRANSACTIONAL_ID_NOT_FOUND:
        why = "failed because the ID could not be found"
    elif code == Errors.INVALID_REQUEST and not tid:
        why = "failed: a transactional id cannot be empty"
    else:
        why = "failed due to unexpected error"
    return KafkaError(code, f"DescribeTransactions request for transactionalId `{tid}` {why}")


def _description(node_id: int, state: DescribedTransaction) -> TransactionDescription:
    start = state.transaction_start_time_ms
    return TransactionDescription(
        coordinator_id=node_id,
        state=state.transaction_state,
        producer_id=state.producer_id,
        producer_epoch=state.producer_epoch,
        transaction_timeout_ms=state.transaction_timeout_ms,
        transaction_start_time_ms=None if start < 0 else start,
        topic_partitions=frozenset(
            TopicPartition(topic, p) for topic, partitions in state.topics for p in partitions
        ),
    )


async def _describe_on(
    core: AdminCore, node_id: int, tids: list[str], timeout_ms: int
) -> list[DescribedTransaction]:
    """One DescribeTransactions request, its response read by hand (see
    describe_transactions_codec: kio cannot read the -1 start time of an idle id)."""
    conn = await core.network.connection(node_id)
    version = conn.version_for(ApiKey.DESCRIBE_TRANSACTIONS, client_max=MAX_VERSION)
    cls = request_class(ApiKey.DESCRIBE_TRANSACTIONS, version)
    body = encode_kio(build(cls, {"transactional_ids": tids}))
    raw = await conn.send_raw(ApiKey.DESCRIBE_TRANSACTIONS, version, body, timeout_ms=timeout_ms)
    try:
        return read_describe_transactions_response(raw)[1]
    except ValueError as exc:
        raise ProtocolError(
            f"cannot decode DescribeTransactions v{version} response from broker {node_id}: {exc}",
        ) from None


async def describe_transactions(
    core: AdminCore, transactional_ids: Iterable[str], *, timeout_ms: int | None = None
) -> dict[str, TransactionDescription]:
    """Each transactional id's state, producer, timeout, start and partitions, asked of its
    coordinator; AdminError names the ids that failed (TRANSACTIONAL_ID_NOT_FOUND for one the
    cluster does not know)."""
    deadline = core.deadline(timeout_ms)

    async def attempt(pending: dict[str, str], deadline: float) -> Outcome:
        out: Outcome = {}
        by_node: dict[int, list[str]] = {}
        for tid in pending:
            try:
                node = await find_transaction_coordinator(core, tid, deadline)
            except KafkaError as exc:
                out[tid] = exc
                continue
            by_node.setdefault(node.node_id, []).append(tid)
        for node_id, tids in by_node.items():
            try:
                states = await _describe_on(core, node_id, tids, core.op_timeout(deadline))
            except KafkaError as exc:
                out.update(dict.fromkeys(tids, exc))
                continue
            for state in states:
                tid = state.transactional_id
                if tid not in pending:
                    continue  # not asked for (Java ignores it too)
                code = state.error_code
                out[tid] = _description_error(tid, code) if code else _description(node_id, state)
            for tid in tids:
                out.setdefault(
                    tid,
                    KafkaError(
                        Errors.UNKNOWN_SERVER_ERROR,
                        f"transactional id `{tid}` missing from the DescribeTransactions response",
                    ),
                )
        return out

    await core.start()
    wanted = {tid: tid for tid in dict.fromkeys(transactional_ids)}
    return await core.per_item(wanted, attempt, deadline, _retry_describe)


# ---------------------------------------------------------------------------------------------
# DescribeProducers
# ---------------------------------------------------------------------------------------------

_LEADER_MOVED = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.REPLICA_NOT_AVAILABLE,
        BROKER_NOT_AVAILABLE,
    }
)


def _producer(p: Any) -> ProducerState:
    coordinator_epoch = int(p.coordinator_epoch)
    start = int(p.current_txn_start_offset)
    return ProducerState(
        producer_id=int(p.producer_id),
        producer_epoch=int(p.producer_epoch),
        last_sequence=int(p.last_sequence),
        last_timestamp=int(p.last_timestamp),
        coordinator_epoch=None if coordinator_epoch < 0 else coordinator_epoch,
        current_transaction_start_offset=None if start < 0 else start,
    )


def _producers_error(tp: TopicPartition, code: int, broker_id: int | None) -> KafkaError:
    """Java's messages: the partition, and for a refused topic the topic named."""
    text = f"{tp.topic}-{tp.partition}"
    if code == Errors.TOPIC_AUTHORIZATION_FAILED:
        why = f"due to authorization failure on topic `{tp.topic}`"
    elif code == Errors.NOT_LEADER_OR_FOLLOWER and broker_id is not None:
        why = f"on brokerId {broker_id}"
    elif code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
        why = "because the topic or partition does not exist"
    else:
        why = "due to unexpected error"
    return KafkaError(code, f"Failed to describe active producers for partition {text} {why}")


async def describe_producers(
    core: AdminCore,
    partitions: Iterable[tuple[str, int]],
    *,
    broker_id: int | None = None,
    timeout_ms: int | None = None,
) -> dict[TopicPartition, list[ProducerState]]:
    """The producers each partition's leader knows (or broker ``broker_id``, whose replica
    then answers for itself: NOT_LEADER_OR_FOLLOWER from it is final, as in Java)."""
    wanted = {TopicPartition(*tp): TopicPartition(*tp) for tp in partitions}
    deadline = core.deadline(timeout_ms)

    def retry(exc: KafkaError) -> bool:
        if exc.code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
            return False
        if exc.code in _LEADER_MOVED:
            return broker_id is None or exc.code != Errors.NOT_LEADER_OR_FOLLOWER
        return exc.retriable

    async def ask(node_id: int, tps: list[TopicPartition]) -> Outcome:
        by_topic: dict[str, list[int]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        body = {"topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]}
        resp = await core.send_to(
            node_id, ApiKey.DESCRIBE_PRODUCERS, body, timeout_ms=core.op_timeout(deadline)
        )
        out: Outcome = {}
        for t in resp.topics:
            for p in t.partitions:
                tp = TopicPartition(t.name, int(p.partition_index))
                code = int(p.error_code)
                if code:
                    out[tp] = _producers_error(tp, code, broker_id)
                else:
                    out[tp] = [_producer(a) for a in p.active_producers]
        for tp in tps:
            out.setdefault(
                tp,
                KafkaError(
                    Errors.UNKNOWN_SERVER_ERROR,
                    f"{describe_partition(tp)} missing from the DescribeProducers response",
                ),
            )
        return out

    async def attempt(pending: dict[TopicPartition, Any], deadline: float) -> Outcome:
        topics = sorted({tp.topic for tp in pending})
        await core.network.fetch_metadata(topics, allow_auto_topic_creation=False)
        by_node, out = _route(core, pending, broker_id)
        answers = await asyncio.gather(
            *(ask(node, tps) for node, tps in by_node.items()), return_exceptions=True
        )
        for tps, answer in zip(by_node.values(), answers, strict=True):
            if isinstance(answer, KafkaError):
                out.update(dict.fromkeys(tps, answer))
            elif isinstance(answer, BaseException):
                raise answer
            else:
                out.update(answer)
        return out

    await core.start()
    return await core.per_item(wanted, attempt, deadline, retry)


def _route(
    core: AdminCore, tps: Iterable[TopicPartition], broker_id: int | None
) -> tuple[dict[int, list[TopicPartition]], Outcome]:
    """Partitions by the broker to ask (their leader, or ``broker_id``) and those that cannot
    be asked: an unknown topic or partition, no leader."""
    by_leader, errors = group_by_leader(core.network.cluster, tps)
    out: Outcome = {
        tp: exc
        if exc.code == Errors.LEADER_NOT_AVAILABLE
        else _producers_error(tp, exc.code, broker_id)
        for tp, exc in errors.items()
    }
    if broker_id is None:
        return by_leader, out
    routed = [tp for tps_ in by_leader.values() for tp in tps_]
    routed += [tp for tp, exc in errors.items() if exc.code == Errors.LEADER_NOT_AVAILABLE]
    for tp in routed:
        out.pop(tp, None)
    return ({broker_id: routed} if routed else {}), out


# ---------------------------------------------------------------------------------------------
# Abort (WriteTxnMarkers)
# ---------------------------------------------------------------------------------------------


def _abort_error(spec: AbortTransactionSpec, code: int) -> KafkaError:
    if code == Errors.CLUSTER_AUTHORIZATION_FAILED:
        why = "failed due to cluster authorization error"
    elif code == Errors.INVALID_PRODUCER_EPOCH:
        why = "failed due an invalid producer epoch"
    elif code == Errors.TRANSACTION_COORDINATOR_FENCED:
        why = (
            f"failed since the provided coordinator epoch {spec.coordinator_epoch} has been "
            "fenced by the active coordinator"
        )
    elif code == Errors.UNKNOWN_TOPIC_OR_PARTITION:
        tp = spec.topic_partition
        why = f"failed: partition {tp.topic}-{tp.partition} does not exist"
    elif code == Errors.TOPIC_AUTHORIZATION_FAILED:
        why = f"failed due to authorization failure on topic `{spec.topic_partition.topic}`"
    else:
        why = "failed due to unexpected error"
    return KafkaError(code, f"WriteTxnMarkers request with {spec} {why}")


async def abort_transaction(
    core: AdminCore, spec: AbortTransactionSpec, *, timeout_ms: int | None = None
) -> None:
    """Write an ABORT marker for ``spec``'s producer to its partition's leader: the open
    transaction of that producer there ends, and the partition's last stable offset moves on.
    Kafka's errors: INVALID_PRODUCER_EPOCH for an epoch older than the producer's,
    TRANSACTION_COORDINATOR_FENCED for a coordinator epoch older than the last marker's,
    CLUSTER_AUTHORIZATION_FAILED without CLUSTER_ACTION."""
    tp = spec.topic_partition
    body = {
        "markers": [
            {
                "producer_id": spec.producer_id,
                "producer_epoch": spec.producer_epoch,
                "transaction_result": False,
                "topics": [{"name": tp.topic, "partition_indexes": [tp.partition]}],
                "coordinator_epoch": spec.coordinator_epoch,
            }
        ]
    }
    deadline = core.deadline(timeout_ms)

    def retry(exc: KafkaError) -> bool:
        return exc.code in _LEADER_MOVED or (
            exc.retriable and exc.code != Errors.UNKNOWN_TOPIC_OR_PARTITION
        )

    async def attempt(pending: dict[TopicPartition, Any], deadline: float) -> Outcome:
        await core.network.fetch_metadata([tp.topic], allow_auto_topic_creation=False)
        by_leader, errors = group_by_leader(core.network.cluster, [tp])
        if tp in errors:
            return {tp: _abort_error(spec, errors[tp].code)}
        (leader,) = by_leader
        try:
            resp = await core.send_to(
                leader, ApiKey.WRITE_TXN_MARKERS, body, timeout_ms=core.op_timeout(deadline)
            )
        except KafkaError as exc:
            return {tp: exc}
        return {tp: _marker_result(spec, resp)}

    await core.start()
    await core.per_item({tp: spec}, attempt, deadline, retry)


def _marker_result(spec: AbortTransactionSpec, resp: Any) -> KafkaError | None:
    """The one partition's answer, checked as Java checks the response's shape."""
    tp = spec.topic_partition
    markers = list(resp.markers)
    if len(markers) != 1 or int(markers[0].producer_id) != spec.producer_id:
        return KafkaError(
            Errors.UNKNOWN_SERVER_ERROR,
            f"WriteTxnMarkers response included unexpected marker entries (expected exactly "
            f"one with producerId {spec.producer_id})",
        )
    topics = list(markers[0].topics)
    partitions = list(topics[0].partitions) if len(topics) == 1 else []
    if (
        len(topics) != 1
        or topics[0].name != tp.topic
        or len(partitions) != 1
        or int(partitions[0].partition_index) != tp.partition
    ):
        return KafkaError(
            Errors.UNKNOWN_SERVER_ERROR,
            f"WriteTxnMarkers response included unexpected entries (expected exactly one for "
            f"partition {tp.topic}-{tp.partition})",
        )
    code = int(partitions[0].error_code)
    return _abort_error(spec, code) if code else None
