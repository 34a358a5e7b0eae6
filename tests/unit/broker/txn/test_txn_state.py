"""The transaction state machine under simulated time: Kafka's states and transition table,
epochs and fencing of zombie producers (KIP-98, KIP-360), pending writes, timeouts, expiry and
Kafka's error for each misuse."""

from __future__ import annotations

import itertools
import random

import pytest

from brook.broker.txn.state import (
    MAX_EPOCH,
    NO_PRODUCER_EPOCH,
    VALID_PREVIOUS,
    Decision,
    TransitionError,
    TxnConfig,
    TxnEntry,
    TxnResult,
    TxnState,
    check_init_request,
    new_entry,
    timed_out,
)
from brook.protocol.errors import Errors

S = TxnState
TIMEOUT = 60_000
T0, T1 = ("t", 0), ("t", 1)
PID = 4000


class Ids:
    """The producer id allocator."""

    def __init__(self) -> None:
        self.next = PID + 1

    def __call__(self) -> int:
        self.next += 1
        return self.next - 1


def written(entry: TxnEntry, decision: Decision) -> Decision:
    """The shell's part when the log append succeeds: complete the pending write and, for an
    EndTxn, the markers and the Complete state."""
    assert decision.write is not None, decision
    entry.complete(decision.write)
    if decision.markers is not None:
        entry.complete(entry.prepare_complete(1))
    return decision


def initialized(now: int = 0) -> TxnEntry:
    entry = new_entry("app", PID, TIMEOUT, now)
    written(entry, entry.init_producer_id(TIMEOUT, None, now, Ids()))
    return entry


def ongoing(now: int = 0) -> TxnEntry:
    entry = initialized(now)
    written(entry, entry.add_partitions(PID, 0, [T0], now))
    return entry


# ---------------------------------------------------------------------- the table


def test_transition_table_is_kafkas() -> None:
    assert {
        S.EMPTY: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.ONGOING: {S.ONGOING, S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.PREPARE_COMMIT: {S.ONGOING},
        S.PREPARE_ABORT: {S.ONGOING, S.PREPARE_EPOCH_FENCE},
        S.COMPLETE_COMMIT: {S.PREPARE_COMMIT},
        S.COMPLETE_ABORT: {S.PREPARE_ABORT},
        S.DEAD: {S.EMPTY, S.COMPLETE_COMMIT, S.COMPLETE_ABORT},
        S.PREPARE_EPOCH_FENCE: {S.ONGOING},
    } == VALID_PREVIOUS


def test_state_ids_and_names_are_kafkas() -> None:
    assert [(s.value, s.kafka_name) for s in TxnState] == [
        (0, "Empty"),
        (1, "Ongoing"),
        (2, "PrepareCommit"),
        (3, "PrepareAbort"),
        (4, "CompleteCommit"),
        (5, "CompleteAbort"),
        (6, "Dead"),
        (7, "PrepareEpochFence"),
    ]
    assert TxnState.from_kafka_name("Ongoing") is S.ONGOING
    assert TxnState.from_kafka_name("ongoing") is None
    assert {s for s in TxnState if s.expiration_allowed} == {
        S.EMPTY,
        S.COMPLETE_COMMIT,
        S.COMPLETE_ABORT,
    }


# ---------------------------------------------------------------------- InitProducerId


@pytest.mark.parametrize(
    ("tid", "timeout", "error"),
    [
        ("", 1000, Errors.INVALID_REQUEST),
        ("app", 0, Errors.INVALID_TRANSACTION_TIMEOUT),
        ("app", -1, Errors.INVALID_TRANSACTION_TIMEOUT),
        ("app", 900_001, Errors.INVALID_TRANSACTION_TIMEOUT),
        ("app", 900_000, Errors.NONE),
        ("app", 1, Errors.NONE),
    ],
)
def test_init_request_checks(tid: str, timeout: int, error: Errors) -> None:
    assert check_init_request(tid, timeout, TxnConfig()) == error


def test_first_init_gives_epoch_zero_and_later_ones_bump() -> None:
    entry = new_entry("app", PID, TIMEOUT, 0)
    decision = entry.init_producer_id(TIMEOUT, None, 5, Ids())
    assert decision.error == Errors.NONE and decision.markers is None
    assert decision.write is not None
    assert (decision.write.state, decision.write.producer_epoch) == (S.EMPTY, 0)
    assert entry.meta.producer_epoch == NO_PRODUCER_EPOCH  # not before the write completes
    entry.complete(decision.write)
    assert (entry.meta.producer_id, entry.meta.producer_epoch) == (PID, 0)
    assert entry.meta.last_update_ms == 5
    again = written(entry, entry.init_producer_id(30_000, None, 9, Ids()))
    assert again.write is not None
    assert (entry.meta.producer_epoch, entry.meta.last_producer_epoch) == (1, NO_PRODUCER_EPOCH)
    assert entry.meta.timeout_ms == 30_000


def test_init_while_a_write_is_pending_is_concurrent() -> None:
    entry = initialized()
    pending = entry.add_partitions(PID, 0, [T0], 1)
    assert pending.write is not None
    assert entry.init_producer_id(TIMEOUT, None, 2, Ids()).error == Errors.CONCURRENT_TRANSACTIONS
    assert entry.add_partitions(PID, 0, [T1], 2).error == Errors.CONCURRENT_TRANSACTIONS
    assert entry.end_txn(PID, 0, True, 2).error == Errors.CONCURRENT_TRANSACTIONS


def test_init_fences_the_ongoing_transactions_producer() -> None:
    entry = ongoing()
    fence = entry.init_producer_id(TIMEOUT, None, 10, Ids())
    # The client is told to retry; the abort goes out under a bumped epoch never returned.
    assert fence.error == Errors.CONCURRENT_TRANSACTIONS
    assert fence.markers == TxnResult.ABORT
    assert fence.write is not None
    assert fence.write.state == S.PREPARE_ABORT
    assert fence.write.producer_epoch == 1
    assert fence.write.partitions == {T0}
    entry.complete(fence.write)
    # The zombie (epoch 0) is fenced from everything.
    assert entry.add_partitions(PID, 0, [T1], 11).error == Errors.PRODUCER_FENCED
    assert entry.end_txn(PID, 0, True, 11).error == Errors.PRODUCER_FENCED
    # The new producer's retry waits for the markers, then gets a second bump.
    assert entry.init_producer_id(TIMEOUT, None, 11, Ids()).error == Errors.CONCURRENT_TRANSACTIONS
    entry.complete(entry.prepare_complete(12))
    assert entry.state == S.COMPLETE_ABORT and entry.meta.partitions == frozenset()
    written(entry, entry.init_producer_id(TIMEOUT, None, 13, Ids()))
    assert (entry.state, entry.meta.producer_epoch) == (S.EMPTY, 2)


def test_a_failed_fence_write_is_not_bumped_twice() -> None:
    entry = ongoing()
    first = entry.init_producer_id(TIMEOUT, None, 10, Ids())
    assert first.write is not None
    entry.write_failed(first.write)
    assert entry.pending is None
    assert (entry.state, entry.meta.producer_epoch) == (S.ONGOING, 0)
    retry = entry.init_producer_id(TIMEOUT, None, 11, Ids())
    assert retry.write is not None and retry.write.producer_epoch == 1
    entry.complete(retry.write)
    entry.complete(entry.prepare_complete(12))
    assert (entry.state, entry.meta.producer_epoch) == (S.COMPLETE_ABORT, 1)


def test_a_failed_ordinary_write_changes_nothing() -> None:
    entry = initialized()
    decision = entry.add_partitions(PID, 0, [T0], 5)
    assert decision.write is not None
    entry.write_failed(decision.write)
    assert entry.state == S.EMPTY and entry.pending is None
    with pytest.raises(TransitionError):
        entry.complete(decision.write)


# ---------------------------------------------------------------------- KIP-360


def test_expected_current_epoch_bumps_and_remembers_the_last() -> None:
    entry = initialized()
    written(entry, entry.init_producer_id(TIMEOUT, (PID, 0), 1, Ids()))
    assert (entry.meta.producer_epoch, entry.meta.last_producer_epoch) == (1, 0)
    # A retry of that call (its answer lost): the same epoch, no second bump.
    retry = entry.init_producer_id(TIMEOUT, (PID, 0), 2, Ids())
    assert retry.write is not None and retry.write.producer_epoch == 1
    entry.complete(retry.write)
    assert entry.meta.producer_epoch == 1


@pytest.mark.parametrize("expected", [(PID, 7), (PID + 99, 0)])
def test_expected_stale_producer_is_fenced(expected: tuple[int, int]) -> None:
    entry = initialized()
    written(entry, entry.init_producer_id(TIMEOUT, None, 1, Ids()))
    written(entry, entry.init_producer_id(TIMEOUT, None, 2, Ids()))
    assert entry.init_producer_id(TIMEOUT, expected, 3, Ids()).error == Errors.PRODUCER_FENCED
    assert entry.pending is None


def test_exhausted_epoch_rotates_the_producer_id() -> None:
    entry = initialized()
    entry.meta = entry.meta.__class__(
        **{**{f: getattr(entry.meta, f) for f in entry.meta.__slots__}, "producer_epoch": 32766}
    )
    ids = Ids()
    decision = written(entry, entry.init_producer_id(TIMEOUT, (PID, 32766), 1, ids))
    assert decision.write is not None
    assert (entry.meta.producer_id, entry.meta.producer_epoch) == (PID + 1, 0)
    assert (entry.meta.prev_producer_id, entry.meta.last_producer_epoch) == (PID, 32766)
    # A retry of that call (its answer lost) names the old id: recognised, no second rotation.
    retry = entry.init_producer_id(TIMEOUT, (PID, 32766), 2, ids)
    assert retry.error == Errors.NONE and retry.write is not None
    assert (retry.write.producer_id, retry.write.producer_epoch) == (PID + 1, 0)
    entry.complete(retry.write)
    # Without an expected producer, the rotation forgets the last epoch.
    entry.meta = entry.meta.__class__(
        **{**{f: getattr(entry.meta, f) for f in entry.meta.__slots__}, "producer_epoch": 32766}
    )
    written(entry, entry.init_producer_id(TIMEOUT, None, 3, ids))
    assert (entry.meta.producer_id, entry.meta.producer_epoch) == (PID + 2, 0)
    assert entry.meta.last_producer_epoch == NO_PRODUCER_EPOCH
    assert MAX_EPOCH == 32767


# ---------------------------------------------------------------------- AddPartitions


def test_add_partitions_starts_and_extends_the_transaction() -> None:
    entry = initialized()
    written(entry, entry.add_partitions(PID, 0, [T0], 100))
    assert (entry.state, entry.meta.start_ms, entry.meta.partitions) == (S.ONGOING, 100, {T0})
    already = entry.add_partitions(PID, 0, [T0], 150)
    assert already == Decision(Errors.NONE)  # nothing to write
    written(entry, entry.add_partitions(PID, 0, [T1], 200))
    assert entry.meta.partitions == {T0, T1}
    assert entry.meta.start_ms == 100 and entry.meta.last_update_ms == 200


@pytest.mark.parametrize(
    ("producer_id", "epoch", "error"),
    [(PID + 1, 0, Errors.INVALID_PRODUCER_ID_MAPPING), (PID, 1, Errors.PRODUCER_FENCED)],
)
def test_add_partitions_checks_the_producer(producer_id: int, epoch: int, error: Errors) -> None:
    entry = initialized()
    assert entry.add_partitions(producer_id, epoch, [T0], 1) == Decision(error)
    assert entry.pending is None


# ---------------------------------------------------------------------- EndTxn


@pytest.mark.parametrize("commit", [True, False])
def test_end_txn_prepares_then_completes(commit: bool) -> None:
    entry = ongoing()
    decision = entry.end_txn(PID, 0, commit, 500)
    assert decision.error == Errors.NONE
    assert decision.markers == (TxnResult.COMMIT if commit else TxnResult.ABORT)
    assert decision.write is not None
    prepare, complete = (
        (S.PREPARE_COMMIT, S.COMPLETE_COMMIT) if commit else (S.PREPARE_ABORT, S.COMPLETE_ABORT)
    )
    assert decision.write.state == prepare and decision.write.partitions == {T0}
    entry.complete(decision.write)
    # A retried EndTxn while the prepare state stands; the other outcome is invalid.
    assert entry.end_txn(PID, 0, commit, 501).error == Errors.CONCURRENT_TRANSACTIONS
    assert entry.end_txn(PID, 0, not commit, 501).error == Errors.INVALID_TXN_STATE
    target = entry.prepare_complete(502)
    assert target.state == complete and target.partitions == frozenset()
    # While markers are out, the next transaction waits.
    assert entry.add_partitions(PID, 0, [T1], 503).error == Errors.CONCURRENT_TRANSACTIONS
    entry.complete(target)
    assert entry.state == complete and entry.meta.producer_epoch == 0
    assert entry.end_txn(PID, 0, commit, 504) == Decision(Errors.NONE)
    assert entry.end_txn(PID, 0, not commit, 504).error == Errors.INVALID_TXN_STATE
    # The next transaction starts from the Complete state with a fresh start time.
    written(entry, entry.add_partitions(PID, 0, [T1], 600))
    assert (entry.state, entry.meta.start_ms, entry.meta.partitions) == (S.ONGOING, 600, {T1})


def test_end_txn_with_nothing_begun_is_invalid() -> None:
    entry = initialized()
    assert entry.end_txn(PID, 0, True, 1) == Decision(Errors.INVALID_TXN_STATE)
    assert entry.end_txn(PID, 0, False, 1) == Decision(Errors.INVALID_TXN_STATE)


@pytest.mark.parametrize(
    ("producer_id", "epoch", "error"),
    [
        (PID + 1, 0, Errors.INVALID_PRODUCER_ID_MAPPING),
        (PID, 1, Errors.PRODUCER_FENCED),  # a client's epoch must match exactly
    ],
)
def test_end_txn_checks_the_producer(producer_id: int, epoch: int, error: Errors) -> None:
    entry = ongoing()
    assert entry.end_txn(producer_id, epoch, True, 1) == Decision(error)


def test_prepare_complete_outside_a_prepare_state_is_a_bug() -> None:
    entry = ongoing()
    with pytest.raises(TransitionError):
        entry.prepare_complete(1)


# ---------------------------------------------------------------------- time


def test_transaction_timeout_aborts_under_a_bumped_epoch() -> None:
    entry = initialized()
    written(entry, entry.add_partitions(PID, 0, [T0], 1_000))
    deadline = 1_000 + TIMEOUT
    assert entry.abort_if_timed_out(deadline) is None
    assert timed_out([entry], deadline) == []
    assert timed_out([entry], deadline + 1) == [entry]
    abort = entry.abort_if_timed_out(deadline + 1)
    assert abort is not None and abort.write is not None
    assert (abort.write.state, abort.write.producer_epoch) == (S.PREPARE_ABORT, 1)
    assert abort.markers == TxnResult.ABORT
    assert timed_out([entry], deadline + 2) == []  # pending: not aborted twice
    entry.complete(abort.write)
    entry.complete(entry.prepare_complete(deadline + 3))
    assert entry.state == S.COMPLETE_ABORT
    # The producer that let it time out is fenced.
    assert entry.end_txn(PID, 0, True, deadline + 4).error == Errors.PRODUCER_FENCED
    assert entry.add_partitions(PID, 0, [T0], deadline + 4).error == Errors.PRODUCER_FENCED


def test_idle_ids_expire_only_in_states_that_allow_it() -> None:
    expiry = 10_000
    entry = initialized(now=0)
    assert entry.expire(expiry - 1, expiry) is None
    dead = entry.expire(expiry, expiry)
    assert dead is not None and dead.state == S.DEAD
    assert entry.add_partitions(PID, 0, [T0], expiry).error == Errors.CONCURRENT_TRANSACTIONS
    entry.complete(dead)
    assert entry.state == S.DEAD

    busy = ongoing(now=0)
    assert busy.expire(10 * expiry, expiry) is None


# ---------------------------------------------------------------------- random histories


def test_random_histories_keep_kafkas_invariants() -> None:
    """Two producers sharing an id, requests at random times, random failed writes: every
    completed change is an edge of Kafka's table, epochs never go back, a producer whose epoch
    is behind never gets a write accepted, and a transaction's partitions only grow until it
    ends."""
    for seed in range(300):
        rng = random.Random(seed)
        ids = Ids()
        entry = new_entry("app", PID, TIMEOUT, 0)
        now = 0
        epochs: dict[str, int | None] = {"a": None, "b": None}
        inflight: list[Decision] = []
        for _ in range(60):
            now += rng.choice([1, 10, 1_000, TIMEOUT // 2])
            who = rng.choice("ab")
            epoch = epochs[who]
            op = rng.choice(["init", "add", "commit", "abort", "tick", "finish"])
            before = entry.meta
            if op == "finish" and inflight:
                decision = inflight.pop()
                assert decision.write is not None
                if rng.random() < 0.2:
                    entry.write_failed(decision.write)
                    continue
                entry.complete(decision.write)
                assert before.state in VALID_PREVIOUS[entry.state] or (
                    entry.state == S.PREPARE_ABORT and before.state == S.ONGOING
                )
                assert entry.meta.producer_epoch >= before.producer_epoch or (
                    entry.meta.producer_id != before.producer_id
                )
                if decision.markers is not None:
                    inflight.append(Decision(Errors.NONE, entry.prepare_complete(now)))
                if decision.write.state == S.EMPTY and decision.error == Errors.NONE:
                    epochs[who] = entry.meta.producer_epoch
                continue
            if inflight:
                continue
            if op == "init":
                d = entry.init_producer_id(TIMEOUT, None, now, ids)
            elif op == "tick":
                maybe = entry.abort_if_timed_out(now)
                if maybe is None:
                    continue
                d = maybe
            elif epoch is None:
                continue
            elif op == "add":
                d = entry.add_partitions(entry.meta.producer_id, epoch, [rng.choice([T0, T1])], now)
            else:
                d = entry.end_txn(entry.meta.producer_id, epoch, op == "commit", now)
            if d.write is not None:
                if op in ("add", "commit", "abort"):
                    assert epoch == entry.meta.producer_epoch, (seed, op)
                if d.write.state == S.ONGOING and before.state == S.ONGOING:
                    assert d.write.partitions >= before.partitions
                inflight.append(d)
                assert entry.pending is d.write
            else:
                assert entry.pending is None or d.error == Errors.CONCURRENT_TRANSACTIONS


def test_every_edge_is_reachable_from_requests() -> None:
    """Every transition the table allows between persisted states is taken by some request."""
    seen: set[tuple[TxnState, TxnState]] = set()
    for commit, fence, retry_init in itertools.product([True, False], repeat=3):
        entry = new_entry("app", PID, TIMEOUT, 0)
        path = [entry.state]
        written(entry, entry.init_producer_id(TIMEOUT, None, 0, Ids()))
        path.append(entry.state)
        if retry_init:
            written(entry, entry.init_producer_id(TIMEOUT, None, 0, Ids()))
            path.append(entry.state)
        for _ in range(2):
            written(entry, entry.add_partitions(PID, entry.meta.producer_epoch, [T0], 1))
            path.append(entry.state)
            written(entry, entry.add_partitions(PID, entry.meta.producer_epoch, [T1], 1))
            path.append(entry.state)
            if fence:
                d = entry.init_producer_id(TIMEOUT, None, 2, Ids())
            else:
                d = entry.end_txn(PID, entry.meta.producer_epoch, commit, 2)
            assert d.write is not None
            entry.complete(d.write)
            path.append(entry.state)
            entry.complete(entry.prepare_complete(3))
            path.append(entry.state)
            if retry_init:
                written(entry, entry.init_producer_id(TIMEOUT, None, 4, Ids()))
                path.append(entry.state)
        seen |= set(itertools.pairwise(path))
    persisted = {
        (prev, state)
        for state, prevs in VALID_PREVIOUS.items()
        for prev in prevs
        if S.PREPARE_EPOCH_FENCE not in (prev, state) and state != S.DEAD
    }
    assert persisted - seen == set()
