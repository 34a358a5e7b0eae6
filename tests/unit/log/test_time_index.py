"""The sparse time index (.timeindex): 12-byte entries, strictly increasing timestamps."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from brook.log.offset_index import CorruptIndexError
from brook.log.time_index import TimeIndex

BASE = 500


def _index(tmp_path: Path, max_size: int = 1200) -> TimeIndex:
    return TimeIndex(tmp_path / f"{BASE:020d}.timeindex", BASE, max_size)


def test_only_larger_timestamps_are_appended(tmp_path: Path) -> None:
    index = _index(tmp_path)
    assert index.last_entry() == (-1, BASE)
    index.maybe_append(100, BASE + 3)
    index.maybe_append(100, BASE + 9)
    index.maybe_append(90, BASE + 12)
    index.maybe_append(150, BASE + 12)
    assert index.path.read_bytes() == struct.pack(">qiqi", 100, 3, 150, 12)
    assert index.last_entry() == (150, BASE + 12)
    index.close()
    assert _index(tmp_path).last_entry() == (150, BASE + 12)


def test_lookup(tmp_path: Path) -> None:
    index = _index(tmp_path)
    for ts, off in ((100, 3), (200, 7), (300, 20)):
        index.maybe_append(ts, BASE + off)
    assert index.lookup(50) == (-1, BASE)
    assert index.lookup(100) == (100, BASE + 3)
    assert index.lookup(250) == (200, BASE + 7)
    assert index.lookup(10**12) == (300, BASE + 20)


def test_full_index_takes_entries_only_when_told(tmp_path: Path) -> None:
    index = _index(tmp_path, max_size=24)
    index.maybe_append(1, BASE)
    index.maybe_append(2, BASE + 1)
    assert index.is_full
    index.maybe_append(3, BASE + 2)
    assert len(index) == 2
    index.maybe_append(3, BASE + 2, skip_full_check=True)
    assert len(index) == 3


def test_truncate_to_drops_entries_at_or_after_offset(tmp_path: Path) -> None:
    index = _index(tmp_path)
    for ts, off in ((100, 3), (200, 7), (300, 20)):
        index.maybe_append(ts, BASE + off)
    index.truncate_to(BASE + 7)
    assert index.last_entry() == (100, BASE + 3)
    assert index.path.stat().st_size == 12
    index.reset([(5, BASE), (6, BASE + 1)])
    assert index.lookup(6) == (6, BASE + 1)


def test_sanity_check(tmp_path: Path) -> None:
    index = _index(tmp_path)
    index.maybe_append(100, BASE + 3)
    index.maybe_append(200, BASE + 7)
    index.sanity_check(next_offset=BASE + 8)
    with pytest.raises(CorruptIndexError):
        index.sanity_check(next_offset=BASE + 7)
    index.close()
    index.path.write_bytes(struct.pack(">qiqi", 200, 3, 100, 7))
    with pytest.raises(CorruptIndexError):
        _index(tmp_path).sanity_check(next_offset=BASE + 100)
    index.path.write_bytes(struct.pack(">qi", 200, 3) + b"\x01")
    with pytest.raises(CorruptIndexError):
        _index(tmp_path).sanity_check(next_offset=BASE + 100)
