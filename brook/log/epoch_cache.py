"""The leader-epoch cache (Kafka's ``LeaderEpochFileCache``): epoch -> first offset written in
that epoch, kept in the ``leader-epoch-checkpoint`` file. Followers ask the leader for the end
offset of an epoch (OffsetForLeaderEpoch, DivergingEpoch) to find where their logs diverge.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from itertools import pairwise
from pathlib import Path

from .checkpoints import CheckpointError, LeaderEpochCheckpointFile, fsync_path

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class LeaderEpochCache:
    """Epochs strictly increase and so do their start offsets. The file follows every change
    but is fsynced only by ``sync``, which the log calls when it flushes (so appends, which
    run on the event loop, never wait for a disk): after a crash the loader re-derives the
    epochs above the recovery point from the batches themselves."""

    def __init__(self, path: Path) -> None:
        self._file = LeaderEpochCheckpointFile(path)
        self._epochs: list[int] = []
        self._starts: list[int] = []
        self._unsynced = False
        # False when the checkpoint was missing or unreadable: the loader rebuilds it from the log.
        self.loaded_cleanly = True
        try:
            entries = self._file.read()
        except CheckpointError:
            entries = None
        if entries is None or not _well_ordered(entries):
            self.loaded_cleanly = False
            return
        self._epochs = [epoch for epoch, _ in entries]
        self._starts = [start for _, start in entries]

    def entries(self) -> list[tuple[int, int]]:
        """(epoch, start offset) pairs in increasing order."""
        return list(zip(self._epochs, self._starts, strict=True))

    def is_empty(self) -> bool:
        return not self._epochs

    def latest_epoch(self) -> int | None:
        return self._epochs[-1] if self._epochs else None

    def latest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[-1], self._starts[-1]) if self._epochs else None

    def earliest_entry(self) -> tuple[int, int] | None:
        return (self._epochs[0], self._starts[0]) if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch in which ``offset`` was written, if the cache knows it."""
        i = bisect_right(self._starts, offset) - 1
        return self._epochs[i] if i >= 0 else None

    def assign(self, epoch: int, start_offset: int, flush: bool = True) -> bool:
        """Record that ``epoch`` starts at ``start_offset``; True when the cache changed.

        Only a new epoch or an earlier start for the latest one is an update; entries that a
        lower epoch or an earlier start contradict are removed from the end first.
        """
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid epoch entry ({epoch}, {start_offset})")
        if self._epochs and epoch == self._epochs[-1] and start_offset >= self._starts[-1]:
            return False
        while self._epochs and (self._epochs[-1] >= epoch or self._starts[-1] >= start_offset):
            self._epochs.pop()
            self._starts.pop()
        self._epochs.append(epoch)
        self._starts.append(start_offset)
        if flush:
            self.flush()
        return True

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(largest known epoch <= ``epoch``, the offset where it ended), as Kafka's
        ``endOffsetFor``: the latest epoch ends at the log end; an epoch below every known one
        gets (``epoch``, first start offset); an unknown future epoch gets (-1, -1)."""
        if epoch == UNDEFINED_EPOCH or not self._epochs:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if epoch == self._epochs[-1]:
            return epoch, log_end_offset
        higher = bisect_right(self._epochs, epoch)
        if higher == len(self._epochs):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return epoch, self._starts[0]
        return self._epochs[higher - 1], self._starts[higher]

    def truncate_from_end(self, end_offset: int, flush: bool = True) -> None:
        """Forget the epochs that start at or after ``end_offset`` (the log was truncated)."""
        keep = bisect_left(self._starts, end_offset)
        if end_offset >= 0 and keep < len(self._starts):
            del self._epochs[keep:]
            del self._starts[keep:]
            if flush:
                self.flush()

    def truncate_from_start(self, start_offset: int, flush: bool = True) -> None:
        """Drop the epochs wholly below ``start_offset``; the one holding it now starts there."""
        if start_offset < 0:
            return
        last_below = bisect_right(self._starts, start_offset) - 1
        if last_below < 0:
            return
        if last_below == 0 and self._starts[0] == start_offset:
            return
        epoch = self._epochs[last_below]
        del self._epochs[: last_below + 1]
        del self._starts[: last_below + 1]
        self._epochs.insert(0, epoch)
        self._starts.insert(0, start_offset)
        if flush:
            self.flush()

    def clear(self, flush: bool = True) -> None:
        self._epochs.clear()
        self._starts.clear()
        if flush:
            self.flush()

    def flush(self) -> None:
        """Write the file (atomically, not yet fsynced)."""
        self._file.write(self.entries(), sync=False)
        self._unsynced = True
        self.loaded_cleanly = True

    def sync(self) -> None:
        """fsync what ``flush`` wrote; safe on a worker thread while appends go on (a write
        that races with it marks the file unsynced again)."""
        if not self._unsynced:
            return
        self._unsynced = False
        path = self._file.path
        try:
            fsync_path(path)
        except FileNotFoundError:
            return
        fsync_path(path.parent)


def _well_ordered(entries: list[tuple[int, int]]) -> bool:
    return all(e1 < e2 and s1 < s2 for (e1, s1), (e2, s2) in pairwise(entries)) and all(
        epoch >= 0 and start >= 0 for epoch, start in entries
    )
