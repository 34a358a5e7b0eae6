"""The replicated log as the Raft core needs it: a typing.Protocol the shell implements over
``__cluster_metadata-0`` (and ``MemoryLog`` implements for the simulation), plus the two rules
Kafka defines on top of any such log: where a fetch position stands against the log
(``validate_offset_and_epoch``) and where a follower truncates after a DivergingEpoch
(``truncate_to_end_offset``).

Records are opaque to the core. Batches travel from the leader's ``read`` to the follower's
``append_as_follower`` untouched, keeping their offsets and epochs; the only record the core
writes itself is the LeaderChange control record (type 2) a new leader appends.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from .messages import OffsetAndEpoch

# What ``read`` returns and ``append_as_follower`` takes: the log's own batches, opaque here.
Batches = Sequence[object]


@dataclass(frozen=True, slots=True)
class LeaderChangeRecord:
    """The control record (type 2, LeaderChangeMessage) a leader writes first in its epoch."""

    leader_id: int
    voters: tuple[int, ...]
    granting_voters: tuple[int, ...]


class RaftLog(Protocol):
    """The log under the core. Offsets are Kafka's: ``end_offset`` is one past the last record.
    Writes need not be durable until ``flush``; a crash may lose what was not flushed and
    nothing else. Snapshot ids are (end offset, epoch of the last record they contain)."""

    @property
    def start_offset(self) -> int:
        """The first offset still in the log (a snapshot covers everything below it)."""

    @property
    def end_offset(self) -> int: ...

    @property
    def flushed_offset(self) -> int:
        """Everything below this offset is durable."""

    @property
    def last_fetched_epoch(self) -> int:
        """The epoch of the last record, or of the snapshot when the log past it is empty,
        or 0 for an empty log."""

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        """Kafka's answer from the leader-epoch cache: the largest epoch <= ``epoch`` this log
        knows and the offset where it ends (the log end for the latest epoch); for an epoch
        below the log start, the snapshot at the log start; for an epoch above every known one,
        (log end, last fetched epoch)."""

    def initialize_leader_epoch(self, epoch: int) -> None:
        """Record that ``epoch`` starts at the log end (a new leader, before its first write)."""

    def append_as_leader(self, payloads: Sequence[bytes], epoch: int) -> tuple[int, int]:
        """Append one batch of records in ``epoch``; returns (base offset, last offset)."""

    def append_leader_change(self, record: LeaderChangeRecord, epoch: int) -> int:
        """Append the LeaderChange control batch in ``epoch``; returns its offset."""

    def append_as_follower(self, batches: Batches) -> None:
        """Append the leader's batches as they are (offsets and epochs kept); the first one
        starts at this log's end. New epochs go into the leader-epoch cache."""

    def read(self, offset: int, max_bytes: int) -> Batches:
        """Whole batches from ``offset`` (a batch boundary) on, at least one if any, then as
        many as fit in ``max_bytes``; empty at the log end."""

    def truncate_to(self, offset: int) -> None:
        """Remove every record at or after ``offset`` (and the epochs starting there)."""

    def flush(self) -> None:
        """Make everything appended so far durable (fsync)."""

    def latest_snapshot_id(self) -> OffsetAndEpoch | None: ...

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None: ...

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        """The size in bytes of a complete snapshot this log holds, None if it holds none."""

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        """Up to ``max_bytes`` of the snapshot from byte ``position`` on."""

    def begin_snapshot_download(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Start receiving a snapshot from the leader; False if this log already holds it."""

    def append_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, data: bytes) -> int:
        """Add received bytes to the snapshot being downloaded; returns the bytes held."""

    def abort_snapshot_download(self, snapshot_id: OffsetAndEpoch) -> None:
        """Drop a partly received snapshot (the leader no longer has it)."""

    def finish_snapshot_download(self, snapshot_id: OffsetAndEpoch) -> None:
        """Freeze a fully received snapshot: from now on it is held, durably."""

    def truncate_to_latest_snapshot(self) -> bool:
        """If the latest snapshot is past this log's end, empty the log and start it at the
        snapshot (log start = log end = its end offset); True if that happened."""

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, content: bytes) -> None:
        """Store (durably) a snapshot the state machine wrote of everything below
        ``snapshot_id.offset``, which must be a batch boundary; ValueError otherwise."""

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        """Move the log start to a held snapshot's end offset, dropping the records below it
        and older snapshots; True if anything was deleted."""

    def epoch_at(self, offset: int) -> int:
        """The epoch of the record at ``offset`` (start <= offset < end)."""


# ---------------------------------------------------------------------- rules on any log


class Position(enum.Enum):
    VALID = "valid"
    DIVERGING = "diverging"
    SNAPSHOT = "snapshot"


@dataclass(frozen=True, slots=True)
class ValidatedPosition:
    """Where a follower's (fetch offset, last fetched epoch) stands: VALID (read from it),
    DIVERGING (truncate to ``at`` first) or SNAPSHOT (fetch snapshot ``at`` first)."""

    kind: Position
    at: OffsetAndEpoch


def validate_offset_and_epoch(log: RaftLog, offset: int, epoch: int) -> ValidatedPosition:
    """Kafka's ReplicatedLog.validateOffsetAndEpoch. A position the log no longer holds (below
    its start, or at its start with another epoch, or with an epoch older than its oldest
    snapshot) is answered with the latest snapshot; a position past the end of its epoch in
    this log, or in an epoch this log never had, diverges."""
    start = log.start_offset
    if start == 0 and offset == 0:
        return ValidatedPosition(Position.VALID, OffsetAndEpoch(0, 0))
    earliest = log.earliest_snapshot_id()
    if earliest is not None and (
        offset < start or (offset == start and epoch != earliest.epoch) or epoch < earliest.epoch
    ):
        latest = log.latest_snapshot_id()
        if latest is None:
            raise AssertionError(f"log start {start} is past 0 but the log holds no snapshot")
        return ValidatedPosition(Position.SNAPSHOT, latest)
    end = log.end_offset_for_epoch(epoch)
    if end.epoch != epoch or end.offset < offset:
        return ValidatedPosition(Position.DIVERGING, end)
    return ValidatedPosition(Position.VALID, OffsetAndEpoch(offset, epoch))


def truncation_offset(log: RaftLog, diverging: OffsetAndEpoch) -> int:
    """Where a follower cuts its log after the leader answered ``diverging`` (Kafka's
    truncateToEndOffset): at the smaller of the two ends of that epoch if this log has the
    epoch, else at the end of the largest epoch it has below it."""
    if diverging.epoch == 0:
        return min(diverging.offset, log.end_offset)
    local = log.end_offset_for_epoch(diverging.epoch)
    if local.epoch == diverging.epoch:
        return min(local.offset, diverging.offset)
    return local.offset
