"""An in-memory ``RaftLog`` for the simulation and the unit tests, with Kafka's semantics where
they matter to the protocol: a leader-epoch cache kept as Kafka's LeaderEpochFileCache (and
answered as KafkaMetadataLog does), snapshots with their download, and durability: what was
appended but not flushed is gone after ``crashed()``, as after a machine crash.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from .log import Batches, LeaderChangeRecord, Position, validate_offset_and_epoch
from .messages import OffsetAndEpoch

_BATCH_OVERHEAD = 61  # a RecordBatch v2 header, for the byte limits of reads


@dataclass(frozen=True, slots=True, eq=False)
class MemoryBatch:
    """One batch: its records (opaque payloads) or the LeaderChange control record."""

    base_offset: int
    epoch: int
    records: tuple[bytes, ...]
    leader_change: LeaderChangeRecord | None = None

    @property
    def next_offset(self) -> int:
        return self.base_offset + len(self.records)

    @property
    def last_offset(self) -> int:
        return self.base_offset + len(self.records) - 1

    @property
    def size(self) -> int:
        return _BATCH_OVERHEAD + sum(len(r) for r in self.records)


class _EpochCache:
    """Epoch -> start offset, both strictly increasing (Kafka's LeaderEpochFileCache)."""

    __slots__ = ("epochs", "starts")

    def __init__(self) -> None:
        self.epochs: list[int] = []
        self.starts: list[int] = []

    def copy(self) -> _EpochCache:
        other = _EpochCache()
        other.epochs = list(self.epochs)
        other.starts = list(self.starts)
        return other

    def latest(self) -> int | None:
        return self.epochs[-1] if self.epochs else None

    def assign(self, epoch: int, start: int) -> None:
        epochs, starts = self.epochs, self.starts
        if epochs and epoch == epochs[-1] and start >= starts[-1]:
            return
        while epochs and (epochs[-1] >= epoch or starts[-1] >= start):
            epochs.pop()
            starts.pop()
        epochs.append(epoch)
        starts.append(start)

    def end_offset_for(self, epoch: int, log_end: int) -> tuple[int, int] | None:
        """(epoch found, its end offset), None when the cache cannot say (Kafka's UNDEFINED)."""
        epochs = self.epochs
        if not epochs:
            return None
        if epoch == epochs[-1]:
            return epoch, log_end
        higher = bisect_right(epochs, epoch)
        if higher == len(epochs):
            return None
        if higher == 0:
            return epoch, self.starts[0]
        return epochs[higher - 1], self.starts[higher]

    def truncate_from_end(self, end: int) -> None:
        keep = bisect_left(self.starts, end)
        del self.epochs[keep:]
        del self.starts[keep:]

    def truncate_from_start(self, start: int) -> None:
        last_below = bisect_right(self.starts, start) - 1
        if last_below < 0 or (last_below == 0 and self.starts[0] == start):
            return
        epoch = self.epochs[last_below]
        del self.epochs[: last_below + 1]
        del self.starts[: last_below + 1]
        self.epochs.insert(0, epoch)
        self.starts.insert(0, start)

    def clear(self) -> None:
        self.epochs.clear()
        self.starts.clear()


class MemoryLog:
    """``RaftLog`` in memory. Batches are ``MemoryBatch`` objects; snapshots are bytes."""

    def __init__(self) -> None:
        self._batches: list[MemoryBatch] = []
        self._bases: list[int] = []
        self._start = 0
        self._end = 0
        self._flushed = 0
        self._cache = _EpochCache()
        self._snapshots: dict[OffsetAndEpoch, bytes] = {}
        self._downloads: dict[OffsetAndEpoch, bytearray] = {}

    # ------------------------------------------------------------------ positions
    @property
    def start_offset(self) -> int:
        return self._start

    @property
    def end_offset(self) -> int:
        return self._end

    @property
    def flushed_offset(self) -> int:
        return self._flushed

    @property
    def last_fetched_epoch(self) -> int:
        latest = self._cache.latest()
        if latest is not None:
            return latest
        snapshot = self.latest_snapshot_id()
        if snapshot is None:
            return 0
        if snapshot.offset == self._start == self._end:
            return snapshot.epoch
        raise AssertionError(
            f"no epoch for a log of [{self._start}, {self._end}) above snapshot {snapshot}"
        )

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        found = self._cache.end_offset_for(epoch, self._end)
        if found is None:
            return OffsetAndEpoch(self._end, self.last_fetched_epoch)
        found_epoch, found_offset = found
        earliest = self.earliest_snapshot_id()
        if earliest is not None and found_offset == earliest.offset and found_epoch == epoch:
            # the epoch is older than any left in the log: point at the snapshot at its start
            return earliest
        return OffsetAndEpoch(found_offset, found_epoch)

    def epoch_at(self, offset: int) -> int:
        if not self._start <= offset < self._end:
            raise ValueError(f"offset {offset} is not in the log [{self._start}, {self._end})")
        return self._batches[bisect_right(self._bases, offset) - 1].epoch

    # ------------------------------------------------------------------ appends
    def initialize_leader_epoch(self, epoch: int) -> None:
        self._cache.assign(epoch, self._end)

    def _append(self, batch: MemoryBatch) -> None:
        self._cache.assign(batch.epoch, batch.base_offset)
        self._batches.append(batch)
        self._bases.append(batch.base_offset)
        self._end = batch.next_offset

    def append_as_leader(self, payloads: Sequence[bytes], epoch: int) -> tuple[int, int]:
        if not payloads:
            raise ValueError("a batch needs at least one record")
        batch = MemoryBatch(self._end, epoch, tuple(payloads))
        self._append(batch)
        return batch.base_offset, batch.last_offset

    def append_leader_change(self, record: LeaderChangeRecord, epoch: int) -> int:
        batch = MemoryBatch(self._end, epoch, (b"",), record)
        self._append(batch)
        return batch.base_offset

    def append_as_follower(self, batches: Batches) -> None:
        for batch in batches:
            if not isinstance(batch, MemoryBatch):
                raise TypeError(f"not a MemoryBatch: {batch!r}")
            if batch.base_offset != self._end:
                raise ValueError(
                    f"batch at offset {batch.base_offset} does not follow the log end {self._end}"
                )
            self._append(batch)

    def read(self, offset: int, max_bytes: int) -> Batches:
        if offset >= self._end or offset < self._start:
            return ()
        first = bisect_right(self._bases, offset) - 1
        batches = self._batches
        out = [batches[first]]
        total = batches[first].size
        for i in range(first + 1, len(batches)):
            total += batches[i].size
            if total > max_bytes:
                break
            out.append(batches[i])
        return tuple(out)

    def truncate_to(self, offset: int) -> None:
        if offset >= self._end:
            return
        if offset < self._start:
            raise ValueError(f"cannot truncate to {offset}, below the log start {self._start}")
        cut = bisect_left(self._bases, offset)
        if cut == len(self._bases) or self._bases[cut] != offset:
            raise ValueError(f"offset {offset} is inside a batch")
        del self._batches[cut:]
        del self._bases[cut:]
        self._end = offset
        self._flushed = min(self._flushed, offset)
        self._cache.truncate_from_end(offset)

    def flush(self) -> None:
        self._flushed = self._end

    # ------------------------------------------------------------------ snapshots
    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        if not self._snapshots:
            return None
        return max(self._snapshots, key=lambda s: s.offset)

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        if not self._snapshots:
            return None
        return min(self._snapshots, key=lambda s: s.offset)

    def snapshot_ids(self) -> list[OffsetAndEpoch]:
        return sorted(self._snapshots, key=lambda s: s.offset)

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        content = self._snapshots.get(snapshot_id)
        return None if content is None else len(content)

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        return self._snapshots[snapshot_id][position : position + max_bytes]

    def snapshot_content(self, snapshot_id: OffsetAndEpoch) -> bytes:
        return self._snapshots[snapshot_id]

    def begin_snapshot_download(self, snapshot_id: OffsetAndEpoch) -> bool:
        if snapshot_id in self._snapshots:
            return False
        self._downloads[snapshot_id] = bytearray()
        return True

    def append_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, data: bytes) -> int:
        held = self._downloads[snapshot_id]
        held += data
        return len(held)

    def abort_snapshot_download(self, snapshot_id: OffsetAndEpoch) -> None:
        self._downloads.pop(snapshot_id, None)

    def finish_snapshot_download(self, snapshot_id: OffsetAndEpoch) -> None:
        self._snapshots[snapshot_id] = bytes(self._downloads.pop(snapshot_id))

    def truncate_to_latest_snapshot(self) -> bool:
        latest = self.latest_snapshot_id()
        last_epoch = self._cache.latest()
        if last_epoch is None:  # an empty log: its epoch is the snapshot's it starts at
            last_epoch = next((s.epoch for s in self._snapshots if s.offset == self._start), 0)
        if latest is None or not (
            latest.epoch > last_epoch or (latest.epoch == last_epoch and latest.offset > self._end)
        ):
            return False
        self._batches.clear()
        self._bases.clear()
        self._start = self._end = self._flushed = latest.offset
        self._cache.clear()
        self._forget_snapshots_before(latest)
        return True

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, content: bytes) -> None:
        offset = snapshot_id.offset
        if offset < self._start or offset > self._end:
            raise ValueError(
                f"snapshot {snapshot_id} is outside the log [{self._start}, {self._end}]"
            )
        if offset < self._end:
            at = bisect_left(self._bases, offset)
            if at == len(self._bases) or self._bases[at] != offset:
                raise ValueError(f"snapshot end offset {offset} is not a batch boundary")
        if validate_offset_and_epoch(self, offset, snapshot_id.epoch).kind is not Position.VALID:
            raise ValueError(f"snapshot {snapshot_id} does not match the log's epochs")
        self._snapshots.setdefault(snapshot_id, bytes(content))

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        latest = self.latest_snapshot_id()
        if (
            latest is None
            or snapshot_id not in self._snapshots
            or not self._start < snapshot_id.offset <= latest.offset
        ):
            return False
        new_start = snapshot_id.offset
        cut = bisect_left(self._bases, new_start)  # snapshots end at batch boundaries
        del self._batches[:cut]
        del self._bases[:cut]
        self._start = new_start
        if self._end < new_start:
            self._end = self._flushed = new_start
        self._cache.truncate_from_start(new_start)
        self._forget_snapshots_before(snapshot_id)
        return True

    def _forget_snapshots_before(self, snapshot_id: OffsetAndEpoch) -> None:
        for other in [s for s in self._snapshots if s.offset < snapshot_id.offset]:
            del self._snapshots[other]

    # ------------------------------------------------------------------ crashes
    def crashed(self) -> MemoryLog:
        """The log a restart finds after a machine crash: flushed batches, held snapshots and
        the epochs of what is left; a snapshot past the surviving end empties the log."""
        survivor = MemoryLog()
        keep = bisect_left(self._bases, self._flushed)
        survivor._batches = self._batches[:keep]
        survivor._bases = self._bases[:keep]
        survivor._start = self._start
        survivor._end = max(self._flushed, self._start)
        survivor._flushed = survivor._end
        survivor._cache = self._cache.copy()
        survivor._cache.truncate_from_end(survivor._end)
        survivor._snapshots = dict(self._snapshots)
        survivor.truncate_to_latest_snapshot()
        return survivor

    def batches(self) -> list[MemoryBatch]:
        """Every batch in the log, for checks and tests."""
        return list(self._batches)

    def epoch_entries(self) -> list[tuple[int, int]]:
        return list(zip(self._cache.epochs, self._cache.starts, strict=True))
