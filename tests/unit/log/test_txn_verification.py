"""KIP-890's verification guard on a partition: the decision which batches must be verified
and which are refused, the guard dropped by any transactional write of its producer (so a
marker written between verification and append makes the append fail), the lowest sequence
kept while verifying, expiry; and the same rules through a real PartitionLog."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from brook.log.log import PartitionLog
from brook.log.txn_verification import (
    VerificationGuard,
    VerificationStates,
    missing_verification,
    needs_verification,
)
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch
from brook.protocol.txn_marker import TxnMarker

PID = 7000
NOW = 1_700_000_000_000
OpenLog = Callable[..., PartitionLog]


def test_only_a_transactional_data_batch_opening_a_transaction_needs_verification() -> None:
    assert needs_verification(is_transactional=True, is_control=False, has_open_txn=False)
    assert not needs_verification(is_transactional=True, is_control=False, has_open_txn=True)
    assert not needs_verification(is_transactional=False, is_control=False, has_open_txn=False)
    assert not needs_verification(is_transactional=True, is_control=True, has_open_txn=False)


def test_the_append_needs_the_guard_its_verification_holds() -> None:
    states = VerificationStates()

    def missing(guard: VerificationGuard | None, open_txn: bool = False) -> bool:
        return missing_verification(states, PID, open_txn, True, False, guard)

    assert missing(None)  # nothing verified
    guard = states.start(PID, 0, 0, NOW)
    assert states.start(PID, 0, 0, NOW) is guard  # a retry continues the same verification
    assert not missing(guard)
    assert missing(None)
    assert missing(VerificationGuard())  # another verification's guard, however equal
    assert not missing(None, open_txn=True)  # a transaction open here needs no guard
    assert not missing_verification(states, PID, False, False, False, None)  # idempotent
    states.clear(PID)  # a marker or a batch of the producer was written
    assert missing(guard)
    assert states.start(PID, 0, 0, NOW) is not guard


def test_lowest_sequence_blocks_later_batches_until_written() -> None:
    states = VerificationStates()
    states.start(PID, 5, 0, NOW)
    states.check_sequence(PID, 5)
    with pytest.raises(KafkaError) as err:
        states.check_sequence(PID, 6)
    assert err.value.code == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    states.start(PID, 3, 0, NOW)  # a lower sequence of the same epoch lowers it
    with pytest.raises(KafkaError):
        states.check_sequence(PID, 5)
    states.start(PID, 9, 1, NOW)  # a newer epoch starts over
    states.check_sequence(PID, 9)
    states.start(PID, 2, 0, NOW)  # an older epoch changes nothing
    with pytest.raises(KafkaError):
        states.check_sequence(PID, 10)
    states.clear(PID)
    states.check_sequence(PID, 100)


def test_unused_entries_expire_with_the_producers() -> None:
    states = VerificationStates()
    states.start(PID, 0, 0, NOW)
    states.start(PID + 1, 0, 0, NOW + 500)
    states.expire(NOW + 999, 1000)
    assert len(states) == 2
    states.expire(NOW + 1000, 1000)
    assert states.guard(PID) is None and states.guard(PID + 1) is not None


def _batch(seq: int, value: bytes = b"v", epoch: int = 0) -> bytes:
    return build_simple_batch(
        [value],
        producer_id=PID,
        producer_epoch=epoch,
        base_sequence=seq,
        transactional=True,
        timestamp=NOW,
    )


def _refused(plog: PartitionLog, batch: bytes, guard: VerificationGuard | None) -> int:
    with pytest.raises(KafkaError) as err:
        plog.append_as_leader(batch, 0, NOW, verify=True, guard=guard)
    return err.value.code


def test_partition_log_refuses_unverified_first_batch(open_log: OpenLog) -> None:
    plog = open_log()
    assert _refused(plog, _batch(0), None) == Errors.INVALID_TXN_STATE
    assert plog.log_end_offset == 0
    # Without verification (off, or a follower) the same batch is written.
    other = open_log(name="other-0")
    assert other.append_as_leader(_batch(0), 0, NOW).first_offset == 0
    guard = plog.producer_state.verifications.start(PID, 0, 0, NOW)
    assert plog.append_as_leader(_batch(0), 0, NOW, verify=True, guard=guard).first_offset == 0
    # The transaction is open here now: later batches carry no guard and need none.
    assert plog.producer_state.verifications.guard(PID) is None
    assert plog.append_as_leader(_batch(1), 0, NOW, verify=True).first_offset == 1


def test_marker_between_verification_and_append_fails_the_append(open_log: OpenLog) -> None:
    """The ABA case: verified, then the transaction is aborted (its marker written), then the
    stale verification must not open a transaction nobody will end."""
    plog = open_log()
    first = plog.producer_state.verifications.start(PID, 0, 0, NOW)
    plog.append_as_leader(_batch(0), 0, NOW, verify=True, guard=first)
    late = plog.producer_state.verifications.start(PID, 1, 0, NOW)
    # batch 1 belongs to the open transaction: its guard is not even needed...
    plog.append_marker(TxnMarker(PID, 0, False, 0), 0, NOW)
    # ...but once the ABORT marker is written, the guard taken before it is stale.
    assert _refused(plog, _batch(1), late) == Errors.INVALID_TXN_STATE
    stale = plog.producer_state.verifications.start(PID, 1, 0, NOW)
    plog.append_marker(TxnMarker(PID, 0, False, 0), 0, NOW)
    assert _refused(plog, _batch(1), stale) == Errors.INVALID_TXN_STATE
    entry = plog.producer_state.last_entry(PID)
    assert entry is not None and entry.current_txn_first_offset is None  # nothing left open
