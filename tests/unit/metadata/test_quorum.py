"""The single-voter quorum: an append is committed once it is flushed, and a flush that could
not get a file descriptor leaves its batch uncommitted until a later flush works."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from brook.log.config import LogConfig
from brook.log.file_pool import FilePool
from brook.log.log import PartitionLog
from brook.metadata.quorum import CommittedBatch, LeaderAndEpoch, LocalQuorum

CONFIG = LogConfig.from_topic_config({"index.interval.bytes": 0})


class Recorder:
    def __init__(self) -> None:
        self.committed: list[tuple[int, bytes]] = []
        self.leaders: list[LeaderAndEpoch] = []

    def handle_commit(self, batch: CommittedBatch) -> None:
        self.committed.extend(batch.records)

    def handle_load_snapshot(self, end_offset: int, records: Sequence[bytes]) -> None:
        raise AssertionError("a quorum of one has no snapshots to load")

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leaders.append(leader)


def _open(tmp_path: Path, pool: FilePool) -> PartitionLog:
    return PartitionLog.open(tmp_path / "__cluster_metadata-0", CONFIG, files=pool)


def _started(plog: PartitionLog) -> tuple[LocalQuorum, Recorder]:
    quorum = LocalQuorum(plog, 1)
    recorder = Recorder()
    quorum.register_listener(recorder)
    quorum.start()
    return quorum, recorder


def test_appends_are_committed_in_order_once_flushed(tmp_path: Path) -> None:
    plog = _open(tmp_path, FilePool(4))
    quorum, recorder = _started(plog)
    assert recorder.leaders == [LeaderAndEpoch(1, quorum.epoch)]

    async def run() -> None:
        assert quorum.append(quorum.epoch, [b"a", b"b"]) == 1
        assert quorum.append(quorum.epoch, [b"c"]) == 2
        assert recorder.committed == []  # written, not yet durable
        await quorum.drain()

    asyncio.run(run())
    assert plog.recovery_point == 3
    assert quorum.high_watermark == 3
    assert recorder.committed == [(0, b"a"), (1, b"b"), (2, b"c")]
    plog.close_files()
    again, replayed = _started(_open(tmp_path, FilePool(4)))
    assert replayed.committed == [(0, b"a"), (1, b"b"), (2, b"c")]
    again.log.close_files()


def test_a_flush_that_found_no_descriptor_is_retried_before_anything_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flush cannot get a descriptor for the log file (the pool had closed it and the
    process is out of them for a moment): the directory stays online, nothing is committed
    meanwhile, and the retried flush commits the batch."""
    pool = FilePool(1)  # the index entry of each append closes the log file's descriptor
    plog = _open(tmp_path, pool)
    quorum, recorder = _started(plog)
    log_file = str(plog.segments()[-1].log_path)
    real_open = os.open
    refused: list[str] = []

    def open_(path: str | Path, flags: int, mode: int = 0o777) -> int:
        on_worker = threading.current_thread() is not threading.main_thread()
        if on_worker and not refused and str(path) == log_file:
            refused.append(log_file)
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), log_file)
        return real_open(path, flags, mode)

    async def run() -> None:
        quorum.append(quorum.epoch, [b"first"])
        await quorum.drain()
        assert recorder.committed == [(0, b"first")]
        with monkeypatch.context() as patch:
            patch.setattr(os, "open", open_)
            quorum.append(quorum.epoch, [b"second"])
            await quorum.drain()

    asyncio.run(run())
    assert refused == [log_file]  # the flush's descriptor, on its worker thread
    assert not plog.failures.is_offline(plog.log_dir)
    assert quorum.failure is None
    assert recorder.committed == [(0, b"first"), (1, b"second")]
    assert plog.recovery_point == 2
    plog.close_files()
