"""IdempotenceManager: sequences per partition, what may be drained, and recovery decisions
as Java's TransactionManager makes them for an idempotent producer."""

from __future__ import annotations

from brook.client.producer.batch import ProducerBatch, encode_record_body
from brook.client.producer.idempotence import MAX_EPOCH, IdempotenceManager, State
from brook.protocol.errors import Errors, KafkaError

TP = ("t", 0)


def batch(records: int = 1) -> ProducerBatch:
    b = ProducerBatch(TP, 0.0, 1 << 20)
    for _ in range(records):
        b.try_append(0, encode_record_body(None, b"v", None), -1, 1, None)
    return b


def ready() -> IdempotenceManager:
    m = IdempotenceManager()
    assert m.needs_producer_id()
    m.initializing()
    assert not m.needs_producer_id()
    m.set_producer_id(42, 0)
    assert m.state is State.READY
    return m


def test_nothing_drains_without_a_producer_id() -> None:
    m = IdempotenceManager()
    assert m.should_stop_drain(batch())


def test_sequences_run_per_partition_by_record_count() -> None:
    m = ready()
    a, b = batch(3), batch(2)
    m.stamp(a)
    m.stamp(b)
    assert (a.producer_id, a.producer_epoch, a.base_sequence) == (42, 0, 0)
    assert b.base_sequence == 3 and m.sequence_number(TP) == 5
    assert m.first_in_flight_sequence(TP) == 0
    m.handle_completed(a, 100)
    assert m.last_acked_sequence(TP) == 2 and m.first_in_flight_sequence(TP) == 3


def test_out_of_order_for_the_next_batch_bumps_the_epoch_and_resequences() -> None:
    m = ready()
    a, b = batch(2), batch(1)
    m.stamp(a)
    m.stamp(b)
    # a is next in line (nothing acknowledged yet): a real gap.
    assert m.can_retry(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, a)
    assert m.epoch_bump_required
    m.bump_epoch_and_reset_id_if_needed()
    assert m.producer_id_and_epoch.epoch == 1
    assert [(x.producer_epoch, x.base_sequence) for x in (a, b)] == [(1, 0), (1, 2)]
    assert a.sequence_reset and m.sequence_number(TP) == 3


def test_out_of_order_for_a_later_batch_is_retried_without_a_bump() -> None:
    m = ready()
    a, b = batch(), batch()
    m.stamp(a)
    m.stamp(b)
    assert m.can_retry(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, 0, b)
    assert not m.epoch_bump_required


def test_unknown_producer_id_with_a_log_start_offset_bumps() -> None:
    m = ready()
    a = batch()
    m.stamp(a)
    assert m.can_retry(Errors.UNKNOWN_PRODUCER_ID, -1, a) and not m.epoch_bump_required
    assert m.can_retry(Errors.UNKNOWN_PRODUCER_ID, 0, a) and m.epoch_bump_required


def test_a_failed_batch_that_may_leave_a_gap_bumps_the_epoch() -> None:
    m = ready()
    a = batch()
    m.stamp(a)
    m.handle_failed(a, KafkaError(Errors.MESSAGE_TOO_LARGE), adjust=True)
    assert m.epoch_bump_required and not m.has_in_flight(TP)


def test_new_epoch_batches_wait_for_old_epoch_ones_in_flight() -> None:
    m = ready()
    a, c = batch(), batch()
    m.stamp(a)
    m.request_epoch_bump(("t", 1))  # another partition triggered the bump
    m.bump_epoch_and_reset_id_if_needed()
    assert m.should_stop_drain(c)  # partition 0 still has an epoch-0 batch in flight
    m.handle_completed(a, 0)
    assert not m.should_stop_drain(c)
    m.stamp(c)
    assert (c.producer_epoch, c.base_sequence) == (1, 0)


def test_expired_in_flight_batches_are_resolved_or_bumped() -> None:
    m = ready()
    a, b = batch(), batch()
    m.stamp(a)
    m.stamp(b)
    m.mark_sequence_unresolved(a)
    assert m.has_unresolved_sequence(TP)
    assert m.should_stop_drain(batch())  # nothing new until a's fate is known
    m.handle_completed(b, 1)  # b's success means a landed too
    m.remove_in_flight(a)
    m.maybe_resolve_sequences()
    assert not m.has_unresolved_sequence(TP) and not m.epoch_bump_required
    c = batch()
    m.stamp(c)
    m.mark_sequence_unresolved(c)
    m.remove_in_flight(c)
    m.maybe_resolve_sequences()  # c never acknowledged: start over under a new epoch
    assert m.epoch_bump_required


def test_epoch_overflow_asks_for_a_new_producer_id() -> None:
    m = ready()
    m.set_producer_id(42, MAX_EPOCH)
    m.request_epoch_bump(TP)
    m.bump_epoch_and_reset_id_if_needed()
    assert not m.has_producer_id and m.needs_producer_id()


def test_init_failures() -> None:
    m = IdempotenceManager()
    m.initializing()
    m.init_failed(KafkaError(Errors.COORDINATOR_NOT_AVAILABLE))
    assert m.needs_producer_id()
    m.init_failed(KafkaError(Errors.CLUSTER_AUTHORIZATION_FAILED))
    assert m.has_fatal_error and m.should_stop_drain(batch())


def test_a_new_producer_id_waits_for_batches_in_flight_under_the_old_one() -> None:
    m = ready()
    a, b = batch(), batch()
    m.stamp(a)
    m.set_producer_id(77, 0)  # after an epoch overflow
    assert m.should_stop_drain(b)
    m.handle_completed(a, 0)
    m.stamp(b)
    assert (b.producer_id, b.producer_epoch, b.base_sequence) == (77, 0, 0)
