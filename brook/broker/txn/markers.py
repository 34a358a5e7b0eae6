"""What a transaction coordinator does with the markers of one decided transaction (Kafka's
TransactionMarkerChannelManager and TransactionMarkerRequestCompletionHandler), as plain
logic: which broker gets which partitions, and the reaction to each partition's answer.

Partitions are grouped by their leader (those without a known leader wait for the next round);
a partition that answered NONE is done; retriable errors send it again to its leader of that
time; INVALID_PRODUCER_EPOCH or TRANSACTION_COORDINATOR_FENCED cancel the whole send (a newer
producer epoch or coordinator owns the transaction now: its own markers supersede these);
UNSUPPORTED_FOR_MESSAGE_FORMAT / UNSUPPORTED_VERSION drop the partition (no producer could
have written to it); anything else is a bug Kafka treats as fatal. When no partition is left
the coordinator writes the Complete state.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from brook.protocol.errors import Errors, error_info

from .state import TopicPartition, TxnMetadata, TxnResult, TxnState

RETRIABLE = frozenset(
    {
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Errors.REQUEST_TIMED_OUT,
        Errors.KAFKA_STORAGE_ERROR,
    }
)
CANCELLING = frozenset({Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED})
DROPPING = frozenset({Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, Errors.UNSUPPORTED_VERSION})


class MarkerError(RuntimeError):
    """An answer Kafka's coordinator treats as fatal (CORRUPT_MESSAGE, MESSAGE_TOO_LARGE, ...):
    the markers it builds can never get it."""


class Progress(enum.Enum):
    PENDING = "pending"  # partitions are left: send again
    DONE = "done"  # every partition has its marker: write the Complete state
    CANCELLED = "cancelled"  # fenced: stop, write nothing


@dataclass(eq=False)
class PendingMarkers:
    """The markers of one transaction still to be written."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    result: TxnResult
    coordinator_epoch: int
    remaining: set[TopicPartition] = field(default_factory=set)
    cancelled: bool = False

    @property
    def progress(self) -> Progress:
        if self.cancelled:
            return Progress.CANCELLED
        return Progress.DONE if not self.remaining else Progress.PENDING

    def by_leader(
        self, leader_of: Callable[[TopicPartition], int | None]
    ) -> tuple[dict[int, list[TopicPartition]], list[TopicPartition]]:
        """The remaining partitions grouped by leader, and those with no leader known now."""
        routes: dict[int, list[TopicPartition]] = {}
        unknown: list[TopicPartition] = []
        for tp in sorted(self.remaining):
            leader = leader_of(tp)
            if leader is None or leader < 0:
                unknown.append(tp)
            else:
                routes.setdefault(leader, []).append(tp)
        return routes, unknown

    def on_response(self, errors: Mapping[TopicPartition, int]) -> Progress:
        """Apply one WriteTxnMarkers answer (partition -> error code)."""
        for tp, code in errors.items():
            if tp not in self.remaining:
                continue
            if code == Errors.NONE or code in DROPPING:
                self.remaining.discard(tp)
            elif code in CANCELLING:
                self.cancelled = True
            elif code not in RETRIABLE:
                raise MarkerError(
                    f"{error_info(code).name} writing the {self.result.name} marker of "
                    f"{self.transactional_id!r} to {tp[0]}-{tp[1]}"
                )
        return self.progress


def markers_for(meta: TxnMetadata, coordinator_epoch: int) -> PendingMarkers:
    """The markers a PrepareCommit / PrepareAbort state (written) calls for: one per partition
    of the transaction, under the producer epoch it was decided with."""
    if meta.state == TxnState.PREPARE_COMMIT:
        result = TxnResult.COMMIT
    elif meta.state == TxnState.PREPARE_ABORT:
        result = TxnResult.ABORT
    else:
        raise ValueError(f"no markers for a transaction in state {meta.state.name}")
    return PendingMarkers(
        meta.transactional_id,
        meta.producer_id,
        meta.producer_epoch,
        result,
        coordinator_epoch,
        set(meta.partitions),
    )
