"""Opening a partition directory (Kafka's ``LogLoader``): complete a swap of cleaned segments
that a crash interrupted (swap.py) and clear other leftovers of interrupted work, check or
rebuild each segment's indexes, and after an unclean shutdown re-validate every batch from
the recovery point, cutting the log at the first damaged one and dropping all after it.
"""

from __future__ import annotations

import logging
import os
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from brook.protocol.batch import BatchHeader

from .checkpoints import TMP_SUFFIX
from .config import LogConfig
from .epoch_cache import LeaderEpochCache
from .file_pool import FilePool
from .offset_index import CorruptIndexError
from .segment import (
    DELETED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    CorruptSegmentError,
    LogSegment,
    delete_segment_files,
)
from .swap import complete_interrupted_swaps
from .txn_index import TXN_INDEX_SUFFIX

log = logging.getLogger(__name__)

# Files of a replacement or deletion that a crash interrupted (the swap's own are handled by
# swap.complete_interrupted_swaps first).
_LEFTOVER_SUFFIXES = (TMP_SUFFIX, DELETED_SUFFIX)


@dataclass
class LoadedLog:
    segments: list[LogSegment]
    log_start_offset: int
    recovery_point: int
    # No segment file was found: the directory is as new (perhaps left by a creation that
    # failed), and its entry in the log directory has never been fsynced.
    fresh: bool = False
    # The base of the first segment recovered (its aborted-transaction index is rebuilt by
    # replaying the producer state from at most there), None if none was.
    recovered_from: int | None = None

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset


def segment_base_offsets(directory: Path, names: list[str] | None = None) -> list[int]:
    """The base offsets of the ``.log`` files among ``names`` (default: the directory's)."""
    bases = []
    for name in os.listdir(directory) if names is None else names:
        stem, dot, suffix = name.partition(".")
        if dot and "." + suffix == LOG_SUFFIX and stem.isdigit():
            bases.append(int(stem))
    return sorted(bases)


def _remove_leftovers(directory: Path, bases: set[int], names: list[str]) -> None:
    for name in names:
        path = directory / name
        if name.endswith(_LEFTOVER_SUFFIXES):
            path.unlink(missing_ok=True)
            continue
        stem, dot, suffix = name.partition(".")
        is_index = (
            dot
            and "." + suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
            and stem.isdigit()
        )
        if is_index and int(stem) not in bases:
            path.unlink(missing_ok=True)


class LogLoader:
    """Loads one partition directory; ``load`` returns its segments and offsets."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        epoch_cache: LeaderEpochCache,
        *,
        recovery_point: int,
        log_start_offset: int,
        had_clean_shutdown: bool,
        now_ms: int,
        files: FilePool | None = None,
    ) -> None:
        self.dir = directory
        self.config = config
        self.epoch_cache = epoch_cache
        self.recovery_point = recovery_point
        self.log_start_offset = log_start_offset
        self.had_clean_shutdown = had_clean_shutdown
        self.now_ms = now_ms
        self.files = files
        self._recovered_from: int | None = None

    def load(self) -> LoadedLog:
        """Load the segments; if that fails, the files of those already opened go back to
        the pool before the error is raised."""
        segments: list[LogSegment] = []
        try:
            return self._load(segments)
        except BaseException:
            for segment in segments:
                segment.close()
            raise

    def _load(self, segments: list[LogSegment]) -> LoadedLog:
        """``load``, collecting the segments it opens in ``segments``."""
        names = os.listdir(self.dir)
        if complete_interrupted_swaps(self.dir, names):
            names = os.listdir(self.dir)
        bases = segment_base_offsets(self.dir, names)
        _remove_leftovers(self.dir, set(bases), names)
        cache = self.epoch_cache
        epochs_before = cache.entries()
        # An unreadable checkpoint is rebuilt from the batches' own leader epochs.
        rebuild_epochs = not cache.loaded_cleanly
        first_unflushed = len(bases)
        if not self.had_clean_shutdown:
            first_unflushed = max(0, bisect_right(bases, self.recovery_point) - 1)
        if rebuild_epochs:
            cache.clear(flush=False)
        elif first_unflushed < len(bases):
            cache.truncate_from_end(bases[first_unflushed], flush=False)

        for i, base in enumerate(bases):
            # A segment may start past its predecessor's end (a follower rolls at the base
            # offset of a batch a cleaned leader sent after a gap, as Kafka's does), never
            # before it: overlapping offsets are damage.
            if segments and base < segments[-1].next_offset:
                log.warning(
                    "%s: segment %d overlaps offset %d; dropping it and later segments",
                    self.dir,
                    base,
                    segments[-1].next_offset,
                )
                self._delete(bases[i:])
                break
            segment = LogSegment.with_config(
                self.dir, base, self.config, self.now_ms, create=False, files=self.files
            )
            following = bases[i + 1] if i + 1 < len(bases) else None
            try:
                truncated = self._load_segment(
                    segment, i >= first_unflushed, rebuild_epochs, following
                )
            except BaseException:
                segment.close()
                raise
            if segments:
                # Only the last segment is appended to: the others' descriptors can go.
                segments[-1].release_files()
            segments.append(segment)
            if truncated:
                log.warning(
                    "%s: cut %d damaged bytes from segment %d at offset %d",
                    self.dir,
                    truncated,
                    base,
                    segment.next_offset,
                )
                self._delete(bases[i + 1 :])
                break

        log_start = self.log_start_offset
        if segments and segments[-1].next_offset < log_start:
            # Everything below the checkpointed log start is gone: start afresh there.
            for segment in segments:
                segment.delete()
            segments.clear()
        if not segments:
            segments.append(
                LogSegment.with_config(
                    self.dir, log_start, self.config, self.now_ms, create=True, files=self.files
                )
            )
        log_start = max(log_start, segments[0].base_offset)
        log_end = segments[-1].next_offset
        # Start first, so that an empty log keeps no epoch whatever the checkpoint held.
        cache.truncate_from_start(log_start, flush=False)
        cache.truncate_from_end(log_end, flush=False)
        if rebuild_epochs or cache.entries() != epochs_before:
            cache.flush()
        recovery_point = log_end if self.had_clean_shutdown else min(self.recovery_point, log_end)
        return LoadedLog(
            segments,
            log_start,
            max(recovery_point, log_start),
            fresh=not bases,
            recovered_from=self._recovered_from,
        )

    def _load_segment(
        self,
        segment: LogSegment,
        unflushed: bool,
        rebuild_epochs: bool,
        following: int | None,
    ) -> int:
        """Check or recover one segment (whose batches end by ``following``, the next
        segment's base offset, if there is one); returns the bytes recovery cut off."""
        assign = self._assign_epoch if unflushed or rebuild_epochs else None
        if not unflushed:
            try:
                segment.load()
            except (CorruptIndexError, CorruptSegmentError) as exc:
                log.warning("%s: %s; recovering the segment", self.dir, exc)
            else:
                if rebuild_epochs:
                    for _, header in segment.iter_headers():
                        self._assign_epoch(header)
                return 0
        if self._recovered_from is None:
            self._recovered_from = segment.base_offset
        return segment.recover(assign, following)

    def _assign_epoch(self, header: BatchHeader) -> None:
        epoch = header.partition_leader_epoch
        latest = self.epoch_cache.latest_epoch()
        if epoch >= 0 and (latest is None or epoch > latest):
            self.epoch_cache.assign(epoch, header.base_offset, flush=False)

    def _delete(self, bases: list[int]) -> None:
        for base in bases:
            delete_segment_files(self.dir, base)
