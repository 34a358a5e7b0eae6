"""Offsets committed inside a transaction: held per producer until the marker, applied on
COMMIT in log order, dropped on ABORT, unstable meanwhile, never expired while pending."""

from __future__ import annotations

from brook.broker.group.offsets import OffsetCache
from brook.broker.group.store import OffsetAndMetadata

T0, T1 = ("t", 0), ("t", 1)
A, B = 4000, 4001


def offset(n: int, ts: int = 0) -> OffsetAndMetadata:
    return OffsetAndMetadata(n, commit_timestamp=ts)


def txn_commit(cache: OffsetCache, pid: int, offsets: dict, position: int | None) -> None:
    cache.begin_commit(offsets)
    cache.end_txn_commit(pid, offsets, position)


def test_held_until_commit_then_applied() -> None:
    cache = OffsetCache()
    txn_commit(cache, A, {T0: offset(10), T1: offset(20)}, position=5)
    assert cache.get(T0) is None and cache.has_pending_txn(T0) and cache.has_any
    assert cache.complete_txn(A, commit=True) == [T0, T1]
    assert cache.get(T0) == offset(10) and cache.get(T1) == offset(20)
    assert not cache.has_pending_txn(T0)


def test_dropped_on_abort() -> None:
    cache = OffsetCache()
    cache.begin_commit([T0])
    cache.end_commit({T0: offset(1)}, 0)
    txn_commit(cache, A, {T0: offset(10)}, position=5)
    assert cache.complete_txn(A, commit=False) == [T0]
    assert cache.get(T0) == offset(1)
    assert not cache.has_pending_txn(T0)


def test_a_later_record_of_the_log_wins_over_an_earlier_transactional_one() -> None:
    cache = OffsetCache()
    txn_commit(cache, A, {T0: offset(10)}, position=5)
    cache.begin_commit([T0])
    cache.end_commit({T0: offset(99)}, 8)  # a plain commit written after the transactional one
    cache.complete_txn(A, commit=True)
    assert cache.get(T0) == offset(99)
    txn_commit(cache, B, {T0: offset(120)}, position=12)
    cache.complete_txn(B, commit=True)
    assert cache.get(T0) == offset(120)


def test_producers_are_independent_and_failed_writes_hold_nothing() -> None:
    cache = OffsetCache()
    txn_commit(cache, A, {T0: offset(10)}, position=1)
    txn_commit(cache, B, {T1: offset(20)}, position=None)  # the write failed
    assert not cache.has_pending_txn(T1)
    assert cache.complete_txn(B, commit=True) == []
    assert cache.has_pending_txn(T0)
    cache.complete_txn(A, commit=True)
    assert cache.get(T0) == offset(10) and cache.get(T1) is None


def test_pending_transactional_offsets_do_not_expire() -> None:
    cache = OffsetCache()
    cache.begin_commit([T0])
    cache.end_commit({T0: offset(1, ts=0)}, 0)
    txn_commit(cache, A, {T0: offset(10, ts=0)}, position=3)
    assert cache.expire(10**9, 1, lambda v: v.commit_timestamp) == []
    cache.complete_txn(A, commit=False)
    assert cache.expire(10**9, 1, lambda v: v.commit_timestamp) == [T0]
