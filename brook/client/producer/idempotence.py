"""The idempotent producer's state: producer id and epoch, per-partition sequence numbers, and
the recovery rules of Java's TransactionManager for a non-transactional producer. No I/O.

Recovery never leaves the producer stuck: a sequence gap (OUT_OF_ORDER_SEQUENCE_NUMBER after
the batch that was next in line), lost producer state (UNKNOWN_PRODUCER_ID), a batch failed or
expired after it may have reached the broker - each asks for an epoch bump, which the client
makes itself (KIP-360: an idempotent producer bumps its own epoch; the broker accepts a higher
epoch starting at sequence 0). Batches already in flight for that partition are re-sequenced
from 0 under the new epoch; other partitions move to it once their in-flight batches are done.
When the epoch would overflow, a new producer id is fetched with InitProducerId.

A transactional producer (``txn`` set) differs as Java's does: its id and epoch come from its
:class:`~.transactions.TransactionManager` (init_transactions, and the epoch bump an abort
makes), batches are marked transactional and leave only once their partition is in the
transaction, and a failed batch, including one the idempotent producer would recover from
by bumping its own epoch, makes the transaction abortable instead.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from brook.protocol.batch import NO_SEQUENCE
from brook.protocol.errors import Errors, KafkaError, error_info

from .batch import ProducerBatch

if TYPE_CHECKING:
    from .transactions import TransactionManager

__all__ = ["IdempotenceManager", "ProducerIdAndEpoch", "State"]

log = logging.getLogger(__name__)

NO_PRODUCER_ID = -1
NO_EPOCH = -1
MAX_EPOCH = 32767
NO_LAST_ACKED = -1


@dataclass(frozen=True, slots=True)
class ProducerIdAndEpoch:
    producer_id: int = NO_PRODUCER_ID
    epoch: int = NO_EPOCH

    @property
    def valid(self) -> bool:
        return self.producer_id >= 0


NONE = ProducerIdAndEpoch()


class State(enum.Enum):
    UNINITIALIZED = "uninitialized"
    INITIALIZING = "initializing"
    READY = "ready"
    FATAL_ERROR = "fatal"


@dataclass
class _Partition:
    producer_id_and_epoch: ProducerIdAndEpoch
    next_sequence: int = 0
    last_acked_sequence: int = NO_LAST_ACKED
    last_acked_offset: int = -1
    in_flight: list[ProducerBatch] = field(default_factory=list)  # by base sequence

    def add(self, batch: ProducerBatch) -> None:
        seqs = self.in_flight
        i = len(seqs)
        while i > 0 and seqs[i - 1].base_sequence > batch.base_sequence:
            i -= 1
        seqs.insert(i, batch)

    def start_at_beginning(self, pid: ProducerIdAndEpoch) -> None:
        sequence = 0
        for batch in self.in_flight:
            batch.reset_producer_state(pid.producer_id, pid.epoch, sequence)
            sequence += batch.count
        self.producer_id_and_epoch = pid
        self.next_sequence = sequence
        self.last_acked_sequence = NO_LAST_ACKED


def increment_sequence(sequence: int, increment: int) -> int:
    """Sequences wrap from Integer.MAX_VALUE to 0, as DefaultRecordBatch.incrementSequence."""
    if sequence > 0x7FFFFFFF - increment:
        return increment - (0x7FFFFFFF - sequence) - 1
    return sequence + increment


class IdempotenceManager:
    """State machine; the sender feeds it responses and asks it what may be drained."""

    def __init__(self, txn: TransactionManager | None = None) -> None:
        self.txn = txn
        self.state = State.UNINITIALIZED
        self.producer_id_and_epoch = NONE
        self.fatal_error: KafkaError | None = None
        self.epoch_bump_required = False
        self._partitions: dict[tuple[str, int], _Partition] = {}
        self._unresolved: dict[tuple[str, int], int] = {}
        self._to_rewrite: set[tuple[str, int]] = set()

    # -- producer id -----------------------------------------------------------------------

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id_and_epoch.valid

    @property
    def has_fatal_error(self) -> bool:
        return self.state is State.FATAL_ERROR

    def needs_producer_id(self) -> bool:
        """True when an InitProducerId request must be sent now (then call :meth:`initializing`).
        Never for a transactional producer: init_transactions() asks for its id."""
        return self.txn is None and self.state is State.UNINITIALIZED and not self.has_producer_id

    def reset_producer_id(self, producer_id: int, epoch: int) -> None:
        """The transaction manager got an id or a new epoch: every partition starts over at
        sequence 0 (no batch is in flight then: EndTxn and the bump wait for all of them)."""
        self._partitions.clear()
        self._unresolved.clear()
        self._to_rewrite.clear()
        self.epoch_bump_required = False
        self.set_producer_id(producer_id, epoch)

    def send_allowed(self, tp: tuple[str, int]) -> bool:
        """Whether a batch of ``tp`` may be drained (its partition is in the transaction)."""
        txn = self.txn
        return txn is None or txn.is_send_allowed(tp)

    def initializing(self) -> None:
        self.state = State.INITIALIZING

    def set_producer_id(self, producer_id: int, epoch: int) -> None:
        """InitProducerId answered. Each partition starts over at sequence 0 under the new id
        once the batches it still has in flight under an old one are done (see :meth:`stamp`)."""
        self.producer_id_and_epoch = ProducerIdAndEpoch(producer_id, epoch)
        self.state = State.READY
        log.info("producer id %d, epoch %d", producer_id, epoch)

    def init_failed(self, error: KafkaError) -> None:
        """InitProducerId failed: a retriable error is tried again, anything else is fatal."""
        if error.retriable:
            self.state = State.UNINITIALIZED
        else:
            self.transition_to_fatal(error)

    def transition_to_fatal(self, error: KafkaError) -> None:
        log.error("idempotent producer failed for good: %s", error)
        self.fatal_error = error
        self.state = State.FATAL_ERROR
        if self.txn is not None:
            self.txn.fatal(error)

    def bump_epoch_and_reset_id_if_needed(self) -> None:
        """Sender, once per loop: make a requested epoch bump (locally, as Java does); a
        transactional producer's is made by its next abort."""
        if self.epoch_bump_required and self.txn is None:
            self._bump_epoch()

    def _bump_epoch(self) -> None:
        current = self.producer_id_and_epoch
        if current.epoch >= MAX_EPOCH or not current.valid:
            self.producer_id_and_epoch = NONE
            self.state = State.UNINITIALIZED
        else:
            self.producer_id_and_epoch = ProducerIdAndEpoch(current.producer_id, current.epoch + 1)
            log.info("bumped producer epoch to %d", current.epoch + 1)
        for tp in self._to_rewrite:
            entry = self._partitions.get(tp)
            if entry is not None:
                entry.start_at_beginning(self.producer_id_and_epoch)
            self._unresolved.pop(tp, None)
        self._to_rewrite.clear()
        self.epoch_bump_required = False

    def request_epoch_bump(self, tp: tuple[str, int]) -> None:
        self.epoch_bump_required = True
        self._to_rewrite.add(tp)

    # -- per-partition sequences -----------------------------------------------------------

    def _entry(self, tp: tuple[str, int]) -> _Partition:
        entry = self._partitions.get(tp)
        if entry is None:
            entry = self._partitions[tp] = _Partition(self.producer_id_and_epoch)
        return entry

    def sequence_number(self, tp: tuple[str, int]) -> int:
        return self._entry(tp).next_sequence

    def last_acked_sequence(self, tp: tuple[str, int]) -> int:
        entry = self._partitions.get(tp)
        return NO_LAST_ACKED if entry is None else entry.last_acked_sequence

    def has_in_flight(self, tp: tuple[str, int]) -> bool:
        entry = self._partitions.get(tp)
        return entry is not None and bool(entry.in_flight)

    def first_in_flight_sequence(self, tp: tuple[str, int]) -> int:
        entry = self._partitions.get(tp)
        if entry is None or not entry.in_flight:
            return NO_SEQUENCE
        return entry.in_flight[0].base_sequence

    def has_stale_producer_id_and_epoch(self, tp: tuple[str, int]) -> bool:
        return self._entry(tp).producer_id_and_epoch != self.producer_id_and_epoch

    def has_unresolved_sequence(self, tp: tuple[str, int]) -> bool:
        return tp in self._unresolved

    def should_stop_drain(self, batch: ProducerBatch) -> bool:
        """Java's shouldStopDrainBatchesForPartition: hold back the partition's head batch."""
        if self.state is State.FATAL_ERROR or not self.has_producer_id:
            return True
        tp = batch.tp
        if not batch.has_sequence:
            if self.has_in_flight(tp) and self.has_stale_producer_id_and_epoch(tp):
                # A new-epoch batch at sequence 0 must not overtake old-epoch ones in flight.
                return True
            if self.has_unresolved_sequence(tp):
                return True
        first = self.first_in_flight_sequence(tp)
        # A retried batch goes only when it is the first in line: one in flight until then.
        return first != NO_SEQUENCE and batch.has_sequence and batch.base_sequence != first

    def stamp(self, batch: ProducerBatch) -> None:
        """At drain: give a fresh batch the next sequence; track it as in flight."""
        tp = batch.tp
        if not batch.has_sequence:
            if self.has_stale_producer_id_and_epoch(tp) and not self.has_in_flight(tp):
                self._entry(tp).start_at_beginning(self.producer_id_and_epoch)
            pid = self.producer_id_and_epoch
            entry = self._entry(tp)
            batch.set_producer_state(pid.producer_id, pid.epoch, entry.next_sequence)
            batch.transactional = self.txn is not None
            entry.next_sequence = increment_sequence(entry.next_sequence, batch.count)
            entry.add(batch)
        elif batch not in self._entry(tp).in_flight:
            self._entry(tp).add(batch)

    def remove_in_flight(self, batch: ProducerBatch) -> None:
        entry = self._partitions.get(batch.tp)
        if entry is not None and batch in entry.in_flight:
            entry.in_flight.remove(batch)

    # -- responses -------------------------------------------------------------------------

    def handle_completed(self, batch: ProducerBatch, base_offset: int) -> None:
        entry = self._entry(batch.tp)
        if batch.has_sequence and batch.last_sequence > entry.last_acked_sequence:
            entry.last_acked_sequence = batch.last_sequence
        if base_offset >= 0:
            entry.last_acked_offset = max(entry.last_acked_offset, base_offset + batch.count - 1)
        self.remove_in_flight(batch)

    def handle_failed(self, batch: ProducerBatch, error: BaseException, adjust: bool) -> None:
        """A batch failed for good (``adjust``: the broker surely did not take it)."""
        if isinstance(error, KafkaError) and error.code in (
            Errors.CLUSTER_AUTHORIZATION_FAILED,
            Errors.UNSUPPORTED_VERSION,
            Errors.PRODUCER_FENCED,
        ):
            self.transition_to_fatal(error)
        self.remove_in_flight(batch)
        if self.has_fatal_error:
            return
        code = error.code if isinstance(error, KafkaError) else None
        if self.txn is not None:
            # As Java's maybeTransitionToErrorState: a batch that got a sequence leaves a gap
            # (or the broker no longer knows the producer), so the abort bumps the epoch.
            self.txn.on_batch_failed(error, batch.has_sequence)
            return
        if code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER:
            self.request_epoch_bump(batch.tp)
        elif code == Errors.UNKNOWN_PRODUCER_ID:
            self._partitions.pop(batch.tp, None)
            self._unresolved.pop(batch.tp, None)
        elif adjust:
            # Later batches of this partition would leave a gap: start over under a new epoch.
            self.request_epoch_bump(batch.tp)

    def can_retry(self, code: int, log_start_offset: int, batch: ProducerBatch) -> bool:
        """Whether a failed batch is retried (``KafkaError.retriable`` otherwise decides)."""
        tp = batch.tp
        if code == Errors.UNKNOWN_PRODUCER_ID:
            if log_start_offset == -1 or batch.sequence_reset:
                return True
            # Retention removed the producer's batches, or the broker lost its state: either
            # way a new epoch starts this partition over (a transaction's abort makes it).
            if self.txn is not None:
                return False
            self.request_epoch_bump(tp)
            return True
        if code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER:
            if not self.has_unresolved_sequence(tp) and (
                batch.sequence_reset or not self._is_next_sequence(tp, batch.base_sequence)
            ):
                # Not the batch right after the last acknowledged one: an earlier batch is
                # still being retried; this one follows it.
                return True
            if self.txn is not None:
                return False
            unresolved = self._unresolved.get(tp)
            if unresolved is None or unresolved == batch.base_sequence:
                self.request_epoch_bump(tp)
            return True
        return error_info(code).retriable

    def _is_next_sequence(self, tp: tuple[str, int], sequence: int) -> bool:
        return sequence - self.last_acked_sequence(tp) == 1

    def mark_sequence_unresolved(self, batch: ProducerBatch) -> None:
        """An expired batch that was sent: until in-flight ones settle, its fate is unknown."""
        next_seq = batch.last_sequence + 1
        self._unresolved[batch.tp] = max(self._unresolved.get(batch.tp, next_seq), next_seq)

    def maybe_resolve_sequences(self) -> None:
        for tp in list(self._unresolved):
            if self.has_in_flight(tp):
                continue
            if not self._is_next_sequence(tp, self.sequence_number(tp)):
                # Everything in flight expired: the broker may or may not have some of it.
                if self.txn is not None:
                    self.txn.on_batch_failed(
                        KafkaError(Errors.REQUEST_TIMED_OUT, f"batches for {tp} expired"), True
                    )
                else:
                    self.request_epoch_bump(tp)
            del self._unresolved[tp]
