"""The metadata a stopped node's data directory holds: the end of its metadata log, the
offset up to which several nodes' logs agree, and the image its latest snapshot and the
records after it build. Used to check, after a run, that every node of a cluster reached the
same image (tests, ``bench/controller_failover.py``).

The directory must not be in use: the log is opened as after a clean shutdown, nothing is
recovered or written."""

from __future__ import annotations

from pathlib import Path

from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.protocol.batch import CONTROL_BIT
from brook.protocol.records import iter_records
from brook.raft.partition_log import PartitionRaftLog
from brook.raft.snapshot_file import decode_snapshot

from .image import MetadataImage
from .loader import MetadataLoader
from .quorum import CommittedBatch

METADATA_DIR = "__cluster_metadata-0"


def _open(data_dir: Path) -> PartitionLog:
    return PartitionLog.open(
        data_dir / METADATA_DIR, LogConfig.from_topic_config({}), had_clean_shutdown=True
    )


def metadata_log_end(data_dir: Path) -> int:
    """The end offset of the metadata log in ``data_dir``."""
    plog = _open(data_dir)
    try:
        return plog.log_end_offset
    finally:
        plog.close_files()


def agreed_log_end(data_dirs: list[Path]) -> int:
    """The end of the longest prefix the metadata logs in ``data_dirs`` agree on.

    By Raft's log matching, entries at the same offset with the same epoch are the same, so
    the prefix ends where two logs first hold different epochs. What follows it on some node
    is a deposed leader's uncommitted tail (a node that stopped before it learned of the new
    leader and truncated it). An offset below a node's log start is in that node's snapshot,
    which holds only committed records: it agrees with every log that has the offset."""
    logs = [_open(d) for d in data_dirs]
    try:
        end = min(plog.log_end_offset for plog in logs)
        while end > 0:
            epochs = {
                plog.epoch_cache.epoch_for_offset(end - 1)
                for plog in logs
                if plog.log_start_offset < end
            }
            if len(epochs) <= 1:
                return end
            end -= 1
        return end
    finally:
        for plog in logs:
            plog.close_files()


def metadata_image(data_dir: Path, up_to: int | None = None) -> MetadataImage:
    """The image of the latest snapshot in ``data_dir`` and every whole batch of the metadata
    log after it (those ending below ``up_to`` when given)."""
    plog = _open(data_dir)
    try:
        raft_log = PartitionRaftLog(plog)
        loader = MetadataLoader()
        start = plog.log_start_offset
        snapshot = raft_log.latest_snapshot_id()
        if snapshot is not None:
            path = str(raft_log.snapshot_path(snapshot))
            loader.handle_load_snapshot(
                snapshot.offset,
                decode_snapshot(raft_log.read_whole_snapshot(snapshot), snapshot, path),
            )
            start = snapshot.offset
        batches: dict[int, list[tuple[int, bytes]]] = {}
        ends: dict[int, tuple[int, int]] = {}
        for header, record in iter_records(plog.read(start, 1 << 30).records, skip_control=False):
            if header.base_offset < start or (up_to is not None and header.next_offset > up_to):
                continue
            ends[header.base_offset] = (header.last_offset, header.partition_leader_epoch)
            if not header.attributes & CONTROL_BIT and record.value is not None:
                batches.setdefault(header.base_offset, []).append((record.offset, record.value))
        for base in sorted(ends):
            last, epoch = ends[base]
            loader.handle_commit(CommittedBatch(base, last, epoch, batches.get(base, [])))
        return loader.image
    finally:
        plog.close_files()
