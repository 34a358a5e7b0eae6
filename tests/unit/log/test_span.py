"""Stored spans (fetch responses sent from the segment a chunk at a time) read through the
node's descriptor pool and the log's I/O guard: a descriptor the pool closed between chunks is
reopened; an offline directory answers KAFKA_STORAGE_ERROR without opening anything there;
an I/O error takes the directory offline; running out of descriptors does not."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from brook.log.dir_failure import LogDirFailureChannel
from brook.log.file_pool import FilePool
from brook.log.log import PartitionLog
from brook.log.segment import segment_path
from brook.log.span import SpanGone, StoredSpan
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch

NOW = 1_700_000_000_000
CHUNK = 16 * 1024
OpenLog = Callable[..., PartitionLog]
Exhausted = Callable[[], contextlib.AbstractContextManager[None]]


def _filled(plog: PartitionLog, batches: int = 40) -> bytes:
    """About 4 KiB a batch, so that the whole log is read as a span; returns the bytes."""
    for i in range(batches):
        values = [f"{i}-{j}".encode() * 200 for j in range(4)]
        plog.append_as_leader(build_simple_batch(values, timestamp=NOW), 0, NOW)
    data = plog.read(0, 1 << 24).records
    assert isinstance(data, bytes) and len(data) > 4 * CHUNK
    return data


def _span(plog: PartitionLog) -> StoredSpan:
    span = plog.read(0, 1 << 24, spans=True).records
    assert isinstance(span, StoredSpan)
    return span


def _storage_error(call: Callable[[], object]) -> KafkaError:
    with pytest.raises(KafkaError) as info:
        call()
    assert info.value.code == Errors.KAFKA_STORAGE_ERROR
    return info.value


def test_a_descriptor_the_pool_closed_between_chunks_is_reopened(open_log: OpenLog) -> None:
    pool = FilePool(2)
    plog = open_log("t-0", files=pool)
    others = [open_log(f"o-{i}", files=pool) for i in range(3)]
    stored = _filled(plog)
    span = _span(plog)
    segment = plog.segments()[-1]
    sent = bytearray(span.read(0, CHUNK))
    while len(sent) < len(span):
        # Other logs take the pool's two descriptors: this segment's is closed meanwhile.
        for other in others:
            other.append_as_leader(build_simple_batch([b"x"], timestamp=NOW), 0, NOW)
        assert not segment._file.is_open
        opens = pool.opens
        sent += span.read(len(sent), min(CHUNK, len(span) - len(sent)))
        assert pool.opens == opens + 1 and pool.open_count <= pool.capacity
    assert bytes(sent) == stored


def test_reading_a_span_leaves_a_flushed_segment_clean(open_log: OpenLog) -> None:
    """A span only reads: sending it leaves nothing for the next flush to fsync."""
    plog = open_log(files=FilePool(8))
    _filled(plog)
    span = _span(plog)
    segment = plog.segments()[-1]
    segment.flush()
    assert not segment._file.dirty
    span.read(0, len(span))
    assert not segment._file.dirty


@pytest.mark.parametrize("descriptor_open", [True, False], ids=["open", "closed-by-pool"])
def test_a_span_in_a_directory_gone_offline_answers_the_storage_error(
    open_log: OpenLog, monkeypatch: pytest.MonkeyPatch, descriptor_open: bool
) -> None:
    """The directory fails (another log's write) between two chunks: the rest of the span is
    refused with KAFKA_STORAGE_ERROR whether or not the segment still holds a descriptor, and
    nothing is opened or created in the directory."""
    channel = LogDirFailureChannel()
    pool = FilePool(8, failures=channel)
    plog = open_log("t-0", files=pool, failures=channel)
    failing = open_log("f-0", files=pool, failures=channel)
    _filled(plog)
    span = _span(plog)
    span.read(0, CHUNK)
    segment = plog.segments()[-1]
    if not descriptor_open:
        segment.release_files()
    with monkeypatch.context() as patch:

        def writev(*_args: object) -> int:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

        patch.setattr(os, "writev", writev)
        _storage_error(lambda: failing.append_as_leader(build_simple_batch([b"y"]), 0, NOW))
    assert channel.is_offline(plog.log_dir)
    segment_path(plog.dir, 0, ".log").unlink()  # a reopen would fail, a create would show
    opens = pool.opens
    error = _storage_error(lambda: span.read(CHUNK, CHUNK))
    assert "offline log directory" in str(error)
    assert "offline log directory" in str(_storage_error(lambda: segment.read_span(0, 10, 0)))
    assert pool.opens == opens
    assert not segment_path(plog.dir, 0, ".log").exists()


def test_an_io_error_reading_a_span_takes_the_directory_offline(
    open_log: OpenLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    plog = open_log(files=FilePool(8))
    _filled(plog)
    span = _span(plog)
    with monkeypatch.context() as patch:

        def pread(*_args: object) -> bytes:
            raise OSError(errno.EIO, os.strerror(errno.EIO))

        patch.setattr(os, "pread", pread)
        error = _storage_error(lambda: span.read(0, CHUNK))
    assert f"Error while reading from topic-0 in dir {plog.log_dir}" in str(error)
    assert plog.failures.is_offline(plog.log_dir)
    assert "offline log directory" in str(_storage_error(lambda: span.read(0, CHUNK)))


def test_out_of_descriptors_for_a_span_leaves_the_directory_online(
    open_log: OpenLog, out_of_descriptors: Exhausted
) -> None:
    """EMFILE reopening the segment for the next chunk (clients hold every descriptor, the
    pool none of its own): that response fails with KAFKA_STORAGE_ERROR, the directory
    stays online, and the same span reads on once descriptors are free."""
    pool = FilePool(8)
    plog = open_log(files=pool)
    stored = _filled(plog)
    span = _span(plog)
    head = span.read(0, CHUNK)
    for segment in plog.segments():
        segment.release_files()
    assert pool.open_count == 0
    with out_of_descriptors():
        error = _storage_error(lambda: span.read(CHUNK, CHUNK))
    assert os.strerror(errno.EMFILE) in str(error)
    assert not plog.failures.is_offline(plog.log_dir)
    assert head + span.read(CHUNK, len(span) - CHUNK) == stored


def test_a_span_of_a_deleted_log_is_gone_not_a_disk_failure(open_log: OpenLog) -> None:
    """DeleteTopics closes the files before renaming and removing the directory: the span is
    gone (the connection is closed), and the directory stays online."""
    plog = open_log(files=FilePool(8))
    _filled(plog)
    span = _span(plog)
    plog.delete()
    with pytest.raises(SpanGone):
        span.read(0, CHUNK)
    assert not plog.failures.is_offline(plog.log_dir)
    assert not Path(plog.dir).exists()
