"""The Raft log on disk: ``__cluster_metadata-0`` as an ordinary ``PartitionLog`` (segments,
indexes, leader-epoch checkpoint) plus the quorum's snapshots beside it.

Batches cross this adapter as the log's own bytes: a leader's records are framed into one
RecordBatch v2 (its offsets and leader epoch written in) and appended like a follower's, so
the leader and the followers store identical bytes. A snapshot is a file
``<end offset:20>-<epoch:10>.checkpoint`` in the partition directory, written to ``.part``,
fsynced and renamed (Kafka's names); its content is opaque here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

from brook.log.checkpoints import fsync_path
from brook.log.log import PartitionLog
from brook.protocol.records import build_batch, encode_record, leader_change_batch

from .log import Batches, LeaderChangeRecord
from .messages import OffsetAndEpoch

SNAPSHOT_SUFFIX = ".checkpoint"
PART_SUFFIX = ".part"
DELETED_SUFFIX = ".deleted"


def snapshot_name(snapshot_id: OffsetAndEpoch) -> str:
    return f"{snapshot_id.offset:020d}-{snapshot_id.epoch:010d}{SNAPSHOT_SUFFIX}"


def parse_snapshot_name(name: str) -> OffsetAndEpoch | None:
    if not name.endswith(SNAPSHOT_SUFFIX):
        return None
    offset, dash, epoch = name[: -len(SNAPSHOT_SUFFIX)].partition("-")
    if not dash or not offset.isdigit() or not epoch.isdigit():
        return None
    return OffsetAndEpoch(int(offset), int(epoch))


def _now_ms() -> int:
    return int(time.time() * 1000)


class PartitionRaftLog:
    """``brook.raft.log.RaftLog`` over a ``PartitionLog``.

    With ``deferred_flush`` the core's ``flush()`` does nothing: the shell fsyncs on a worker
    thread (``flush_now``) and sends nothing that reports data not yet durable, so the core's
    rules hold without an fsync on the event loop (``flushed_offset`` is what truly is on
    disk)."""

    def __init__(self, log: PartitionLog, deferred_flush: bool = False) -> None:
        self.log = log
        self.deferred_flush = deferred_flush
        self.dir = Path(log.dir)
        self._snapshots: list[OffsetAndEpoch] = []
        self._downloading: dict[OffsetAndEpoch, Path] = {}
        for name in os.listdir(self.dir):
            path = self.dir / name
            if name.endswith(PART_SUFFIX) or name.endswith(SNAPSHOT_SUFFIX + DELETED_SUFFIX):
                path.unlink(missing_ok=True)  # a snapshot a crash left half-written or half-gone
                continue
            snapshot_id = parse_snapshot_name(name)
            if snapshot_id is not None:
                self._snapshots.append(snapshot_id)
        self._snapshots.sort(key=lambda s: s.offset)

    # ------------------------------------------------------------------ positions
    @property
    def start_offset(self) -> int:
        return self.log.log_start_offset

    @property
    def end_offset(self) -> int:
        return self.log.log_end_offset

    @property
    def flushed_offset(self) -> int:
        return self.log.recovery_point

    @property
    def last_fetched_epoch(self) -> int:
        end = self.log.log_end_offset
        if end > self.log.log_start_offset:
            epoch = self.log.epoch_cache.epoch_for_offset(end - 1)
            if epoch is not None:
                return epoch
        snapshot = self.latest_snapshot_id()
        if snapshot is not None and snapshot.offset == end:
            return snapshot.epoch
        return 0

    def end_offset_for_epoch(self, epoch: int) -> OffsetAndEpoch:
        latest = self.last_fetched_epoch
        if epoch >= latest:
            return OffsetAndEpoch(self.end_offset, latest)
        found_epoch, found_end = self.log.end_offset_for_epoch(epoch)
        if found_epoch < 0:
            earliest = self.earliest_snapshot_id()
            if earliest is not None and earliest.offset == self.start_offset:
                return earliest
            return OffsetAndEpoch(self.start_offset, 0)
        return OffsetAndEpoch(found_end, found_epoch)

    def epoch_at(self, offset: int) -> int:
        epoch = self.log.epoch_cache.epoch_for_offset(offset)
        return 0 if epoch is None else epoch

    # ------------------------------------------------------------------ writes
    def initialize_leader_epoch(self, epoch: int) -> None:
        latest = self.log.epoch_cache.latest_epoch()
        if latest is None or epoch > latest:
            self.log.epoch_cache.assign(epoch, self.log.log_end_offset)

    def append_as_leader(self, payloads: Sequence[bytes], epoch: int) -> tuple[int, int]:
        now = _now_ms()
        base = self.log.log_end_offset
        batch = build_batch(
            [encode_record(i, 0, None, v) for i, v in enumerate(payloads)],
            base_timestamp=now,
            max_timestamp=now,
            base_offset=base,
            partition_leader_epoch=epoch,
        )
        result = self.log.append_as_follower(batch)
        return result.first_offset, result.last_offset

    def append_leader_change(self, record: LeaderChangeRecord, epoch: int) -> int:
        offset = self.log.log_end_offset
        batch = leader_change_batch(
            record.leader_id,
            base_offset=offset,
            leader_epoch=epoch,
            timestamp=_now_ms(),
            voters=record.voters,
            granting_voters=record.granting_voters,
        )
        self.log.append_as_follower(batch)
        return offset

    def append_as_follower(self, batches: Batches) -> None:
        for blob in batches:
            self.log.append_as_follower(bytes(blob))  # type: ignore[arg-type]

    def read(self, offset: int, max_bytes: int) -> Batches:
        if offset >= self.log.log_end_offset:
            return []
        chunk = self.log.read(offset, max_bytes).records
        return [chunk] if chunk else []

    def truncate_to(self, offset: int) -> None:
        self.log.truncate_to(offset)

    def flush(self) -> None:
        if not self.deferred_flush:
            self.log.flush()

    def flush_now(self) -> None:
        """The real fsync (on a worker thread when flushes are deferred)."""
        self.log.flush()

    # ------------------------------------------------------------------ snapshots
    def latest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._snapshots[-1] if self._snapshots else None

    def earliest_snapshot_id(self) -> OffsetAndEpoch | None:
        return self._snapshots[0] if self._snapshots else None

    def snapshot_path(self, snapshot_id: OffsetAndEpoch) -> Path:
        return self.dir / snapshot_name(snapshot_id)

    def snapshot_size(self, snapshot_id: OffsetAndEpoch) -> int | None:
        if snapshot_id not in self._snapshots:
            return None
        try:
            return self.snapshot_path(snapshot_id).stat().st_size
        except FileNotFoundError:
            return None

    def read_snapshot(self, snapshot_id: OffsetAndEpoch, position: int, max_bytes: int) -> bytes:
        with open(self.snapshot_path(snapshot_id), "rb") as f:
            f.seek(position)
            return f.read(max_bytes)

    def read_whole_snapshot(self, snapshot_id: OffsetAndEpoch) -> bytes:
        return self.snapshot_path(snapshot_id).read_bytes()

    def begin_snapshot_download(self, snapshot_id: OffsetAndEpoch) -> bool:
        if snapshot_id in self._snapshots:
            return False
        part = self.dir / (snapshot_name(snapshot_id) + PART_SUFFIX)
        part.write_bytes(b"")
        self._downloading[snapshot_id] = part
        return True

    def append_snapshot_chunk(self, snapshot_id: OffsetAndEpoch, data: bytes) -> int:
        part = self._downloading[snapshot_id]
        with open(part, "ab") as f:
            f.write(data)
            return f.tell()

    def abort_snapshot_download(self, snapshot_id: OffsetAndEpoch) -> None:
        part = self._downloading.pop(snapshot_id, None)
        if part is not None:
            part.unlink(missing_ok=True)

    def finish_snapshot_download(self, snapshot_id: OffsetAndEpoch) -> None:
        part = self._downloading.pop(snapshot_id)
        self._freeze(part, snapshot_id)

    def create_snapshot(self, snapshot_id: OffsetAndEpoch, content: bytes) -> None:
        if snapshot_id in self._snapshots:
            return
        if not self.log.log_start_offset <= snapshot_id.offset <= self.log.log_end_offset:
            raise ValueError(f"snapshot end {snapshot_id.offset} is outside the log")
        part = self.dir / (snapshot_name(snapshot_id) + PART_SUFFIX)
        part.write_bytes(content)
        self._freeze(part, snapshot_id)

    def _freeze(self, part: Path, snapshot_id: OffsetAndEpoch) -> None:
        fd = os.open(part, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(part, self.snapshot_path(snapshot_id))
        fsync_path(self.dir)
        self._snapshots.append(snapshot_id)
        self._snapshots.sort(key=lambda s: s.offset)

    def truncate_to_latest_snapshot(self) -> bool:
        latest = self.latest_snapshot_id()
        if latest is None or latest.offset <= self.log.log_end_offset:
            return False
        self.log.truncate_fully_and_start_at(latest.offset)
        return True

    def delete_before_snapshot(self, snapshot_id: OffsetAndEpoch) -> bool:
        if snapshot_id not in self._snapshots or snapshot_id.offset <= self.log.log_start_offset:
            return False
        self.log.maybe_increment_log_start_offset(snapshot_id.offset)
        self.log.delete_old_segments(_now_ms(), snapshot_id.offset)
        for old in [s for s in self._snapshots if s.offset < snapshot_id.offset]:
            path = self.snapshot_path(old)
            doomed = path.with_name(path.name + DELETED_SUFFIX)
            os.replace(path, doomed)
            doomed.unlink(missing_ok=True)
            self._snapshots.remove(old)
        return True
