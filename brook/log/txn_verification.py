"""KIP-890 part 1 on a partition: the verification state of producers about to open a
transaction here (Kafka's VerificationGuard and VerificationStateEntry).

A leader that gets the first transactional batch of a producer with no transaction open here
asks the transaction coordinator whether this partition is part of the producer's ongoing
transaction before writing it. Between the question and the append a marker may end the
transaction (and a new one begin without this partition): the answer would then be stale (the
ABA problem Kafka's guard solves). So the question starts with a fresh *guard* held per
producer; any transactional batch or marker written for the producer drops it, and the append
only goes through when it carries the guard still held. A late batch of an aborted
transaction therefore cannot open a transaction nobody will ever end (a hanging transaction).

The entry also keeps the lowest sequence seen while verifying, so that a later batch of the
same epoch is not written ahead of a lower one still being verified (Kafka's
OUT_OF_ORDER_SEQUENCE_NUMBER for it); entries never used are expired with the producers.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from brook.protocol.errors import Errors, KafkaError

_ids = itertools.count(1)


@dataclass(frozen=True, slots=True, eq=False)
class VerificationGuard:
    """A unique token: two guards are the same only if they are the same object."""

    value: int = field(default_factory=lambda: next(_ids))


@dataclass(slots=True)
class VerificationEntry:
    """One producer's verification in progress on this partition."""

    timestamp_ms: int
    lowest_sequence: int
    epoch: int
    guard: VerificationGuard = field(default_factory=VerificationGuard)

    def observe(self, sequence: int, epoch: int) -> None:
        """Kafka's maybeUpdateLowestSequenceAndEpoch: a lower sequence of the same epoch, or
        any sequence of a newer epoch, becomes the lowest."""
        if epoch == self.epoch and sequence < self.lowest_sequence:
            self.lowest_sequence = sequence
        if epoch > self.epoch:
            self.epoch = epoch
            self.lowest_sequence = sequence


class VerificationStates:
    """The entries of one partition's producers, by producer id."""

    def __init__(self) -> None:
        self.entries: dict[int, VerificationEntry] = {}

    def __len__(self) -> int:
        return len(self.entries)

    def start(self, producer_id: int, sequence: int, epoch: int, now_ms: int) -> VerificationGuard:
        """The guard of ``producer_id``'s verification, created on its first batch."""
        entry = self.entries.get(producer_id)
        if entry is None:
            entry = self.entries[producer_id] = VerificationEntry(now_ms, sequence, epoch)
        entry.observe(sequence, epoch)
        return entry.guard

    def guard(self, producer_id: int) -> VerificationGuard | None:
        entry = self.entries.get(producer_id)
        return None if entry is None else entry.guard

    def clear(self, producer_id: int) -> None:
        """A transactional batch or marker of the producer was written: its transaction is
        open here (later batches need no verification) or ended (a stale answer must fail)."""
        self.entries.pop(producer_id, None)

    def expire(self, now_ms: int, max_age_ms: int) -> None:
        """Drop entries older than ``producer.id.expiration.ms`` (never verified)."""
        stale = [p for p, e in self.entries.items() if now_ms - e.timestamp_ms >= max_age_ms]
        for pid in stale:
            del self.entries[pid]

    def check_sequence(self, producer_id: int, first_sequence: int) -> None:
        """OUT_OF_ORDER_SEQUENCE_NUMBER for a batch above the lowest sequence still being
        verified."""
        entry = self.entries.get(producer_id)
        if entry is not None and first_sequence > entry.lowest_sequence:
            raise KafkaError(
                Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"Out of order sequence number for producer {producer_id}: {first_sequence} "
                f"(incoming seq. number), {entry.lowest_sequence} (earliest seen sequence)",
            )


def missing_verification(
    states: VerificationStates,
    producer_id: int,
    has_open_txn: bool,
    is_transactional: bool,
    is_control: bool,
    guard: VerificationGuard | None,
) -> bool:
    """Whether a client's batch must be refused (INVALID_TXN_STATE) with verification on:
    a transactional data batch that would open a transaction here, without the guard its
    producer's verification holds (none asked, or a marker or batch written since)."""
    if not is_transactional or is_control or has_open_txn:
        return False
    held = states.guard(producer_id)
    return held is None or guard is not held


def needs_verification(is_transactional: bool, is_control: bool, has_open_txn: bool) -> bool:
    """Whether the coordinator must be asked before appending: the batch would open the
    producer's transaction on this partition."""
    return is_transactional and not is_control and not has_open_txn
