"""What the log cleaner's tests share: a node's log manager with its cleaner driven from the
test's own thread under a simulated clock, keyed appends, and the log read back record by
record."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.log.log_cleaner import CleanerConfig, LogCleaner
from brook.log.manager import LogManager
from brook.protocol.batch import iter_batches
from brook.protocol.records import build_batch, encode_record, iter_records

NOW = 1_700_000_000_000
Entry = tuple[bytes | None, bytes | None]  # (key, value); a None value is a tombstone


def compacted(**overrides: Any) -> LogConfig:
    """A compacted log's config: ``segment_bytes=1000`` sets ``segment.bytes``; cleaned as
    soon as anything is dirty."""
    values = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": 0.0}
    values.update({k.replace("_", "."): v for k, v in overrides.items()})
    return LogConfig.from_topic_config(values)


class Node:
    """One log directory with its manager and cleaner; ``now`` is the cleaner's clock."""

    def __init__(self, tmp_path: Path, **cleaner: Any) -> None:
        self.dir = tmp_path / "data"
        self.now = NOW
        self.manager = LogManager([str(self.dir)], {})
        self.manager.startup()
        self.cleaner = LogCleaner(
            self.manager,
            CleanerConfig(**{"dedupe_buffer_size": 1 << 22, **cleaner}),
            now_ms=lambda: self.now,
        )
        self.worker = self.cleaner.new_cleaner()

    def log(
        self, config: LogConfig | None = None, name: str = "t", partition: int = 0
    ) -> PartitionLog:
        return self.manager.get_or_create_log(name, partition, config or compacted())

    def clean(self) -> bool:
        """One cleaning of the dirtiest log, if one needs it."""
        return self.cleaner.clean_once(self.worker)

    def clean_until_done(self, limit: int = 50) -> int:
        for n in range(limit):
            if not self.clean():
                return n
        raise AssertionError(f"still cleaning after {limit} passes")

    def close(self) -> None:
        self.manager.shutdown()


def append(
    plog: PartitionLog,
    entries: list[Entry],
    timestamp: int = NOW,
    *,
    codec: int = 0,
    producer: tuple[int, int, int] | None = None,
) -> int:
    """One batch of ``entries`` (record i at ``timestamp + i``); ``producer``: (id, epoch,
    base sequence). Returns its base offset."""
    records = [encode_record(i, i, k, v, ()) for i, (k, v) in enumerate(entries)]
    pid, epoch, seq = producer or (-1, -1, -1)
    batch = build_batch(
        records,
        base_timestamp=timestamp,
        max_timestamp=timestamp + len(entries) - 1,
        codec=codec,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )
    return plog.append_as_leader(batch, 0, timestamp).first_offset


def read_all(plog: PartitionLog) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """(offset, key, value, timestamp) of every record from the log start, across gaps."""
    out = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 24).records
        assert isinstance(data, bytes)
        if not data:
            break
        for _, header in iter_batches(data):
            offset = header.next_offset
        out.extend((r.offset, r.key, r.value, r.timestamp) for _, r in iter_records(data))
    return out


def batches(plog: PartitionLog) -> list[Any]:
    """The header of every stored batch, oldest first."""
    out = []
    for segment in plog.segments():
        out.extend(h for _, h in segment.iter_headers())
    return out


def latest_per_key(history: list[tuple[int, Entry]]) -> dict[bytes, tuple[int, bytes | None]]:
    """key -> (offset, value) of the last record written for it."""
    latest: dict[bytes, tuple[int, bytes | None]] = {}
    for offset, (key, value) in history:
        assert key is not None
        latest[key] = (offset, value)
    return latest
