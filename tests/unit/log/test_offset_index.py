"""The sparse offset index (.index): Kafka's 8-byte entries, lookups, truncation, checks."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from brook.log.offset_index import CorruptIndexError, OffsetIndex

BASE = 1000


def _index(tmp_path: Path, max_size: int = 1024) -> OffsetIndex:
    return OffsetIndex(tmp_path / f"{BASE:020d}.index", BASE, max_size)


def test_entries_are_relative_offset_and_position_big_endian(tmp_path: Path) -> None:
    index = _index(tmp_path)
    index.append(1009, 0)
    index.append(1030, 4200)
    raw = index.path.read_bytes()
    assert raw == struct.pack(">iiii", 9, 0, 30, 4200)
    index.close()
    reopened = _index(tmp_path)
    assert len(reopened) == 2
    assert reopened.entry(1) == (1030, 4200)
    assert reopened.last_offset == 1030


def test_lookup_finds_the_largest_entry_at_or_below(tmp_path: Path) -> None:
    index = _index(tmp_path)
    assert index.lookup(5000) == (BASE, 0)
    for i in range(1, 6):
        index.append(BASE + 10 * i, 100 * i)
    assert index.lookup(BASE) == (BASE, 0)
    assert index.lookup(BASE + 9) == (BASE, 0)
    assert index.lookup(BASE + 10) == (BASE + 10, 100)
    assert index.lookup(BASE + 35) == (BASE + 30, 300)
    assert index.lookup(BASE + 999) == (BASE + 50, 500)


def test_last_position_within(tmp_path: Path) -> None:
    index = _index(tmp_path)
    for i in range(1, 6):
        index.append(BASE + 10 * i, 100 * i)
    assert index.last_position_within(350, None) == 300
    assert index.last_position_within(99, None) == 0
    assert index.last_position_within(10_000, BASE + 25) == 200


def test_offsets_must_increase(tmp_path: Path) -> None:
    index = _index(tmp_path)
    index.append(BASE + 5, 0)
    with pytest.raises(ValueError):
        index.append(BASE + 5, 10)


def test_fullness_follows_the_max_size(tmp_path: Path) -> None:
    index = _index(tmp_path, max_size=20)
    assert index.max_entries == 2
    index.append(BASE + 1, 10)
    assert not index.is_full
    index.append(BASE + 2, 20)
    assert index.is_full
    index.resize(100)
    assert not index.is_full


def test_truncate_and_reset(tmp_path: Path) -> None:
    index = _index(tmp_path)
    for i in range(1, 6):
        index.append(BASE + 10 * i, 100 * i)
    index.truncate_to_position(300)
    assert len(index) == 2 and index.last_offset == BASE + 20
    assert index.path.stat().st_size == 16
    index.reset([(BASE + 3, 50), (BASE + 7, 90)])
    assert [index.entry(i) for i in range(len(index))] == [(BASE + 3, 50), (BASE + 7, 90)]
    assert index.path.stat().st_size == 16
    index.close()
    assert len(_index(tmp_path)) == 2


def test_sanity_check(tmp_path: Path) -> None:
    index = _index(tmp_path)
    index.append(BASE + 1, 10)
    index.append(BASE + 2, 20)
    index.sanity_check(log_size=21)
    with pytest.raises(CorruptIndexError):
        index.sanity_check(log_size=20)
    index.close()
    with index.path.open("ab") as f:
        f.write(b"\x00\x00\x00")
    torn = _index(tmp_path)
    assert len(torn) == 2
    with pytest.raises(CorruptIndexError):
        torn.sanity_check(log_size=100)
    torn.close()
    index.path.write_bytes(struct.pack(">iiii", 5, 10, 3, 20))
    with pytest.raises(CorruptIndexError):
        _index(tmp_path).sanity_check(log_size=100)


def test_delete_removes_the_file(tmp_path: Path) -> None:
    index = _index(tmp_path)
    index.append(BASE + 1, 10)
    index.delete()
    assert not index.path.exists()
