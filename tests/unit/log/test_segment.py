"""A log segment: appends with sparse indexes, reads, lookups, truncation, roll rules and
recovery."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from brook.log.config import LogConfig
from brook.log.file_pool import FilePool
from brook.log.offset_index import CorruptIndexError
from brook.log.segment import CorruptSegmentError, LogSegment, segment_path
from brook.log.span import SpanGone, StoredSpan
from brook.protocol.batch import BatchHeader, read_header
from brook.protocol.records import build_batch, encode_record, iter_records

BASE = 100


def _segment(directory: Path, *, interval: int = 0, create: bool = True, **kw: int) -> LogSegment:
    directory.mkdir(exist_ok=True)
    return LogSegment(
        directory,
        BASE,
        index_interval_bytes=interval,
        max_index_size=kw.pop("max_index_size", 4096),
        created_ms=kw.pop("created_ms", 0),
        create=create,
        **kw,
    )


def _batch(base: int, count: int = 3, ts: int = 1000, size: int = 20) -> bytes:
    records = [encode_record(i, i, None, bytes([65 + i % 26]) * size) for i in range(count)]
    return build_batch(records, base_timestamp=ts, max_timestamp=ts + count - 1, base_offset=base)


def _fill(segment: LogSegment, batches: int, count: int = 3) -> list[bytes]:
    written = []
    offset = segment.base_offset
    for i in range(batches):
        data = _batch(offset, count, ts=1000 + 10 * i)
        header = read_header(data)
        segment.append([data], len(data), header.last_offset, header.max_timestamp)
        written.append(data)
        offset = header.next_offset
    return written


def test_append_and_read_back(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    written = _fill(segment, 5)
    assert segment.next_offset == BASE + 15
    assert segment.size == sum(map(len, written))
    assert segment.log_path.name == "00000000000000000100.log"
    data, next_offset = segment.read(0, 10**6, None, True)
    assert data == b"".join(written) and next_offset == BASE + 15


def test_index_entries_follow_the_interval(tmp_path: Path) -> None:
    batch_size = len(_batch(0))
    segment = _segment(tmp_path, interval=2 * batch_size)
    _fill(segment, 9)
    # an entry each time more than the interval was written since the last one
    entries = [segment.offset_index.entry(i) for i in range(len(segment.offset_index))]
    assert entries == [(BASE + 11, 3 * batch_size), (BASE + 20, 6 * batch_size)]
    assert segment.time_index.last_entry() == (1000 + 60 + 2, BASE + 20)
    every = _segment(tmp_path / "every")
    _fill(every, 3)
    assert len(every.offset_index) == 2  # none for the first batch, as Kafka


def test_find_batch_and_position(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    written = _fill(segment, 4)
    found = segment.find_batch(BASE + 7)
    assert found is not None
    pos, header = found
    assert pos == sum(map(len, written[:2])) and header.base_offset == BASE + 6
    assert segment.find_position(BASE + 7) == pos
    assert segment.find_position(BASE + 6) == pos
    assert segment.find_position(BASE) == 0
    assert segment.find_position(BASE + 12) is None


def test_read_limits(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    written = _fill(segment, 4)
    size = len(written[0])
    data, nxt = segment.read(0, size * 2 + 5, None, True)
    assert data == written[0] + written[1] and nxt == BASE + 6
    data, nxt = segment.read(0, 10, None, True)
    assert data == written[0] and nxt == BASE + 3
    assert segment.read(0, 10, None, False) == (b"", -1)
    data, nxt = segment.read(size, 10**6, BASE + 9, True)
    assert data == written[1] + written[2] and nxt == BASE + 9
    assert segment.read(0, 10**6, BASE + 2, True) == (b"", -1)
    assert segment.read(segment.size, 100, None, True) == (b"", -1)


def test_large_reads_use_the_index(tmp_path: Path) -> None:
    segment = _segment(tmp_path, interval=4096)
    written = []
    offset = BASE
    for i in range(200):
        data = _batch(offset, 4, ts=i, size=200)
        header = read_header(data)
        segment.append([data], len(data), header.last_offset, header.max_timestamp)
        written.append(data)
        offset = header.next_offset
    size = len(written[0])
    for start in (0, 3, 17):
        for max_bytes in (40_000, 100_000, 10**7):
            data, nxt = segment.read(start * size, max_bytes, None, True)
            whole = min(max_bytes // size, 200 - start)
            assert data == b"".join(written[start : start + whole])
            assert nxt == BASE + 4 * (start + whole)
            data, nxt = segment.read(start * size, max_bytes, BASE + 4 * (start + 5) + 1, True)
            assert data == b"".join(written[start : start + min(5, whole)])


def _span_bytes(span: StoredSpan, chunk: int) -> bytes:
    return b"".join(
        span.read(pos, min(chunk, len(span) - pos)) for pos in range(0, len(span), chunk)
    )


def test_large_reads_for_fetch_responses_are_spans_of_the_same_bytes(tmp_path: Path) -> None:
    segment = _segment(tmp_path, interval=4096)
    _fill(segment, 400, count=4)  # about 200 bytes a batch
    for position, max_bytes, max_offset in ((0, 10**7, None), (0, 50_000, None), (0, 10**7, 900)):
        plain = segment.read(position, max_bytes, max_offset, True)
        spanned = segment.read(position, max_bytes, max_offset, True, spans=True)
        assert isinstance(spanned[0], StoredSpan) and spanned[1] == plain[1]
        assert len(spanned[0]) == len(plain[0]) > 32 * 1024
        assert _span_bytes(spanned[0], 7000) == plain[0]
    # Small reads are read at once, as before.
    small, _ = segment.read(0, 2000, None, True, spans=True)
    assert isinstance(small, bytes) and small == segment.read(0, 2000, None, True)[0]


def test_a_span_is_gone_once_its_segment_is_truncated_or_closed(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    _fill(segment, 400, count=4)
    span, _ = segment.read(0, 10**7, None, True, spans=True)
    assert isinstance(span, StoredSpan)
    assert span.read(0, 100) == segment.read_batch(0, read_header(span.read(0, 61)))[:100]
    segment.truncate_to(BASE + 1200, 0)
    while segment.size < len(span):  # the same positions again, holding other bytes
        other = _batch(segment.next_offset, 4, size=30)
        header = read_header(other)
        segment.append([other], len(other), header.last_offset, header.max_timestamp)
    with pytest.raises(SpanGone):
        span.read(0, 100)
    again, _ = segment.read(0, 10**7, None, True, spans=True)
    assert isinstance(again, StoredSpan)
    segment.close()
    with pytest.raises(SpanGone):
        again.read(0, 100)


def test_timestamp_lookups(tmp_path: Path) -> None:
    segment = _segment(tmp_path, interval=100)
    _fill(segment, 6)  # batch i: records at 1000+10i .. 1000+10i+2
    assert segment.max_timestamp == 1052
    assert segment.find_offset_by_timestamp(1021, BASE) == (BASE + 7, 1021, -1)
    assert segment.find_offset_by_timestamp(1023, BASE) == (BASE + 9, 1030, -1)
    assert segment.find_offset_by_timestamp(0, BASE + 4) == (BASE + 4, 1011, -1)
    assert segment.find_offset_by_timestamp(2000, BASE) is None
    assert segment.max_timestamp_record() == (BASE + 17, 1052, -1)


def test_truncate_to(tmp_path: Path) -> None:
    segment = _segment(tmp_path, interval=0)
    written = _fill(segment, 6)
    removed = segment.truncate_to(BASE + 10, now_ms=5)
    assert removed == sum(map(len, written[3:]))
    assert segment.next_offset == BASE + 9
    assert segment.max_timestamp == 1022
    assert all(segment.offset_index.entry(i)[0] < BASE + 9 for i in range(2))
    assert segment.time_index.last_entry()[1] < BASE + 9
    segment.truncate_to(BASE, now_ms=5)
    assert segment.size == 0 and segment.rolling_timestamp is None and segment.created_ms == 5


def _config(**values: int) -> LogConfig:
    return LogConfig.from_topic_config({k.replace("_", "."): v for k, v in values.items()})


def test_roll_rules(tmp_path: Path) -> None:
    segment = _segment(tmp_path, created_ms=0)
    config = _config(segment_bytes=1000, segment_ms=100)
    assert not segment.should_roll(10**6, 10**9, BASE, 10**9, config)  # never when empty
    _fill(segment, 1)  # first batch max timestamp 1002
    size = segment.size
    assert segment.should_roll(1000 - size + 1, 1002, BASE + 3, 0, config)
    assert not segment.should_roll(1000 - size, 1002, BASE + 3, 0, config)
    # time counts from the first batch's max timestamp, not from the clock
    assert not segment.should_roll(10, 1102, BASE + 3, 10**9, config)
    assert segment.should_roll(10, 1103, BASE + 3, 0, config)
    assert segment.should_roll(10, 1002, BASE + 2**31, 0, config)
    jittered = _segment(tmp_path / "jittered", roll_jitter_ms=50)
    _fill(jittered, 1)
    assert jittered.should_roll(10, 1053, BASE + 3, 0, config)


def test_roll_uses_creation_time_without_timestamps(tmp_path: Path) -> None:
    segment = _segment(tmp_path, created_ms=1000)
    data = _batch(BASE, ts=-1)
    segment.append([data], len(data), BASE + 2, -1)
    config = _config(segment_ms=100)
    assert not segment.should_roll(10, -1, BASE + 3, 1100, config)
    assert segment.should_roll(10, -1, BASE + 3, 1101, config)


def test_full_index_rolls(tmp_path: Path) -> None:
    segment = _segment(tmp_path, max_index_size=24)
    _fill(segment, 3)
    assert segment.indexes_full
    assert segment.should_roll(10, 0, BASE + 10, 0, _config())


def test_reopen_loads_the_end(tmp_path: Path) -> None:
    segment = _segment(tmp_path, interval=150)
    written = _fill(segment, 7)
    segment.on_become_inactive()
    segment.close()
    reopened = _segment(tmp_path, interval=150, create=False)
    reopened.load()
    assert reopened.next_offset == BASE + 21
    assert reopened.max_timestamp == 1062
    assert reopened.rolling_timestamp == 1002
    assert reopened.read(0, 10**6, None, True)[0] == b"".join(written)
    reopened.close()


def test_load_detects_a_torn_tail_and_a_stale_index(tmp_path: Path) -> None:
    segment = _segment(tmp_path, interval=0)
    _fill(segment, 4)
    segment.close()
    with open(segment.log_path, "r+b") as f:
        f.truncate(segment.size - 5)
    torn = _segment(tmp_path, create=False)
    with pytest.raises((CorruptSegmentError, CorruptIndexError)):
        torn.load()
    assert torn.recover() == len(_batch(0)) - 5
    assert torn.next_offset == BASE + 9
    torn.close()


def _offsets(data: bytes) -> list[int]:
    return [record.offset for _, record in iter_records(data)]


def test_recover_keeps_valid_batches_and_rebuilds_indexes(tmp_path: Path) -> None:
    segment = _segment(tmp_path, interval=100)
    written = _fill(segment, 8)
    index_before = segment.offset_index.path.read_bytes()
    seen: list[BatchHeader] = []
    assert segment.recover(seen.append) == 0
    assert [h.base_offset for h in seen] == [BASE + 3 * i for i in range(8)]
    assert segment.offset_index.path.read_bytes() == index_before
    # corrupt the payload of batch 5: it and everything after is cut
    with open(segment.log_path, "r+b") as f:
        f.seek(sum(map(len, written[:5])) + 70)
        f.write(b"\xff")
    assert segment.recover() == sum(map(len, written[5:]))
    assert segment.next_offset == BASE + 15
    assert _offsets(segment.read(0, 10**6, None, True)[0]) == list(range(BASE, BASE + 15))
    assert segment.time_index.last_entry() == (1042, BASE + 14)


def test_recover_keeps_an_offset_gap_and_cuts_offsets_going_back(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    good = _batch(BASE)
    gap = _batch(BASE + 4)  # offsets a cleaning removed: kept, as Kafka keeps them
    after = _batch(BASE + 8)  # skips 107
    for batch, last in ((good, BASE + 2), (gap, BASE + 6), (after, BASE + 10)):
        segment.append([batch], len(batch), last, 1002)
    assert segment.recover() == 0
    assert segment.next_offset == BASE + 11
    # ... but a batch whose offsets go back: the batch before it skipped offsets, and is taken
    # for the damaged one (its base offset is outside the CRC)
    back = _batch(BASE + 9)
    segment.append([back], len(back), BASE + 11, 1002)
    assert segment.recover() == len(after) + len(back)
    assert segment.next_offset == BASE + 7


def test_recover_cuts_a_batch_ending_past_the_next_segment(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    written = _fill(segment, 3)
    assert segment.recover(end_offset=BASE + 8) == len(written[2])
    assert segment.next_offset == BASE + 6


def test_delete_removes_every_file(tmp_path: Path) -> None:
    segment = _segment(tmp_path)
    _fill(segment, 2)
    segment.delete()
    for suffix in (".log", ".index", ".timeindex"):
        assert not segment_path(tmp_path, BASE, suffix).exists()
    assert list(tmp_path.iterdir()) == []


def _torn_writev(monkeypatch: pytest.MonkeyPatch, keep: int, *, short: bool) -> None:
    """os.writev on a disk that fills up after ``keep`` bytes: those bytes land in the file,
    then the call fails with ENOSPC (``short``: returns the short count and the next write
    fails, as Linux does for a write that partly fits)."""
    real_write = os.write

    def writev(fd: int, parts: list[bytes]) -> int:
        written = real_write(fd, b"".join(parts)[:keep])
        if short:
            monkeypatch.setattr(os, "write", _disk_full)
            return written
        raise _no_space()

    monkeypatch.setattr(os, "writev", writev)


def _no_space() -> OSError:
    return OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _disk_full(*_args: object) -> int:
    raise _no_space()


@pytest.mark.parametrize("short", [False, True])
def test_a_write_cut_short_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short: bool
) -> None:
    segment = _segment(tmp_path)
    written = _fill(segment, 3)
    before = (segment.size, segment.next_offset, segment.max_timestamp, len(segment.offset_index))
    data = _batch(segment.next_offset, ts=5000)
    header = read_header(data)
    with monkeypatch.context() as patch:
        _torn_writev(patch, len(data) // 2, short=short)
        with pytest.raises(OSError) as failed:
            segment.append([data[:30], data[30:]], len(data), header.last_offset, 5002)
    assert failed.value.errno == errno.ENOSPC
    assert (
        segment.size,
        segment.next_offset,
        segment.max_timestamp,
        len(segment.offset_index),
    ) == before
    assert segment.log_path.stat().st_size == before[0]  # the torn half is cut off
    # O_APPEND writes land where the segment thinks its end is again
    later = _batch(segment.next_offset, ts=6000)
    h = read_header(later)
    segment.append([later], len(later), h.last_offset, h.max_timestamp)
    assert segment.read(0, 10**6, None, True)[0] == b"".join([*written, later])
    segment.close()
    reopened = _segment(tmp_path, create=False)
    reopened.load()  # indexes and the end check out without recovery
    assert reopened.next_offset == h.next_offset


def _is_file(fd: int, path: Path) -> bool:
    """Whether ``fd`` is open on ``path`` (pooled descriptors change between uses)."""
    return os.readlink(f"/proc/self/fd/{fd}") == str(path)


def test_a_failed_index_write_rolls_the_batch_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    segment = _segment(tmp_path)  # interval 0: every batch after the first adds entries
    _fill(segment, 2)
    size, entries = segment.size, len(segment.offset_index)
    index_path = segment_path(tmp_path, BASE, ".index")
    index_size = index_path.stat().st_size
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        if _is_file(fd, index_path):
            real_write(fd, bytes(data)[:3])  # a torn entry, then the disk is full
            raise _no_space()
        return real_write(fd, data)

    data = _batch(segment.next_offset)
    header = read_header(data)
    with monkeypatch.context() as patch:
        patch.setattr(os, "write", write)
        with pytest.raises(OSError):
            segment.append([data], len(data), header.last_offset, header.max_timestamp)
    assert (segment.size, len(segment.offset_index)) == (size, entries)
    assert segment.log_path.stat().st_size == size
    assert index_path.stat().st_size == index_size
    segment.close()
    _segment(tmp_path, create=False).load()  # no torn index, no stray batch


def _append_one(segment: LogSegment) -> bytes:
    data = _batch(segment.next_offset)
    header = read_header(data)
    segment.append([data], len(data), header.last_offset, header.max_timestamp)
    return data


def test_a_segment_whose_descriptors_were_closed_reopens_them(tmp_path: Path) -> None:
    """The pool may close an active segment's files between appends: the next append, read
    or lookup reopens them, appending at the end and never truncating."""
    pool = FilePool(1)
    segment = _segment(tmp_path, interval=1, files=pool)
    other = _segment(tmp_path / "other", interval=1, files=pool)
    written = []
    for _ in range(4):
        written.append(_append_one(segment))
        _append_one(other)  # takes the pool's one descriptor
    assert pool.open_count == 1 and len(segment.offset_index) == 3
    assert segment.read(0, 10**6, None, True)[0] == b"".join(written)
    found = segment.find_batch(segment.next_offset - 1)
    assert found is not None and found[1].last_offset == segment.next_offset - 1
    segment.flush()
    segment.close()
    other.close()
    reloaded = _segment(tmp_path, create=False, files=pool)
    reloaded.load()
    assert reloaded.next_offset == segment.next_offset and reloaded.size == segment.size
    assert len(reloaded.offset_index) == 3


@pytest.mark.parametrize("short", [False, True])
def test_a_full_disk_on_a_segment_whose_descriptors_the_pool_closed_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short: bool
) -> None:
    """The append reopens the log file, the disk fills up halfway through the batch, and the
    roll back cuts the log file and both indexes through descriptors the pool reopens."""
    pool = FilePool(2)
    segment = _segment(tmp_path, files=pool)  # interval 0: every batch adds index entries
    written = _fill(segment, 3)
    segment.flush()
    index_path = segment_path(tmp_path, BASE, ".index")
    sizes = {p: p.stat().st_size for p in (segment.log_path, index_path)}
    before = (segment.size, segment.next_offset, len(segment.offset_index))
    segment.release_files()
    assert pool.open_count == 0
    data = _batch(segment.next_offset, ts=5000)
    header = read_header(data)
    with monkeypatch.context() as patch:
        _torn_writev(patch, len(data) // 2, short=short)
        with pytest.raises(OSError) as failed:
            segment.append([data], len(data), header.last_offset, header.max_timestamp)
    assert failed.value.errno == errno.ENOSPC
    assert (segment.size, segment.next_offset, len(segment.offset_index)) == before
    assert {p: p.stat().st_size for p in sizes} == sizes  # the torn half is cut off
    assert pool.open_count <= 2
    # room again: the next batch lands where the segment thinks its end is
    later = _append_one(segment)
    segment.release_files()
    assert segment.read(0, 10**6, None, True)[0] == b"".join([*written, later])
    segment.close()
    assert pool.file_count == 0
    reopened = _segment(tmp_path, create=False, files=pool)
    reopened.load()  # indexes and the end check out without recovery
    assert reopened.next_offset == read_header(later).next_offset
    reopened.close()


def test_a_failed_write_to_an_index_the_pool_closed_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index entry's write reopens the index file and fails torn: the index is cut back
    through that reopened descriptor, and the log file through its own."""
    pool = FilePool(1)  # the index's reopening closes the log file's descriptor
    segment = _segment(tmp_path, files=pool)
    _fill(segment, 2)
    index_path = segment_path(tmp_path, BASE, ".index")
    size, entries, index_size = segment.size, len(segment.offset_index), index_path.stat().st_size
    segment.release_files()
    real_write = os.write

    def write(fd: int, data: bytes) -> int:
        if _is_file(fd, index_path):
            real_write(fd, bytes(data)[:3])  # a torn entry, then the disk is full
            raise _no_space()
        return real_write(fd, data)

    data = _batch(segment.next_offset)
    header = read_header(data)
    with monkeypatch.context() as patch:
        patch.setattr(os, "write", write)
        with pytest.raises(OSError):
            segment.append([data], len(data), header.last_offset, header.max_timestamp)
    assert (segment.size, len(segment.offset_index)) == (size, entries)
    assert segment.log_path.stat().st_size == size
    assert index_path.stat().st_size == index_size
    segment.close()
    _segment(tmp_path, create=False, files=pool).load()  # no torn index, no stray batch


def test_a_segment_that_cannot_open_its_time_index_gives_its_files_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new segment (a roll) whose .timeindex cannot be opened: the .log and .index files
    it had opened go back to the pool rather than hold descriptors nobody will close."""
    pool = FilePool(8)
    real_open = os.open

    def open_(path: str | Path, flags: int, mode: int = 0o777) -> int:
        if str(path).endswith(".timeindex"):
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(path))
        return real_open(path, flags, mode)

    with monkeypatch.context() as patch:
        patch.setattr(os, "open", open_)
        with pytest.raises(OSError) as failed:
            _segment(tmp_path, files=pool)
    assert failed.value.errno == errno.EMFILE
    assert pool.file_count == 0 and pool.open_count == 0
    segment = _segment(tmp_path, files=pool)  # descriptors back: the roll succeeds
    _append_one(segment)
    segment.close()
    assert pool.file_count == 0
