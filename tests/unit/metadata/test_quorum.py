"""The single-voter quorum: an append is committed once it is flushed, and a batch that could
not be flushed is not left in the metadata log."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from pathlib import Path

import pytest

from brook.log.config import LogConfig
from brook.log.file_pool import FilePool
from brook.log.log import PartitionLog
from brook.metadata.quorum import LocalQuorum
from brook.protocol.errors import Errors, KafkaError

CONFIG = LogConfig.from_topic_config({"index.interval.bytes": 0})


def _open(tmp_path: Path, pool: FilePool) -> PartitionLog:
    return PartitionLog.open(tmp_path / "__cluster_metadata-0", CONFIG, files=pool)


def test_appends_are_committed_in_order(tmp_path: Path) -> None:
    plog = _open(tmp_path, FilePool(4))
    quorum = LocalQuorum(plog, 1)
    assert asyncio.run(quorum.append([b"a", b"b"])) == 1
    assert asyncio.run(quorum.append([b"c"])) == 2
    assert plog.recovery_point == 3
    assert list(quorum.read_committed()) == [(0, b"a"), (1, b"b"), (2, b"c")]
    plog.close_files()


def test_a_batch_whose_flush_found_no_descriptor_is_taken_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The flush of a batch cannot get a descriptor for the log file (the pool had closed it
    and the process is out of them for a moment): the directory stays online, so the batch,
    which the image will never apply, is cut from the log before the next one follows it."""
    pool = FilePool(1)  # the index entry of each append closes the log file's descriptor
    plog = _open(tmp_path, pool)
    quorum = LocalQuorum(plog, 1)
    asyncio.run(quorum.append([b"first"]))
    log_file = str(plog.segments()[-1].log_path)
    real_open = os.open
    refused: list[str] = []

    def open_(path: str | Path, flags: int, mode: int = 0o777) -> int:
        on_worker = threading.current_thread() is not threading.main_thread()
        if on_worker and not refused and str(path) == log_file:
            refused.append(log_file)
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), log_file)
        return real_open(path, flags, mode)

    with monkeypatch.context() as patch:
        patch.setattr(os, "open", open_)
        with pytest.raises(KafkaError) as info:
            asyncio.run(quorum.append([b"unflushed"]))
    assert refused == [log_file]  # the flush's descriptor, on its worker thread
    assert info.value.code == Errors.KAFKA_STORAGE_ERROR
    assert not plog.failures.is_offline(plog.log_dir)
    assert plog.log_end_offset == 1
    assert asyncio.run(quorum.append([b"second"])) == 1
    assert list(quorum.read_committed()) == [(0, b"first"), (1, b"second")]
    plog.close_files()
    reopened = LocalQuorum(_open(tmp_path, pool), 1)
    assert list(reopened.read_committed()) == [(0, b"first"), (1, b"second")]
    reopened.log.close_files()
