"""The aborted-transaction index (``.txnindex``) on disk: Kafka's 34-byte entries, created by
the first abort, Kafka's search rule for a read_committed fetch, truncation, and the damage a
reopen detects."""

from __future__ import annotations

import os
import struct
from pathlib import Path

import pytest

from brook.log.file_pool import FilePool
from brook.log.offset_index import CorruptIndexError
from brook.log.txn_index import ENTRY_SIZE, AbortedTxn, TransactionIndex


@pytest.fixture
def pool() -> FilePool:
    return FilePool(capacity=4)


def index_at(tmp_path: Path, pool: FilePool, base: int = 100) -> TransactionIndex:
    return TransactionIndex(tmp_path / f"{base:020d}.txnindex", base, pool)


def test_entries_are_kafkas_34_bytes(tmp_path: Path, pool: FilePool) -> None:
    index = index_at(tmp_path, pool)
    index.append(
        AbortedTxn(producer_id=7, first_offset=100, last_offset=105, last_stable_offset=106)
    )
    index.append(AbortedTxn(8, 101, 110, 111))
    raw = index.path.read_bytes()
    assert ENTRY_SIZE == 34 and len(raw) == 68
    assert raw[:34] == (
        b"\x00\x00"  # version 0
        + (7).to_bytes(8, "big")
        + (100).to_bytes(8, "big")
        + (105).to_bytes(8, "big")
        + (106).to_bytes(8, "big")
    )
    again = index_at(tmp_path, pool)
    assert again.entries == [AbortedTxn(7, 100, 105, 106), AbortedTxn(8, 101, 110, 111)]
    again.sanity_check()


def test_no_file_until_the_first_abort(tmp_path: Path, pool: FilePool) -> None:
    index = index_at(tmp_path, pool)
    assert not index.path.exists() and len(index) == 0
    index.truncate_to(0)
    index.flush()
    assert not index.path.exists()
    index.append(AbortedTxn(1, 100, 100, 101))
    assert index.path.exists()
    assert pool.open_count == 0  # the descriptor went back to the pool


def test_appends_must_end_in_order(tmp_path: Path, pool: FilePool) -> None:
    index = index_at(tmp_path, pool)
    index.append(AbortedTxn(1, 100, 120, 121))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 101, 120, 121))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 90, 119, 121))
    with pytest.raises(ValueError):
        index_at(tmp_path, pool, base=500).append(AbortedTxn(2, 90, 99, 100))
    assert len(index_at(tmp_path, pool)) == 1


def test_collect_follows_kafkas_search(tmp_path: Path, pool: FilePool) -> None:
    index = index_at(tmp_path, pool, base=0)
    a = AbortedTxn(1, 0, 10, 5)  # b, begun at 5, still open when a was aborted
    b = AbortedTxn(2, 5, 20, 21)
    c = AbortedTxn(3, 30, 40, 41)
    for txn in (a, b, c):
        index.append(txn)
    # Everything overlapping [12, 35): b (ends at 20) and c (starts at 30); a ended before.
    assert index.collect(12, 35) == ([b, c], True)  # c's LSO 41 >= 35
    # An upper bound past every LSO: the search goes on to later segments.
    assert index.collect(0, 100) == ([a, b, c], False)
    # Goes on past a (its LSO, 5, is below the bound: b was open), stops at b's.
    assert index.collect(0, 11) == ([a, b], True)
    # Stops at the first entry whose LSO reaches the bound: c cannot overlap.
    assert index.collect(0, 21) == ([a, b], True)
    assert index.collect(41, 50) == ([], False)


def test_truncate_to_drops_aborts_at_or_after_the_cut(tmp_path: Path, pool: FilePool) -> None:
    index = index_at(tmp_path, pool, base=0)
    for i in range(5):
        index.append(AbortedTxn(i, i * 10, i * 10 + 5, i * 10 + 6))
    index.truncate_to(25)  # the abort ending at 25 goes
    assert [t.last_offset for t in index.entries] == [5, 15]
    assert os.path.getsize(index.path) == 2 * ENTRY_SIZE
    assert [t.last_offset for t in index_at(tmp_path, pool, base=0).entries] == [5, 15]
    index.reset([AbortedTxn(9, 1, 2, 3)])
    assert index_at(tmp_path, pool, base=0).entries == [AbortedTxn(9, 1, 2, 3)]


def test_a_torn_file_fails_the_sanity_check_and_truncation_repairs_it(
    tmp_path: Path, pool: FilePool
) -> None:
    index = index_at(tmp_path, pool)
    index.append(AbortedTxn(1, 100, 101, 102))
    with open(index.path, "ab") as f:
        f.write(b"\x00" * 10)  # a crash mid-append
    torn = index_at(tmp_path, pool)
    assert torn.entries == [AbortedTxn(1, 100, 101, 102)]
    with pytest.raises(CorruptIndexError):
        torn.sanity_check()
    torn.truncate_to(10**9)
    torn.sanity_check()
    assert os.path.getsize(torn.path) == ENTRY_SIZE


def test_entries_below_the_segment_fail_the_sanity_check(tmp_path: Path, pool: FilePool) -> None:
    path = tmp_path / f"{100:020d}.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 0, 1, 50, 60, 61))
    with pytest.raises(CorruptIndexError, match="below the segment's base offset"):
        TransactionIndex(path, 100, pool).sanity_check()


def test_an_unknown_entry_version_is_corrupt(tmp_path: Path, pool: FilePool) -> None:
    path = tmp_path / f"{0:020d}.txnindex"
    path.write_bytes(struct.pack(">hqqqq", 1, 1, 0, 1, 2))
    index = TransactionIndex(path, 0, pool)
    assert pool.open_count == 0
    assert index.entries == []
    with pytest.raises(CorruptIndexError):
        index.sanity_check()  # the segment is recovered, the index rebuilt
    index.reset([AbortedTxn(1, 0, 1, 2)])
    index.sanity_check()
    assert TransactionIndex(path, 0, pool).entries == [AbortedTxn(1, 0, 1, 2)]


def test_rename_and_delete(tmp_path: Path, pool: FilePool) -> None:
    index = index_at(tmp_path, pool)
    index.append(AbortedTxn(1, 100, 101, 102))
    moved = tmp_path / "moved.txnindex.deleted"
    index.rename(moved)
    assert moved.exists() and not (tmp_path / f"{100:020d}.txnindex").exists()
    index.append(AbortedTxn(1, 103, 104, 105))
    assert len(TransactionIndex(moved, 100, pool)) == 2
    index.delete()
    assert not moved.exists()
