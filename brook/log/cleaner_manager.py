"""Which log the cleaner cleans next and how far (Kafka's ``LogCleanerManager``): the dirty
ratio of every compacted log, the range each may be cleaned over, the logs being cleaned, the
ones an unexpected error made uncleanable, and the ``cleaner-offset-checkpoint`` file of each
log directory (Kafka's format: where each log's dirty part begins).

A log's *clean* part was cleaned by the last pass; its *dirty* part, from the checkpointed
offset on, is what was written since. A pass may clean the dirty part up to the first
*uncleanable* offset: the active segment's base, the last stable offset (the high
watermark: records a follower might still lose to a truncation stay as they are; and the
first unstable offset: every transactional batch the cleaner reads is decided, so the
``.txnindex`` files list every aborted one) and the first segment holding a record younger
than ``min.compaction.lag.ms`` bound it, rounded down to a segment boundary.

The selection runs on the thread that owns the logs (the event loop) and hands a cleaner
thread a ``LogToClean``: views of the segments it may read, taken on that thread. The rest
(checkpoints, the in-progress set) is guarded by a lock, for the cleaner threads; the
checkpoint files are written (and fsynced) outside it, so the event loop, which takes that
lock at every truncation and retention run, never waits for a disk.
"""

from __future__ import annotations

import logging
import threading
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from .checkpoints import CheckpointError, OffsetCheckpointFile
from .config import LogConfig
from .dir_failure import LogDirFailureChannel
from .log import PartitionLog
from .segment import LogSegment, SegmentView
from .txn_index import AbortedTxn

log = logging.getLogger(__name__)

CLEANER_CHECKPOINT = "cleaner-offset-checkpoint"

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class LogToClean:
    """One log chosen for cleaning, as the owning thread saw it."""

    tp: TopicPartition
    log: PartitionLog
    config: LogConfig
    segments: list[SegmentView]  # every segment but the active one, oldest first
    first_dirty_offset: int
    # where in its segment the batch holding the first dirty offset starts (or one before it)
    first_dirty_position: int
    first_uncleanable_offset: int  # a segment base offset
    need_compaction_now: bool
    producer_last_offsets: dict[int, int]
    clean_bytes: int
    cleanable_bytes: int
    # producers whose last batch is a marker: their markers of this epoch are kept
    producer_marker_epochs: dict[int, int] = field(default_factory=dict)
    # the aborted transactions overlapping [log start, first uncleanable offset): every
    # transaction there is decided (the range ends at the LSO), so these are all the aborts
    aborted_txns: list[AbortedTxn] = field(default_factory=list)

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        return self.cleanable_bytes / self.total_bytes if self.total_bytes else 0.0


def floor_index(segments: list[SegmentView], offset: int, active_base: int) -> int:
    """The index of the segment holding ``offset`` (len(segments) for the active one)."""
    i = 0
    while i < len(segments):
        upper = segments[i + 1].base_offset if i + 1 < len(segments) else active_base
        if offset < upper:
            return i
        i += 1
    return i


def cleanable_offsets(
    segments: list[SegmentView],
    active_base: int,
    *,
    log_start: int,
    log_end: int,
    checkpoint: int | None,
    high_watermark: int,
    config: LogConfig,
    now_ms: int,
    first_unstable: int | None = None,
) -> tuple[int, int, bool]:
    """Kafka's cleanableOffsets: (first dirty offset, first uncleanable offset, whether the
    checkpoint was invalid and must be reset). A checkpoint below the log start or past the
    log end (a log truncated or cut since) restarts from the log start. The last stable
    offset bounds the range: ``high_watermark`` and ``first_unstable`` (the start of the
    earliest transaction not yet decided and replicated, None if there is none)."""
    dirty = log_start if checkpoint is None else checkpoint
    reset = False
    if dirty < log_start or dirty > log_end:
        # Below the log start is retention's doing under compact,delete: nothing to report.
        if not (dirty < log_start and config.delete_enabled):
            log.warning(
                "resetting the first dirty offset %d to the log start %d (the log spans [%d, %d])",
                dirty,
                log_start,
                log_start,
                log_end,
            )
        dirty, reset = log_start, True
    bounds = [high_watermark, active_base]
    if first_unstable is not None:
        bounds.append(first_unstable)
    lag = max(config.min_compaction_lag_ms, 0)
    if lag > 0:
        for view in segments[floor_index(segments, dirty, active_base) :]:
            if view.largest_timestamp > now_ms - lag:
                bounds.append(view.base_offset)
                break
    return dirty, max(dirty, min(bounds)), reset


def aborted_txns(segments: Sequence[LogSegment], start: int, end: int) -> list[AbortedTxn]:
    """The aborted transactions overlapping ``[start, end)``, from the ``.txnindex`` of the
    segment holding ``start`` on, until an entry's last stable offset reaches ``end`` (Kafka's
    collectAbortedTransactions). Unlike a fetch's search, the segments at or past ``end``
    are searched too: an abort is indexed in its marker's segment, which may lie past the
    cleanable range while the transaction's batches lie in it."""
    if end <= start:
        return []
    found: list[AbortedTxn] = []
    first = max(bisect_right([s.base_offset for s in segments], start) - 1, 0)
    for segment in segments[first:]:
        txns, complete = segment.txn_index.collect(start, end)
        found.extend(txns)
        if complete:
            break
    return found


def cleanable_bytes(
    segments: list[SegmentView], active_base: int, first_dirty: int, uncleanable: int
) -> tuple[int, int]:
    """Kafka's calculateCleanableBytes: the base of the segment holding ``uncleanable``
    (cleaning stops at a segment boundary) and the bytes of the segments from the one
    holding ``first_dirty`` up to it."""
    end = floor_index(segments, uncleanable, active_base)
    first_uncleanable = segments[end].base_offset if end < len(segments) else active_base
    start = floor_index(segments, min(first_dirty, first_uncleanable), active_base)
    return first_uncleanable, sum(v.size for v in segments[start:end])


def max_compaction_delay(
    segments: list[SegmentView], active_base: int, first_dirty: int, config: LogConfig, now: int
) -> int:
    """How long past max.compaction.lag.ms the oldest dirty record is (0 if it is not): the
    earliest first-batch timestamp of the dirty segments, as Kafka measures it."""
    stamps = [
        v.first_batch_timestamp
        for v in segments[floor_index(segments, first_dirty, active_base) :]
        if v.first_batch_timestamp is not None and v.first_batch_timestamp > 0
    ]
    if not stamps:
        return 0
    clean_until = now - max(config.max_compaction_lag_ms, 0)
    earliest = min(stamps)
    return clean_until - earliest if earliest < clean_until else 0


class LogCleanerManager:
    """The cleaning state of every log of the node's ``logs`` (called for the current
    logs at each selection, on the logs' thread, so logs created meanwhile are seen)."""

    def __init__(
        self,
        log_dirs: Iterable[Path],
        logs: Callable[[], Iterable[PartitionLog]],
        failures: LogDirFailureChannel,
    ) -> None:
        self._logs = logs
        self.failures = failures
        self._lock = threading.Lock()
        # Serializes the checkpoint files' writers, each writing what ``_lock`` guarded when
        # it got its turn, so the newest offsets are written last.
        self._write_lock = threading.Lock()
        # the logs being cleaned (a log deleted meanwhile is dropped: ``forget``)
        self._in_progress: dict[TopicPartition, PartitionLog] = {}
        self._uncleanable: set[TopicPartition] = set()
        self._checkpoints: dict[Path, dict[TopicPartition, int]] = {}
        for directory in log_dirs:
            try:
                offsets = OffsetCheckpointFile(directory / CLEANER_CHECKPOINT).read()
            except (CheckpointError, OSError) as exc:
                log.warning("ignoring unreadable cleaner checkpoint: %s", exc)
                offsets = {}
            self._checkpoints[directory] = offsets
        # Logs deleted while the node was down keep no entry (later deletions are forgotten
        # as they happen: ``forget``).
        known = {(p.log_dir, p.topic, p.partition) for p in logs()}
        for directory, offsets in self._checkpoints.items():
            for tp in [tp for tp in offsets if (directory, *tp) not in known]:
                del offsets[tp]
        self.dirtiest_ratio = 0.0

    # ------------------------------------------------------------------ selection
    def grab_filthiest(
        self, now_ms: int, high_watermark: Callable[[TopicPartition], int | None]
    ) -> LogToClean | None:
        """The compacted log to clean now, marked in progress: among those past their
        min.cleanable.dirty.ratio, or with records older than max.compaction.lag.ms and
        something to clean, the one with the largest dirty ratio. On the logs' thread.
        ``high_watermark``: a log's, None for a log not served (it is not cleaned)."""
        candidates: list[LogToClean] = []
        with self._lock:
            busy = self._in_progress.keys() | self._uncleanable
            checkpoints = {d: dict(c) for d, c in self._checkpoints.items()}
        for plog in self._logs():
            tp = (plog.topic, plog.partition)
            if not plog.config.compacted or tp in busy:
                continue
            if self.failures.is_offline(plog.log_dir):
                continue
            hw = high_watermark(tp)
            if hw is None:
                continue
            job = self._log_to_clean(plog, tp, hw, checkpoints.get(plog.log_dir, {}), now_ms)
            if job is not None and job.total_bytes > 0:
                candidates.append(job)
        self.dirtiest_ratio = max((c.cleanable_ratio for c in candidates), default=0.0)
        ready = [
            c
            for c in candidates
            if (c.need_compaction_now and c.cleanable_bytes > 0)
            or c.cleanable_ratio > c.config.min_cleanable_dirty_ratio
        ]
        if not ready:
            return None
        chosen = self.with_aborted_txns(max(ready, key=lambda c: c.cleanable_ratio))
        with self._lock:
            self._in_progress[chosen.tp] = chosen.log
        return chosen

    def _log_to_clean(
        self,
        plog: PartitionLog,
        tp: TopicPartition,
        high_watermark: int,
        checkpoints: dict[TopicPartition, int],
        now_ms: int,
    ) -> LogToClean | None:
        segments, active_base = plog.cleanable_segments()
        config = plog.config
        # Markers below the HW no longer hold the first unstable offset back (nothing else
        # may have told the log, when no read_committed consumer asked for its LSO).
        plog.on_high_watermark(high_watermark)
        first_dirty, uncleanable, reset = cleanable_offsets(
            segments,
            active_base,
            log_start=plog.log_start_offset,
            log_end=plog.log_end_offset,
            checkpoint=checkpoints.get(tp),
            high_watermark=high_watermark,
            config=config,
            now_ms=now_ms,
            first_unstable=plog.first_unstable_offset(),
        )
        if reset:
            with self._lock:
                self._checkpoints.setdefault(plog.log_dir, {})[tp] = first_dirty
        first_uncleanable, dirty_bytes = cleanable_bytes(
            segments, active_base, first_dirty, uncleanable
        )
        clean_bytes = sum(v.size for v in segments if v.base_offset < first_dirty)
        delay = max_compaction_delay(segments, active_base, first_dirty, config, now_ms)
        holding = floor_index(segments, first_dirty, active_base)
        position = (
            segments[holding].segment.offset_index.lookup(first_dirty)[1]
            if holding < len(segments)
            else 0
        )
        return LogToClean(
            tp,
            plog,
            config,
            segments,
            first_dirty,
            position,
            first_uncleanable,
            delay > 0,
            plog.producer_last_offsets(),
            clean_bytes,
            dirty_bytes,
            plog.producer_marker_epochs(),
        )

    @staticmethod
    def with_aborted_txns(job: LogToClean) -> LogToClean:
        """``job`` with the aborted transactions its cleaning must know, on the log's thread."""
        return replace(
            job,
            aborted_txns=aborted_txns(
                job.log.segments(), job.log.log_start_offset, job.first_uncleanable_offset
            ),
        )

    # ------------------------------------------------------------------ state
    def in_progress(self, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._in_progress

    def done_cleaning(self, job: LogToClean, end_offset: int | None) -> None:
        """The cleaning of ``job`` is over; with ``end_offset`` (it finished), the log is
        clean below it and the directory's checkpoint file is written (on the cleaner's
        thread: it fsyncs). Nothing is recorded for a log deleted meanwhile: a log created
        again under its name must not inherit its checkpoint."""
        directory = job.log.log_dir
        with self._lock:
            if self._in_progress.get(job.tp) is not job.log:
                return  # forgotten
            del self._in_progress[job.tp]
            if end_offset is None:
                return
            self._checkpoints.setdefault(directory, {})[job.tp] = end_offset
        self._write(directory)

    def mark_uncleanable(self, job: LogToClean) -> None:
        """An unexpected error cleaning this log: it is not tried again until a restart."""
        with self._lock:
            if self._in_progress.get(job.tp) is not job.log:
                return  # forgotten
            del self._in_progress[job.tp]
            self._uncleanable.add(job.tp)

    def uncleanable(self) -> set[TopicPartition]:
        with self._lock:
            return set(self._uncleanable)

    def checkpoint(self, tp: TopicPartition, directory: Path) -> int | None:
        with self._lock:
            return self._checkpoints.get(directory, {}).get(tp)

    def truncated(self, plog: PartitionLog, offset: int) -> None:
        """A truncation cut ``plog`` back to ``offset``: what is written there again is
        dirty (Kafka's maybeTruncateCheckpoint). Kept in memory and written with the
        directory's next checkpoint: a lost update only leaves those records uncleaned
        until the log is next cleaned from its start."""
        tp = (plog.topic, plog.partition)
        with self._lock:
            offsets = self._checkpoints.get(plog.log_dir, {})
            if offsets.get(tp, -1) > offset:
                offsets[tp] = offset

    def forget(self, plog: PartitionLog) -> None:
        """A deleted (or set aside) log: no checkpoint, no uncleanable mark."""
        tp = (plog.topic, plog.partition)
        with self._lock:
            self._checkpoints.get(plog.log_dir, {}).pop(tp, None)
            self._uncleanable.discard(tp)
            if self._in_progress.get(tp) is plog:
                del self._in_progress[tp]

    def write_checkpoints(self) -> None:
        """Write every online directory's checkpoint file (shutdown)."""
        with self._lock:
            directories = list(self._checkpoints)
        for directory in directories:
            self._write(directory)

    def _write(self, directory: Path) -> None:
        """Write ``directory``'s checkpoint file as it stands, without holding ``_lock``."""
        with self._write_lock:
            if self.failures.is_offline(directory):
                return
            with self._lock:
                offsets = dict(self._checkpoints.get(directory, {}))
            self._write_file(directory, offsets)

    def _write_file(self, directory: Path, offsets: dict[TopicPartition, int]) -> None:
        try:
            OffsetCheckpointFile(directory / CLEANER_CHECKPOINT).write(offsets)
        except OSError as exc:
            self.failures.fail(directory, f"writing {CLEANER_CHECKPOINT}", exc)
