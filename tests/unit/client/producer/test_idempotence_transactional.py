"""The idempotence manager under a transactional producer: its id comes from the transaction
manager, batches are marked transactional and wait for their partition to join the
transaction, and a failure the idempotent producer would repair by bumping its own epoch makes
the transaction abortable instead (the abort bumps it)."""

from __future__ import annotations

from brook.client.cluster import BrokerNode, TopicPartition
from brook.client.producer.batch import ProducerBatch, encode_record_body
from brook.client.producer.idempotence import IdempotenceManager
from brook.client.producer.transactions import (
    Outgoing,
    PartitionsAnswer,
    State,
    TransactionManager,
)
from brook.protocol.batch import TRANSACTIONAL_BIT, read_header
from brook.protocol.errors import Errors, KafkaError

TP = TopicPartition("t", 0)


def batch(records: int = 1) -> ProducerBatch:
    b = ProducerBatch(TP, 0.0, 1 << 20)
    for _ in range(records):
        b.try_append(0, encode_record_body(None, b"v", None), -1, 1, None)
    return b


def in_transaction() -> tuple[TransactionManager, IdempotenceManager]:
    idem_box: list[IdempotenceManager] = []
    txn = TransactionManager(
        "tid", 60000, 100.0, on_producer_id=lambda p, e: idem_box[0].reset_producer_id(p, e)
    )
    idem = IdempotenceManager(txn)
    idem_box.append(idem)
    assert not idem.needs_producer_id()  # init_transactions asks, not the sender
    txn.state = State.READY  # as after init_transactions
    txn.producer_id, txn.epoch = 7, 2
    txn.coordinators[(1, "")] = BrokerNode(1, "b1", 9092)
    idem.reset_producer_id(7, 2)
    txn.begin_transaction()
    return txn, idem


def add(txn: TransactionManager, tp: TopicPartition) -> None:
    txn.maybe_add_partition(tp)
    out = txn.next_request(0.0, True)
    assert isinstance(out, Outgoing) and out.api == "ADD_PARTITIONS"
    txn.on_response(out, PartitionsAnswer({tp: Errors.NONE}), 0.0)


def test_batches_wait_for_their_partition_and_are_marked_transactional() -> None:
    txn, idem = in_transaction()
    assert not idem.send_allowed(TP)
    add(txn, TP)
    assert idem.send_allowed(TP)
    b = batch(3)
    idem.stamp(b)
    header, payload = b.wire()
    parsed = read_header(header + bytes(payload))
    assert parsed.attributes & TRANSACTIONAL_BIT
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (7, 2, 0)


def test_a_sequence_gap_makes_the_transaction_abortable_not_a_local_bump() -> None:
    txn, idem = in_transaction()
    add(txn, TP)
    a = batch(1)
    idem.stamp(a)
    # The broker refuses the next batch's sequence: not retried, no epoch bump of its own.
    assert not idem.can_retry(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, a)
    idem.handle_failed(a, KafkaError(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER), adjust=True)
    idem.bump_epoch_and_reset_id_if_needed()
    assert idem.producer_id_and_epoch.epoch == 2
    assert txn.state is State.ABORTABLE_ERROR and txn.epoch_bump_required


def test_a_new_epoch_starts_every_partition_at_sequence_zero() -> None:
    txn, idem = in_transaction()
    add(txn, TP)
    a = batch(4)
    idem.stamp(a)
    idem.handle_completed(a, 0)
    assert idem.sequence_number(TP) == 4
    idem.reset_producer_id(7, 3)
    b = batch(1)
    idem.stamp(b)
    assert (b.producer_epoch, b.base_sequence) == (3, 0)


def test_fenced_on_produce_ends_the_transaction_manager_too() -> None:
    txn, idem = in_transaction()
    add(txn, TP)
    a = batch(1)
    idem.stamp(a)
    idem.handle_failed(a, KafkaError(Errors.PRODUCER_FENCED), adjust=False)
    assert idem.has_fatal_error and txn.has_fatal_error
