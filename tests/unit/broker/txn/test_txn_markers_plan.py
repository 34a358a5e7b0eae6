"""The coordinator's marker sending as plain logic: partitions grouped by leader, Kafka's
reaction to each WriteTxnMarkers error, and a new coordinator finishing what the previous one
decided (loaded from ``__transaction_state``)."""

from __future__ import annotations

import pytest

from brook.broker.txn.loading import load_partition
from brook.broker.txn.log_records import encode_key, encode_value
from brook.broker.txn.markers import MarkerError, PendingMarkers, Progress, markers_for
from brook.broker.txn.state import TxnMetadata, TxnResult, TxnState
from brook.protocol.errors import Errors

T0, T1, U0 = ("t", 0), ("t", 1), ("u", 0)


def pending() -> PendingMarkers:
    return PendingMarkers("app", 7, 2, TxnResult.COMMIT, 5, {T0, T1, U0})


def test_partitions_go_to_their_leaders_and_unknown_leaders_wait() -> None:
    leaders = {T0: 1, T1: 2, U0: None}
    routes, unknown = pending().by_leader(leaders.get)
    assert routes == {1: [T0], 2: [T1]}
    assert unknown == [U0]


def test_done_once_every_partition_answered_none() -> None:
    markers = pending()
    assert markers.on_response({T0: Errors.NONE, T1: Errors.NOT_LEADER_OR_FOLLOWER}) == (
        Progress.PENDING
    )
    assert markers.remaining == {T1, U0}
    assert markers.on_response({T1: Errors.NONE, U0: Errors.REQUEST_TIMED_OUT}) == Progress.PENDING
    assert markers.on_response({U0: Errors.NONE}) == Progress.DONE


@pytest.mark.parametrize(
    "code",
    [
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.NOT_ENOUGH_REPLICAS,
        Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        Errors.REQUEST_TIMED_OUT,
        Errors.KAFKA_STORAGE_ERROR,
    ],
)
def test_retriable_errors_keep_the_partition(code: int) -> None:
    markers = pending()
    assert markers.on_response({T0: code}) == Progress.PENDING
    assert T0 in markers.remaining


@pytest.mark.parametrize(
    "code", [Errors.INVALID_PRODUCER_EPOCH, Errors.TRANSACTION_COORDINATOR_FENCED]
)
def test_fencing_errors_cancel_the_send(code: int) -> None:
    markers = pending()
    assert markers.on_response({T0: Errors.NONE, T1: code}) == Progress.CANCELLED


@pytest.mark.parametrize(
    "code", [Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT, Errors.UNSUPPORTED_VERSION]
)
def test_unsupported_partitions_are_dropped(code: int) -> None:
    markers = PendingMarkers("app", 7, 2, TxnResult.ABORT, 5, {T0})
    assert markers.on_response({T0: code}) == Progress.DONE


@pytest.mark.parametrize(
    "code",
    [
        Errors.CORRUPT_MESSAGE,
        Errors.MESSAGE_TOO_LARGE,
        Errors.RECORD_LIST_TOO_LARGE,
        Errors.INVALID_REQUIRED_ACKS,
        Errors.UNKNOWN_SERVER_ERROR,
    ],
)
def test_unexpected_errors_are_fatal(code: int) -> None:
    with pytest.raises(MarkerError):
        pending().on_response({T0: code})


def test_answers_for_partitions_already_done_are_ignored() -> None:
    markers = PendingMarkers("app", 7, 2, TxnResult.COMMIT, 5, {T0})
    assert markers.on_response({T0: Errors.NONE}) == Progress.DONE
    assert markers.on_response({T0: Errors.INVALID_PRODUCER_EPOCH}) == Progress.DONE


def test_markers_for_a_decision() -> None:
    meta = TxnMetadata("app", 7, 2, 1000, TxnState.PREPARE_ABORT, frozenset({T0, U0}), 1, 2)
    markers = markers_for(meta, coordinator_epoch=9)
    assert (markers.producer_id, markers.producer_epoch, markers.result) == (7, 2, TxnResult.ABORT)
    assert (markers.coordinator_epoch, markers.remaining) == (9, {T0, U0})
    with pytest.raises(ValueError):
        markers_for(TxnMetadata("app", 7, 2, 1000, TxnState.ONGOING, frozenset({T0})), 9)


def test_a_new_coordinator_finishes_decided_transactions() -> None:
    def meta(tid: str, state: TxnState, parts: frozenset[tuple[str, int]]) -> TxnMetadata:
        return TxnMetadata(tid, hash(tid) % 1000, 1, 60_000, state, parts, 10, 20)

    commit = meta("c", TxnState.PREPARE_COMMIT, frozenset({T0, T1}))
    abort = meta("a", TxnState.PREPARE_ABORT, frozenset({U0}))
    ongoing = meta("o", TxnState.ONGOING, frozenset({T0}))
    done = meta("d", TxnState.COMPLETE_COMMIT, frozenset())
    records = [
        (encode_key("c"), encode_value(meta("c", TxnState.ONGOING, frozenset({T0, T1})))),
        (encode_key("c"), encode_value(commit)),
        (encode_key("a"), encode_value(abort)),
        (encode_key("o"), encode_value(ongoing)),
        (encode_key("d"), encode_value(done)),
        (encode_key("x"), encode_value(done)),
        (encode_key("x"), None),
    ]
    loaded = load_partition(records, coordinator_epoch=4, now_ms=99)
    assert set(loaded.entries) == {"c", "a", "o", "d"}
    by_id = {c.entry.transactional_id: c for c in loaded.completions}
    assert set(by_id) == {"c", "a"}
    assert by_id["c"].markers.result == TxnResult.COMMIT
    assert by_id["c"].markers.remaining == {T0, T1}
    assert by_id["c"].markers.coordinator_epoch == 4
    assert by_id["a"].markers.result == TxnResult.ABORT
    assert by_id["c"].target.state == TxnState.COMPLETE_COMMIT
    # The entry is pending its Complete write: clients retry with CONCURRENT_TRANSACTIONS.
    c_entry = loaded.entries["c"]
    assert c_entry.pending is by_id["c"].target
    assert c_entry.end_txn(commit.producer_id, 1, True, 100).error == Errors.CONCURRENT_TRANSACTIONS
    c_entry.complete(by_id["c"].target)
    assert c_entry.state == TxnState.COMPLETE_COMMIT
    assert loaded.entries["o"].pending is None
