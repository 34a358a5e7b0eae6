"""KIP-890 part 1 on the partition leader, as plain logic (Kafka's AddPartitionsToTxnManager
and ReplicaManager's verification path without their I/O): where a transactional id's
coordinator is, the verifications waiting per coordinator node (one AddPartitionsToTxn
request in flight per node carries every transaction waiting for it), what a response means
per partition, and which error the producer finally gets.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from brook.broker.group.store import partition_for
from brook.broker.txn.log_records import TRANSACTION_STATE_TOPIC
from brook.metadata.image import MetadataImage
from brook.protocol.errors import Errors, error_info

TopicPartition = tuple[str, int]
PartitionErrors = dict[TopicPartition, int]

# Produce v11 is the first whose clients understand TRANSACTION_ABORTABLE (KIP-890).
ABORTABLE_PRODUCE_VERSION = 11

# Coordinator answers a client cannot act on, turned into one it retries without a metadata
# refresh (ReplicaManager's postVerificationCallback).
_RETRY_AS_NOT_ENOUGH_REPLICAS = frozenset(
    {
        Errors.CONCURRENT_TRANSACTIONS,
        Errors.NETWORK_EXCEPTION,
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
    }
)


def coordinator_node(image: MetadataImage, transactional_id: str) -> int | None:
    """The leader of the id's ``__transaction_state`` partition (Kafka's hash of the id
    modulo the topic's partitions, from the metadata image); None if there is none (no
    topic yet, so no transaction either, or no leader)."""
    topic = image.topics.get(TRANSACTION_STATE_TOPIC)
    if topic is None or not topic.partitions:
        return None
    info = image.partition(
        TRANSACTION_STATE_TOPIC, partition_for(transactional_id, len(topic.partitions))
    )
    if info is None or info.leader < 0:
        return None
    return info.leader


def response_errors(response: Any) -> dict[str, PartitionErrors] | int:
    """A v4+ AddPartitionsToTxn response: the partitions not verified, per transactional id.
    A top-level error applies to every partition (CLUSTER_AUTHORIZATION_FAILED is not for a
    producer's eyes: INVALID_TXN_STATE); PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH, the
    error producers expect from a produce."""
    top = int(response.error_code)
    if top == Errors.CLUSTER_AUTHORIZATION_FAILED:
        return Errors.INVALID_TXN_STATE
    if top != Errors.NONE:
        return top
    out: dict[str, PartitionErrors] = {}
    for txn in response.results_by_transaction:
        errors: PartitionErrors = {}
        for topic in txn.topic_results:
            for part in topic.results_by_partition:
                code = int(part.partition_error_code)
                if code != Errors.NONE:
                    if code == Errors.PRODUCER_FENCED:
                        code = Errors.INVALID_PRODUCER_EPOCH
                    errors[(topic.name, int(part.partition_index))] = code
        out[txn.transactional_id] = errors
    return out


def produce_error(error: int, produce_version: int) -> tuple[int, str | None]:
    """The error and message a produce gets for a partition its coordinator did not verify."""
    if error == Errors.TRANSACTION_ABORTABLE and produce_version < ABORTABLE_PRODUCE_VERSION:
        error = Errors.INVALID_TXN_STATE
    if error == Errors.INVALID_TXN_STATE:
        return error, "Partition was not added to the transaction"
    if error in _RETRY_AS_NOT_ENOUGH_REPLICAS:
        return Errors.NOT_ENOUGH_REPLICAS, (
            "Unable to verify the partition has been added to the transaction. "
            f"Underlying error: {error_info(error).name}"
        )
    return error, None


@dataclass(slots=True)
class Verification:
    """One transaction's partitions waiting to be verified; ``done`` gets their errors."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    partitions: list[TopicPartition]
    done: Callable[[PartitionErrors], None]

    def fail(self, error: int) -> None:
        self.done(dict.fromkeys(self.partitions, error))


@dataclass
class VerificationQueue:
    """The verifications waiting for each coordinator node, and the nodes with a request in
    flight (at most one per node: what arrives meanwhile goes in the next request)."""

    waiting: dict[int, dict[str, Verification]] = field(default_factory=dict)
    in_flight: set[int] = field(default_factory=set)

    def add(self, node: int, item: Verification) -> bool:
        """Queue ``item``; True if a request to ``node`` should be sent now. One entry per
        transactional id, as Kafka: a newer epoch fails the queued one with
        INVALID_PRODUCER_EPOCH (it is fenced), the same epoch with NETWORK_EXCEPTION (the
        client is retrying; it retries again), an older one is failed at once."""
        queued = self.waiting.setdefault(node, {})
        old = queued.get(item.transactional_id)
        if old is not None:
            if item.producer_epoch < old.producer_epoch:
                item.fail(Errors.INVALID_PRODUCER_EPOCH)
                return False
            old.fail(
                Errors.INVALID_PRODUCER_EPOCH
                if old.producer_epoch < item.producer_epoch
                else Errors.NETWORK_EXCEPTION
            )
        queued[item.transactional_id] = item
        return node not in self.in_flight

    def take(self, node: int) -> list[Verification]:
        """What the next request to ``node`` carries (nothing while one is in flight)."""
        if node in self.in_flight:
            return []
        items = list(self.waiting.pop(node, {}).values())
        if items:
            self.in_flight.add(node)
        return items

    def answered(
        self, node: int, items: list[Verification], errors: dict[str, PartitionErrors] | int
    ) -> bool:
        """The request to ``node`` ended: each item gets its errors (or the one error for
        all); True if more wait for ``node``."""
        self.in_flight.discard(node)
        for item in items:
            if isinstance(errors, int):
                item.fail(errors)
            else:
                got = errors.get(item.transactional_id)
                if got is None:
                    item.fail(Errors.INVALID_TXN_STATE)  # the coordinator skipped it
                else:
                    item.done({tp: e for tp, e in got.items() if tp in item.partitions})
        return bool(self.waiting.get(node))

    def request(self, items: list[Verification]) -> dict[str, Any]:
        """The AddPartitionsToTxn v4+ body for ``items`` (every one verify-only)."""
        transactions = []
        for item in items:
            by_topic: dict[str, list[int]] = {}
            for topic, p in item.partitions:
                by_topic.setdefault(topic, []).append(p)
            transactions.append(
                {
                    "transactional_id": item.transactional_id,
                    "producer_id": item.producer_id,
                    "producer_epoch": item.producer_epoch,
                    "verify_only": True,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                }
            )
        return {"transactions": transactions}
