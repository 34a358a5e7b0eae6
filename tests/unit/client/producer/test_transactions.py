"""The transactional producer's state machine under a simulated clock: Kafka's states and
transitions, the order of requests (FindCoordinator, InitProducerId, AddPartitionsToTxn before
a partition's first batch, AddOffsetsToTxn then TxnOffsetCommit to the group's coordinator,
EndTxn after the last batch), and each handler's retriable / abortable / fatal errors."""

from __future__ import annotations

import pytest

from brook.client.cluster import BrokerNode, TopicPartition
from brook.client.consumer.coordinator import ConsumerGroupMetadata, OffsetAndMetadata
from brook.client.producer.errors import (
    AbortableTransactionError,
    FatalTransactionError,
    ProducerFencedError,
    TransactionStateError,
)
from brook.client.producer.transactions import (
    ADD_PARTITIONS_RETRY_BACKOFF_MS,
    VALID_PREVIOUS,
    CoordinatorAnswer,
    ErrorAnswer,
    Outgoing,
    PartitionsAnswer,
    ProducerIdAnswer,
    State,
    TransactionManager,
    TxnResult,
)
from brook.protocol.errors import Errors, KafkaError

BACKOFF = 100.0
TXN_NODE = BrokerNode(2, "b2", 9092)
GROUP_NODE = BrokerNode(3, "b3", 9092)
TP0 = TopicPartition("out", 0)
TP1 = TopicPartition("out", 1)
SECRET = TopicPartition("secret", 0)
GROUP = ConsumerGroupMetadata("g", 7, "member-1", None)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0


def manager(ids: list[tuple[int, int]] | None = None) -> TransactionManager:
    given = ids if ids is not None else []
    return TransactionManager(
        "tid", 30_000, BACKOFF, on_producer_id=lambda pid, epoch: given.append((pid, epoch))
    )


def next_out(tm: TransactionManager, clock: Clock, incomplete: bool = False) -> Outgoing:
    out = tm.next_request(clock.now, incomplete)
    assert isinstance(out, Outgoing), out
    return out


def answer_coordinator(tm: TransactionManager, clock: Clock, node: BrokerNode = TXN_NODE) -> None:
    out = next_out(tm, clock)
    assert out.api == "FIND_COORDINATOR"
    tm.on_response(out, CoordinatorAnswer(Errors.NONE, node), clock.now)


def initialized(clock: Clock, ids: list[tuple[int, int]] | None = None) -> TransactionManager:
    tm = manager(ids)
    result = tm.init_transactions()
    answer_coordinator(tm, clock)
    out = next_out(tm, clock)
    assert out.api == "INIT_PRODUCER_ID"
    tm.on_response(out, ProducerIdAnswer(Errors.NONE, 42, 3), clock.now)
    assert result.done and result.error is None
    return tm


def in_transaction_with(clock: Clock, *tps: TopicPartition) -> TransactionManager:
    tm = initialized(clock)
    tm.begin_transaction()
    for tp in tps:
        tm.maybe_add_partition(tp)
    out = next_out(tm, clock)
    assert out.api == "ADD_PARTITIONS"
    tm.on_response(out, PartitionsAnswer(dict.fromkeys(tps, Errors.NONE)), clock.now)
    return tm


# -- states --------------------------------------------------------------------------------


def test_transition_table_is_kafkas() -> None:
    S = State
    assert VALID_PREVIOUS[S.INITIALIZING] == {S.UNINITIALIZED, S.ABORTING_TRANSACTION}
    assert VALID_PREVIOUS[S.READY] == {
        S.INITIALIZING,
        S.COMMITTING_TRANSACTION,
        S.ABORTING_TRANSACTION,
    }
    assert VALID_PREVIOUS[S.IN_TRANSACTION] == {S.READY}
    assert VALID_PREVIOUS[S.COMMITTING_TRANSACTION] == {S.IN_TRANSACTION}
    assert VALID_PREVIOUS[S.ABORTING_TRANSACTION] == {S.IN_TRANSACTION, S.ABORTABLE_ERROR}
    assert VALID_PREVIOUS[S.ABORTABLE_ERROR] == {
        S.IN_TRANSACTION,
        S.COMMITTING_TRANSACTION,
        S.ABORTABLE_ERROR,
        S.INITIALIZING,
    }
    assert VALID_PREVIOUS[S.FATAL_ERROR] == set(State)


def test_calls_out_of_order_are_refused_and_change_nothing() -> None:
    clock = Clock()
    tm = manager()
    with pytest.raises(TransactionStateError, match="before init_transactions"):
        tm.begin_transaction()
    with pytest.raises(TransactionStateError, match="before completing a call to init"):
        tm.check_send()
    assert tm.state is State.UNINITIALIZED
    tm = initialized(clock)
    with pytest.raises(TransactionStateError, match="commit_transaction\\(\\) in state READY"):
        tm.begin_commit()
    with pytest.raises(TransactionStateError, match="abort_transaction\\(\\) in state READY"):
        tm.begin_abort()
    with pytest.raises(TransactionStateError, match="send in state READY"):
        tm.check_send()
    with pytest.raises(TransactionStateError, match="not in progress"):
        tm.send_offsets({TP0: OffsetAndMetadata(1)}, GROUP)
    with pytest.raises(TransactionStateError, match="once per producer"):
        tm.init_transactions()
    tm.begin_transaction()
    with pytest.raises(TransactionStateError, match="begin_transaction\\(\\) in state"):
        tm.begin_transaction()
    assert tm.state is State.IN_TRANSACTION


# -- init_transactions ---------------------------------------------------------------------


def test_init_finds_the_coordinator_then_asks_for_a_fresh_id() -> None:
    clock = Clock()
    ids: list[tuple[int, int]] = []
    tm = manager(ids)
    result = tm.init_transactions()
    assert tm.state is State.INITIALIZING
    find = next_out(tm, clock)
    assert find.api == "FIND_COORDINATOR" and find.node is None
    assert find.body["key"] == "tid" and find.body["key_type"] == 1
    assert tm.next_request(clock.now, False) is None  # one request in flight
    tm.on_response(find, CoordinatorAnswer(Errors.NONE, TXN_NODE), clock.now)
    init = next_out(tm, clock)
    assert init.node == TXN_NODE
    assert init.body == {
        "transactional_id": "tid",
        "transaction_timeout": 30_000,
        "producer_id": -1,
        "producer_epoch": -1,
    }
    tm.on_response(init, ProducerIdAnswer(Errors.NONE, 42, 3), clock.now)
    assert result.done and result.error is None
    assert tm.state is State.READY and ids == [(42, 3)]


def test_init_retries_a_moved_or_loading_coordinator_after_the_backoff() -> None:
    clock = Clock()
    tm = manager()
    result = tm.init_transactions()
    answer_coordinator(tm, clock)
    init = next_out(tm, clock)
    tm.on_response(init, ProducerIdAnswer(Errors.NOT_COORDINATOR), clock.now)
    # Looked up again first, then the retry waits for its backoff.
    find = next_out(tm, clock)
    assert find.api == "FIND_COORDINATOR"
    tm.on_response(find, CoordinatorAnswer(Errors.NONE, GROUP_NODE), clock.now)
    assert tm.next_request(clock.now, False) == BACKOFF
    clock.now += BACKOFF
    init = next_out(tm, clock)
    assert init.node == GROUP_NODE
    tm.on_response(init, ProducerIdAnswer(Errors.CONCURRENT_TRANSACTIONS), clock.now)
    clock.now += BACKOFF
    init = next_out(tm, clock)
    tm.on_response(init, ProducerIdAnswer(Errors.NONE, 5, 0), clock.now)
    assert result.done and result.error is None


def test_init_called_again_while_running_returns_the_same_result() -> None:
    tm = manager()
    first = tm.init_transactions()
    assert tm.init_transactions() is first


def test_init_lost_connection_looks_the_coordinator_up_again() -> None:
    clock = Clock()
    tm = manager()
    tm.init_transactions()
    answer_coordinator(tm, clock)
    init = next_out(tm, clock)
    tm.on_send_failed(init, KafkaError(Errors.NETWORK_EXCEPTION, "gone"), clock.now)
    assert next_out(tm, clock).api == "FIND_COORDINATOR"


@pytest.mark.parametrize(
    ("code", "error"),
    [
        (Errors.PRODUCER_FENCED, ProducerFencedError),
        (Errors.INVALID_PRODUCER_EPOCH, ProducerFencedError),
        (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, FatalTransactionError),
        (Errors.INVALID_TRANSACTION_TIMEOUT, FatalTransactionError),
        (Errors.UNKNOWN_SERVER_ERROR, FatalTransactionError),
    ],
)
def test_init_errors_that_end_the_producer(code: int, error: type[Exception]) -> None:
    clock = Clock()
    tm = manager()
    result = tm.init_transactions()
    answer_coordinator(tm, clock)
    tm.on_response(next_out(tm, clock), ProducerIdAnswer(code), clock.now)
    assert tm.state is State.FATAL_ERROR
    assert isinstance(result.error, error)
    with pytest.raises(error):
        tm.begin_transaction()


def test_init_timeout_message_names_the_broker_limit() -> None:
    clock = Clock()
    tm = manager()
    result = tm.init_transactions()
    answer_coordinator(tm, clock)
    tm.on_response(next_out(tm, clock), ProducerIdAnswer(Errors.INVALID_TRANSACTION_TIMEOUT), 0)
    assert "transaction.timeout.ms=30000" in str(result.error)
    assert "transaction.max.timeout.ms" in str(result.error)


# -- partitions ----------------------------------------------------------------------------


def test_a_partition_is_added_before_its_batches_go() -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    tm.check_send()
    tm.maybe_add_partition(TP0)
    tm.maybe_add_partition(TP1)
    assert not tm.is_send_allowed(TP0)
    out = next_out(tm, clock)
    assert out.api == "ADD_PARTITIONS" and out.node == TXN_NODE
    assert out.body == {
        "v3_and_below_transactional_id": "tid",
        "v3_and_below_producer_id": 42,
        "v3_and_below_producer_epoch": 3,
        "v3_and_below_topics": [{"name": "out", "partitions": [0, 1]}],
    }
    # A record to a partition being added does not ask again.
    tm.maybe_add_partition(TP0)
    assert tm.next_request(clock.now, True) is None
    tm.on_response(out, PartitionsAnswer({TP0: Errors.NONE, TP1: Errors.NONE}), clock.now)
    assert tm.is_send_allowed(TP0) and tm.is_send_allowed(TP1)
    tm.maybe_add_partition(TP0)
    assert tm.next_request(clock.now, False) is None


def test_concurrent_transactions_on_the_first_add_retries_quickly() -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    out = next_out(tm, clock)
    tm.on_response(out, PartitionsAnswer({TP0: Errors.CONCURRENT_TRANSACTIONS}), clock.now)
    assert tm.next_request(clock.now, True) == ADD_PARTITIONS_RETRY_BACKOFF_MS
    clock.now += ADD_PARTITIONS_RETRY_BACKOFF_MS
    out = next_out(tm, clock, True)
    tm.on_response(out, PartitionsAnswer({TP0: Errors.NONE}), clock.now)
    # Once partitions are in, the ordinary backoff applies.
    tm.maybe_add_partition(TP1)
    out = next_out(tm, clock)
    tm.on_response(out, PartitionsAnswer({TP1: Errors.CONCURRENT_TRANSACTIONS}), clock.now)
    assert tm.next_request(clock.now, True) == BACKOFF


def test_unauthorized_topic_makes_the_transaction_abortable() -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.maybe_add_partition(SECRET)
    out = next_out(tm, clock)
    tm.on_response(
        out,
        PartitionsAnswer(
            {TP0: Errors.OPERATION_NOT_ATTEMPTED, SECRET: Errors.TOPIC_AUTHORIZATION_FAILED}
        ),
        clock.now,
    )
    assert tm.state is State.ABORTABLE_ERROR
    with pytest.raises(AbortableTransactionError, match="secret"):
        tm.check_send()
    with pytest.raises(AbortableTransactionError, match="abort_transaction"):
        tm.begin_commit()
    # Nothing was added: the abort needs no EndTxn.
    result = tm.begin_abort()
    assert tm.next_request(clock.now, False) is None
    assert result.done and result.error is None
    assert tm.state is State.READY


@pytest.mark.parametrize("code", [Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED])
def test_fenced_while_adding_partitions(code: int) -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.on_response(next_out(tm, clock), PartitionsAnswer({TP0: code}), clock.now)
    assert tm.state is State.FATAL_ERROR
    for call in (tm.check_send, tm.begin_commit, tm.begin_abort, tm.begin_transaction):
        with pytest.raises(ProducerFencedError, match="newer producer"):
            call()


# -- commit and abort ----------------------------------------------------------------------


def test_end_txn_waits_for_the_last_batch() -> None:
    clock = Clock()
    tm = in_transaction_with(clock, TP0)
    result = tm.begin_commit()
    assert tm.state is State.COMMITTING_TRANSACTION
    with pytest.raises(TransactionStateError):
        tm.check_send()
    assert tm.next_request(clock.now, True) is None
    out = next_out(tm, clock, False)
    assert out.api == "END_TXN" and out.body["committed"] is True
    assert (out.body["producer_id"], out.body["producer_epoch"]) == (42, 3)
    tm.on_response(out, ErrorAnswer(Errors.CONCURRENT_TRANSACTIONS), clock.now)
    clock.now += BACKOFF
    tm.on_response(next_out(tm, clock), ErrorAnswer(Errors.NONE), clock.now)
    assert result.done and result.error is None
    assert tm.state is State.READY
    assert not tm.is_send_allowed(TP0)  # the next transaction adds it again


def test_an_empty_transaction_sends_no_end_txn() -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    result = tm.begin_commit()
    assert tm.next_request(clock.now, False) is None
    assert result.done and result.error is None and tm.state is State.READY


def test_a_failed_batch_fails_the_commit_and_the_abort_recovers() -> None:
    clock = Clock()
    tm = in_transaction_with(clock, TP0)
    commit = tm.begin_commit()
    tm.on_batch_failed(KafkaError(Errors.MESSAGE_TOO_LARGE, "too big"), needs_epoch_bump=False)
    assert commit.done and isinstance(commit.error, AbortableTransactionError)
    assert commit.error.code == Errors.MESSAGE_TOO_LARGE
    assert tm.next_request(clock.now, False) is None  # no EndTxn(commit) goes out
    abort = tm.begin_abort()
    out = next_out(tm, clock)
    assert out.api == "END_TXN" and out.body["committed"] is False
    tm.on_response(out, ErrorAnswer(Errors.NONE), clock.now)
    assert abort.done and abort.error is None and tm.state is State.READY


@pytest.mark.parametrize("code", [Errors.PRODUCER_FENCED, Errors.INVALID_PRODUCER_EPOCH])
def test_fenced_at_commit(code: int) -> None:
    clock = Clock()
    tm = in_transaction_with(clock, TP0)
    result = tm.begin_commit()
    tm.on_response(next_out(tm, clock), ErrorAnswer(code), clock.now)
    assert isinstance(result.error, ProducerFencedError)
    assert tm.state is State.FATAL_ERROR


def test_end_txn_retried_at_a_new_coordinator() -> None:
    clock = Clock()
    tm = in_transaction_with(clock, TP0)
    result = tm.begin_commit()
    tm.on_response(next_out(tm, clock), ErrorAnswer(Errors.NOT_COORDINATOR), clock.now)
    find = next_out(tm, clock)
    assert find.api == "FIND_COORDINATOR"
    tm.on_response(find, CoordinatorAnswer(Errors.NONE, GROUP_NODE), clock.now)
    clock.now += BACKOFF
    out = next_out(tm, clock)
    assert out.api == "END_TXN" and out.node == GROUP_NODE
    tm.on_response(out, ErrorAnswer(Errors.NONE), clock.now)
    assert result.done and result.error is None


# -- KIP-360 -------------------------------------------------------------------------------


def test_unknown_producer_id_is_recovered_by_an_epoch_bump_at_abort() -> None:
    clock = Clock()
    ids: list[tuple[int, int]] = []
    tm = initialized(clock, ids)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.on_response(next_out(tm, clock), PartitionsAnswer({TP0: Errors.NONE}), clock.now)
    tm.maybe_add_partition(TP1)
    out = next_out(tm, clock)
    tm.on_response(out, PartitionsAnswer({TP1: Errors.UNKNOWN_PRODUCER_ID}), clock.now)
    assert tm.state is State.ABORTABLE_ERROR and tm.epoch_bump_required
    abort = tm.begin_abort()
    end = next_out(tm, clock)
    assert end.api == "END_TXN" and end.body["committed"] is False
    tm.on_response(end, ErrorAnswer(Errors.NONE), clock.now)
    assert not abort.done and tm.state is State.ABORTING_TRANSACTION
    bump = next_out(tm, clock)
    assert bump.api == "EPOCH_BUMP"
    assert (bump.body["producer_id"], bump.body["producer_epoch"]) == (42, 3)
    tm.on_response(bump, ProducerIdAnswer(Errors.NONE, 42, 4), clock.now)
    assert abort.done and abort.error is None
    assert tm.state is State.READY and not tm.epoch_bump_required
    assert ids[-1] == (42, 4)


def test_an_abort_with_nothing_added_still_bumps() -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    tm.maybe_add_partition(TP0)
    tm.on_response(next_out(tm, clock), PartitionsAnswer({TP0: Errors.UNKNOWN_PRODUCER_ID}), 0)
    abort = tm.begin_abort()
    bump = next_out(tm, clock)  # no EndTxn: nothing was added
    assert bump.api == "EPOCH_BUMP" and tm.state is State.ABORTING_TRANSACTION
    tm.on_response(bump, ProducerIdAnswer(Errors.NONE, 42, 4), clock.now)
    assert abort.done and abort.error is None and tm.state is State.READY


def test_invalid_producer_id_mapping_bumps_without_end_txn() -> None:
    clock = Clock()
    tm = in_transaction_with(clock, TP0)
    result = tm.begin_commit()
    tm.on_response(next_out(tm, clock), ErrorAnswer(Errors.INVALID_PRODUCER_ID_MAPPING), 0)
    assert isinstance(result.error, AbortableTransactionError)
    abort = tm.begin_abort()
    bump = next_out(tm, clock)
    assert bump.api == "EPOCH_BUMP"
    tm.on_response(bump, ProducerIdAnswer(Errors.NONE, 43, 0), clock.now)
    assert abort.done and abort.error is None and tm.state is State.READY


def test_a_batch_with_a_sequence_gap_bumps_at_abort() -> None:
    clock = Clock()
    tm = in_transaction_with(clock, TP0)
    tm.on_batch_failed(KafkaError(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER), needs_epoch_bump=True)
    tm.begin_abort()
    tm.on_response(next_out(tm, clock), ErrorAnswer(Errors.NONE), clock.now)
    assert next_out(tm, clock).api == "EPOCH_BUMP"


def test_a_zombie_bumping_its_epoch_is_fenced() -> None:
    clock = Clock()
    tm = in_transaction_with(clock, TP0)
    tm.on_batch_failed(KafkaError(Errors.INVALID_PRODUCER_EPOCH), needs_epoch_bump=True)
    abort = tm.begin_abort()
    tm.on_response(next_out(tm, clock), ErrorAnswer(Errors.PRODUCER_FENCED), clock.now)
    assert isinstance(abort.error, ProducerFencedError)
    assert tm.state is State.FATAL_ERROR


# -- offsets -------------------------------------------------------------------------------


def test_offsets_go_through_add_offsets_then_the_group_coordinator() -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    offsets = {TP0: OffsetAndMetadata(10), TP1: OffsetAndMetadata(20, "m")}
    result = tm.send_offsets(offsets, GROUP)
    add = next_out(tm, clock)
    assert add.api == "ADD_OFFSETS" and add.node == TXN_NODE and add.body["group_id"] == "g"
    tm.on_response(add, ErrorAnswer(Errors.NONE), clock.now)
    assert not result.done
    find = next_out(tm, clock)
    assert find.api == "FIND_COORDINATOR"
    assert (find.body["key"], find.body["key_type"]) == ("g", 0)
    tm.on_response(find, CoordinatorAnswer(Errors.NONE, GROUP_NODE), clock.now)
    commit = next_out(tm, clock)
    assert commit.api == "TXN_OFFSET_COMMIT" and commit.node == GROUP_NODE
    body = commit.body
    assert (body["generation_id"], body["member_id"], body["producer_id"]) == (7, "member-1", 42)
    assert body["topics"] == [
        {
            "name": "out",
            "partitions": [
                {
                    "partition_index": 0,
                    "committed_offset": 10,
                    "committed_leader_epoch": -1,
                    "committed_metadata": "",
                },
                {
                    "partition_index": 1,
                    "committed_offset": 20,
                    "committed_leader_epoch": -1,
                    "committed_metadata": "m",
                },
            ],
        }
    ]
    # One partition's coordinator is loading: only that one is sent again.
    tm.on_response(
        commit,
        PartitionsAnswer({TP0: Errors.NONE, TP1: Errors.COORDINATOR_LOAD_IN_PROGRESS}),
        clock.now,
    )
    assert not result.done
    clock.now += BACKOFF
    again = next_out(tm, clock)
    assert [p["partition_index"] for p in again.body["topics"][0]["partitions"]] == [1]
    tm.on_response(again, PartitionsAnswer({TP1: Errors.NONE}), clock.now)
    assert result.done and result.error is None
    # The offsets started the transaction: the commit sends EndTxn.
    tm.begin_commit()
    assert next_out(tm, clock).api == "END_TXN"


@pytest.mark.parametrize(
    "code", [Errors.ILLEGAL_GENERATION, Errors.UNKNOWN_MEMBER_ID, Errors.FENCED_INSTANCE_ID]
)
def test_offsets_of_a_member_out_of_the_generation_are_abortable(code: int) -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    result = tm.send_offsets({TP0: OffsetAndMetadata(10)}, GROUP)
    tm.on_response(next_out(tm, clock), ErrorAnswer(Errors.NONE), clock.now)
    answer_coordinator(tm, clock, GROUP_NODE)
    tm.on_response(next_out(tm, clock), PartitionsAnswer({TP0: code}), clock.now)
    assert isinstance(result.error, AbortableTransactionError)
    assert tm.state is State.ABORTABLE_ERROR


def test_group_coordinator_moved_is_looked_up_again() -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    result = tm.send_offsets({TP0: OffsetAndMetadata(10)}, GROUP)
    tm.on_response(next_out(tm, clock), ErrorAnswer(Errors.NONE), clock.now)
    answer_coordinator(tm, clock, GROUP_NODE)
    tm.on_response(next_out(tm, clock), PartitionsAnswer({TP0: Errors.NOT_COORDINATOR}), 0)
    find = next_out(tm, clock)
    assert (find.api, find.body["key"]) == ("FIND_COORDINATOR", "g")
    tm.on_response(find, CoordinatorAnswer(Errors.NONE, TXN_NODE), clock.now)
    clock.now += BACKOFF
    out = next_out(tm, clock)
    assert out.node == TXN_NODE
    tm.on_response(out, PartitionsAnswer({TP0: Errors.NONE}), clock.now)
    assert result.done and result.error is None


def test_group_authorization_on_add_offsets_is_abortable() -> None:
    clock = Clock()
    tm = initialized(clock)
    tm.begin_transaction()
    result = tm.send_offsets({TP0: OffsetAndMetadata(10)}, GROUP)
    tm.on_response(next_out(tm, clock), ErrorAnswer(Errors.GROUP_AUTHORIZATION_FAILED), 0)
    assert isinstance(result.error, AbortableTransactionError)
    assert "group: g" in str(result.error)


def test_results_complete_once() -> None:
    result = TxnResult()
    seen: list[BaseException | None] = []
    result.add_callback(lambda r: seen.append(r.error))
    result.complete(None)
    result.complete(KafkaError(Errors.UNKNOWN_SERVER_ERROR))
    result.add_callback(lambda r: seen.append(r.error))
    assert seen == [None, None]
