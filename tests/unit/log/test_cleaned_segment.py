"""A cleaned segment's files are those a ``LogSegment`` writes for the same batches: the same
log bytes and the same offset and time index entries, synced, with the given mtime."""

from __future__ import annotations

import os
from pathlib import Path

from brook.log.cleaned_segment import CleanedSegmentWriter
from brook.log.segment import LogSegment, segment_path
from brook.log.swap import CleanedFiles
from brook.protocol.batch import read_header
from brook.protocol.records import build_simple_batch

BASE = 1000


def _batches() -> list[bytes]:
    out = []
    offset = BASE
    for n in range(40):
        count = 1 + n % 3
        timestamp = 5_000 + (n * 7) % 50  # not monotonic: the time index skips some
        out.append(
            build_simple_batch(
                [(b"k", b"x" * (30 + n))] * count, timestamp=timestamp, base_offset=offset
            )
        )
        offset += count + (n % 2)  # gaps, as a cleaning leaves them
    return out


def test_files_match_what_a_log_segment_writes(tmp_path: Path) -> None:
    reference_dir, cleaned_dir = tmp_path / "ref", tmp_path / "cleaned"
    reference_dir.mkdir()
    cleaned_dir.mkdir()
    segment = LogSegment(
        reference_dir, BASE, index_interval_bytes=300, max_index_size=120, create=True
    )
    writer = CleanedSegmentWriter(CleanedFiles(cleaned_dir, BASE), 300, 120)
    for batch in _batches():
        header = read_header(batch)
        segment.append([batch], len(batch), header.last_offset, header.max_timestamp)
        writer.append(batch, header.last_offset, header.max_timestamp)
    segment.on_become_inactive()
    segment.flush()
    writer.finish(mtime_ns=1_234_000_000_000)
    for suffix in (".log", ".index", ".timeindex"):
        cleaned = CleanedFiles(cleaned_dir, BASE).path(suffix)
        assert cleaned.read_bytes() == segment_path(reference_dir, BASE, suffix).read_bytes()
    assert len(segment.offset_index) == 120 // 8  # the index filled up: entries stop there
    assert os.stat(CleanedFiles(cleaned_dir, BASE).path(".log")).st_mtime_ns == 1_234_000_000_000
    assert writer.next_offset == segment.next_offset
    segment.close()


def test_abort_removes_what_was_written(tmp_path: Path) -> None:
    files = CleanedFiles(tmp_path, BASE)
    writer = CleanedSegmentWriter(files, 300, 1000)
    writer.append(_batches()[0], BASE, 5_000)
    writer.abort()
    assert list(tmp_path.iterdir()) == []
