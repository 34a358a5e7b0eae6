"""An I/O error on a log directory: the failing write is undone, the directory goes offline
for good (the channel tells its handler once), every later operation of the logs in it is
refused with KAFKA_STORAGE_ERROR, and reopening the log finds every record written before
the failure and nothing of the failed one. The same for every file a log writes: segments,
indexes, producer snapshots, the leader-epoch checkpoint, and for fsync (EIO)."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from brook.log.config import LogConfig
from brook.log.dir_failure import LogDirFailureChannel
from brook.log.file_pool import FilePool
from brook.log.log import PartitionLog
from brook.log.segment import LogSegment, segment_path
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch, iter_records

NOW = 1_700_000_000_000
OpenLog = Callable[..., PartitionLog]
MakeConfig = Callable[..., LogConfig]
Exhausted = Callable[[], contextlib.AbstractContextManager[None]]


def _batch(tag: str, count: int = 3) -> bytes:
    return build_simple_batch([f"{tag}-{i}".encode() * 20 for i in range(count)], timestamp=NOW)


def _values(plog: PartitionLog) -> list[bytes]:
    values: list[bytes] = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 24).records
        records = [r for _, r in iter_records(data) if r.offset >= offset]
        values += [r.value or b"" for r in records]
        offset = records[-1].offset + 1
    return values


def _error(code: int = errno.ENOSPC) -> OSError:
    return OSError(code, os.strerror(code))


def _raise(error: OSError) -> Callable[..., int]:
    def fail(*_args: object) -> int:
        raise error

    return fail


def _storage_error(call: Callable[[], object]) -> KafkaError:
    with pytest.raises(KafkaError) as info:
        call()
    assert info.value.code == Errors.KAFKA_STORAGE_ERROR
    return info.value


def _files_size(directory: Path, suffix: str) -> int:
    return sum(p.stat().st_size for p in directory.glob(f"*{suffix}"))


@pytest.mark.parametrize("short", [False, True])
def test_a_write_cut_short_by_a_full_disk_takes_the_directory_offline(
    open_log: OpenLog, monkeypatch: pytest.MonkeyPatch, short: bool
) -> None:
    plog = open_log()
    for tag in ("a", "b", "c"):
        plog.append_as_leader(_batch(tag), 0, NOW)
    end, size = plog.log_end_offset, _files_size(plog.dir, ".log")
    real_write = os.write
    with monkeypatch.context() as patch:

        def writev(fd: int, parts: list[bytes]) -> int:
            written = real_write(fd, b"".join(parts)[:40])
            if short:  # Linux: the part that fits, then ENOSPC on the next call
                patch.setattr(os, "write", _raise(_error()))
                return written
            raise _error()

        patch.setattr(os, "writev", writev)
        error = _storage_error(lambda: plog.append_as_leader(_batch("torn"), 0, NOW))
    assert f"Error while appending records to topic-0 in dir {plog.log_dir}" in str(error)
    assert "No space left on device" in str(error)
    assert plog.failures.is_offline(plog.log_dir)
    assert plog.log_end_offset == end
    assert _files_size(plog.dir, ".log") == size
    # nothing is written, read or flushed any more, even with room again
    for call in (
        lambda: plog.append_as_leader(_batch("late"), 0, NOW),
        lambda: plog.read(0, 1000),
        plog.flush,
    ):
        assert "offline log directory" in str(_storage_error(call))
    assert _files_size(plog.dir, ".log") == size
    plog.close_files()

    reopened = open_log(had_clean_shutdown=False)
    assert _values(reopened) == [f"{t}-{i}".encode() * 20 for t in "abc" for i in range(3)]
    assert reopened.append_as_leader(_batch("d"), 0, NOW).first_offset == end


@pytest.mark.parametrize(
    ("target", "rolls", "epoch"),
    [
        (".index", False, 0),  # the offset index entry an append adds (index.interval.bytes=0)
        (".log", True, 0),  # the new segment of a roll
        (".snapshot.tmp", True, 0),  # the producer snapshot a roll writes
        ("leader-epoch-checkpoint.tmp", False, 1),  # the first batch of a new leader epoch
    ],
)
def test_any_file_of_the_log_failing_undoes_the_batch(
    open_log: OpenLog,
    make_config: MakeConfig,
    monkeypatch: pytest.MonkeyPatch,
    target: str,
    rolls: bool,
    epoch: int,
) -> None:
    config = make_config(index_interval_bytes=0, segment_bytes=1500)
    plog = open_log(config=config)
    values: list[bytes] = []
    for tag in ("a", "b"):
        plog.append_as_leader(_batch(tag), 0, NOW)
        values += [f"{tag}-{i}".encode() * 20 for i in range(3)]
    end = plog.log_end_offset
    real_open, real_write = os.open, os.write

    def open_(path: str | Path, flags: int, mode: int = 0o777) -> int:
        if target != ".index" and str(path).endswith(target):
            raise _error(errno.EROFS)
        return real_open(path, flags, mode)

    def write(fd: int, data: bytes) -> int:
        index = plog.segments()[-1].offset_index.path
        if target == ".index" and os.readlink(f"/proc/self/fd/{fd}") == str(index):
            real_write(fd, bytes(data)[:3])  # a torn entry
            raise _error()
        return real_write(fd, data)

    # a batch too big for the segment (1500 bytes) rolls it
    batch = build_simple_batch([b"x" * 1200], timestamp=NOW) if rolls else _batch("x")
    with monkeypatch.context() as patch:
        patch.setattr(os, "open", open_)
        patch.setattr(os, "write", write)
        _storage_error(lambda: plog.append_as_leader(batch, epoch, NOW))
    assert plog.failures.is_offline(plog.log_dir)
    assert plog.log_end_offset == end
    plog.close_files()

    reopened = open_log(config=config, had_clean_shutdown=False)
    assert _values(reopened) == values
    assert reopened.latest_epoch() == 0  # no epoch of the failed batch is kept
    assert reopened.append_as_leader(_batch("c"), 1, NOW).first_offset == end


def test_an_fsync_failure_is_fatal_for_the_directory(
    open_log: OpenLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = open_log()
    plog.append_as_leader(_batch("a"), 0, NOW)
    plog.flush()
    plog.append_as_leader(_batch("b"), 0, NOW)
    recovery_point = plog.recovery_point
    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", _raise(_error(code=errno.EIO)))
        error = _storage_error(plog.flush)
    assert "Error while flushing topic-0" in str(error) and "Input/output error" in str(error)
    assert plog.recovery_point == recovery_point
    # a later fsync may succeed without the pages the failed one lost: never trusted again
    assert "offline log directory" in str(_storage_error(plog.flush))
    assert plog.recovery_point == recovery_point


def test_a_flush_fails_when_the_directory_fails_meanwhile(
    open_log: OpenLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another thread's failure (a flush of another log in the directory) while this flush
    runs: its own fsyncs succeed, but what it covers may not be durable."""
    plog = open_log()
    plog.append_as_leader(_batch("a"), 0, NOW)
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        real_fsync(fd)
        plog.failures.fail(plog.log_dir, "flushing another log", _error(code=errno.EIO))

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", fsync)
        _storage_error(plog.flush)
    assert plog.recovery_point == 0


def test_the_channel_tells_its_handler_once_per_directory(tmp_path: Path) -> None:
    channel = LogDirFailureChannel()
    a, b = tmp_path / "a", tmp_path / "b"
    error = channel.fail(a, "writing x", _error())
    assert error.code == Errors.KAFKA_STORAGE_ERROR
    assert str(error) == f"KAFKA_STORAGE_ERROR: Error while writing x in dir {a}: {_error()}"
    told: list[Path] = []
    channel.set_handler(told.append)
    assert told == [a]  # what failed before the handler came
    channel.fail(a, "writing y", _error())
    channel.fail(b, "reading z", _error(code=errno.EIO))
    assert told == [a, b]
    assert channel.is_offline(a) and channel.is_offline(b)
    assert not channel.is_offline(tmp_path / "c")
    assert sorted(channel.offline_dirs()) == [a, b]


def _release_descriptors(plog: PartitionLog) -> None:
    for segment in plog.segments():
        segment.release_files()


def test_out_of_descriptors_is_not_a_failure_of_the_directory(
    open_log: OpenLog, out_of_descriptors: Exhausted
) -> None:
    """EMFILE when a segment file is reopened (clients hold every descriptor, the pool has
    none of its own left to close) fails the request but leaves the directory online: once
    descriptors are free again, the log goes on where it was."""
    pool = FilePool(8)
    plog = open_log(files=pool)
    for tag in ("a", "b"):
        plog.append_as_leader(_batch(tag), 0, NOW)
    end = plog.log_end_offset
    _release_descriptors(plog)
    assert pool.open_count == 0
    with out_of_descriptors():
        appended = _storage_error(lambda: plog.append_as_leader(_batch("c"), 0, NOW))
        read = _storage_error(lambda: plog.read(0, 1000))
        flushed = _storage_error(plog.flush)  # its fsyncs need a descriptor too
    for error in (appended, read, flushed):
        assert os.strerror(errno.EMFILE) in str(error)
    assert not plog.failures.is_offline(plog.log_dir)
    assert plog.log_end_offset == end and plog.recovery_point == 0
    assert plog.append_as_leader(_batch("c"), 0, NOW).first_offset == end
    plog.flush()  # the flush that could not run is done by the next one
    assert plog.recovery_point == plog.log_end_offset
    values = [f"{t}-{i}".encode() * 20 for t in "abc" for i in range(3)]
    assert _values(plog) == values
    plog.close()
    assert _values(open_log(had_clean_shutdown=True, files=pool)) == values


def test_a_pooled_file_in_an_offline_directory_is_neither_reopened_nor_created(
    open_log: OpenLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once one log's failure takes the directory offline, the pool opens nothing there
    again for any log: not a descriptor it had closed, not a sync's spare one, not the file
    of a new segment."""
    channel = LogDirFailureChannel()
    pool = FilePool(8, failures=channel)
    failing = open_log("a-0", files=pool, failures=channel)
    other = open_log("b-0", files=pool, failures=channel)
    for plog in (failing, other):
        plog.append_as_leader(_batch("x"), 0, NOW)
    _release_descriptors(other)  # unflushed, its descriptors closed
    with monkeypatch.context() as patch:
        patch.setattr(os, "writev", _raise(_error()))
        _storage_error(lambda: failing.append_as_leader(_batch("y"), 0, NOW))
    assert channel.is_offline(other.log_dir)
    opens = pool.opens
    segment = other.segments()[-1]
    for call in (
        lambda: segment.read(0, 1000, None, True),
        segment.flush,
        lambda: LogSegment(
            other.dir, 100, index_interval_bytes=0, max_index_size=4096, create=True, files=pool
        ),
    ):
        assert "offline log directory" in str(_storage_error(call))
    assert pool.opens == opens
    assert not segment_path(other.dir, 100, ".log").exists()
    assert "offline log directory" in str(_storage_error(other.flush))


def test_a_failed_append_that_cannot_be_cut_back_takes_the_directory_offline(
    open_log: OpenLog, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Out of descriptors between the batch's write and its index entry, and still out of
    them for the roll back: the log file ends with a batch the log does not count, and
    later appends would land after it. That leaves the directory offline after all."""
    pool = FilePool(1)  # the index's reopening closes the log file's descriptor
    plog = open_log(config=make_config(index_interval_bytes=0), files=pool)
    plog.append_as_leader(_batch("a"), 0, NOW)
    end = plog.log_end_offset
    real_open = os.open

    def open_(path: str | Path, flags: int, mode: int = 0o777) -> int:
        if str(path).endswith((".index", ".log")):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(path))
        return real_open(path, flags, mode)

    segment = plog.segments()[-1]
    segment.offset_index.release()
    assert segment._fd >= 0  # the log file holds the pool's one descriptor, the index none
    with monkeypatch.context() as patch:
        patch.setattr(os, "open", open_)
        error = _storage_error(lambda: plog.append_as_leader(_batch("b"), 0, NOW))
    assert "could not be cut back" in str(error)
    assert plog.failures.is_offline(plog.log_dir)
    assert plog.log_end_offset == end
    plog.close_files()
    reopened = open_log(config=make_config(index_interval_bytes=0), had_clean_shutdown=False)
    # recovery finds whole batches only; the second was never acknowledged
    assert _values(reopened)[:3] == [f"a-{i}".encode() * 20 for i in range(3)]


def test_the_channel_keeps_a_directory_online_when_descriptors_run_out(tmp_path: Path) -> None:
    channel = LogDirFailureChannel()
    told: list[Path] = []
    channel.set_handler(told.append)
    for code in (errno.EMFILE, errno.ENFILE):
        error = channel.fail(tmp_path, "writing x", _error(code))
        assert error.code == Errors.KAFKA_STORAGE_ERROR and os.strerror(code) in str(error)
    assert told == [] and not channel.is_offline(tmp_path)
    channel.check(tmp_path / "t-0" / "00000000000000000000.log")  # nothing offline: no error
    channel.fail(tmp_path, "writing y", _error(errno.EIO))
    assert told == [tmp_path]
    with pytest.raises(KafkaError) as info:
        channel.check(tmp_path / "t-0" / "00000000000000000000.log")
    assert str(info.value) == (
        f"KAFKA_STORAGE_ERROR: t-0/00000000000000000000.log is in an offline log directory "
        f"{tmp_path}"
    )
    channel.check(tmp_path.parent / "elsewhere" / "t-0" / "x.log")
