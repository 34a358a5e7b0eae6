"""Transactions in the producer state: a producer's open transaction, the markers that end it
(Kafka's epoch and coordinator-epoch checks), the first unstable offset, the last stable offset
an abort records, expiry, snapshots and replay."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from crc32c import crc32c

from brook.log.producer_state import (
    CompletedTxn,
    ProducerStateManager,
    snapshot_path,
)
from brook.protocol.batch import BatchHeader, read_header
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch
from brook.protocol.txn_marker import TxnMarker, marker_batch, read_marker

A, B = 4000, 4001


def data(
    pid: int, seq: int, base: int, *, epoch: int = 0, count: int = 2, txn: bool = True
) -> BatchHeader:
    return read_header(
        build_simple_batch(
            [b"x"] * count,
            base_offset=base,
            producer_id=pid,
            producer_epoch=epoch,
            base_sequence=seq,
            transactional=txn,
            timestamp=1000 + base,
        )
    )


def marker(
    pid: int, base: int, *, commit: bool, epoch: int = 0, coordinator: int = 0
) -> tuple[BatchHeader, TxnMarker]:
    m = TxnMarker(pid, epoch, commit, coordinator)
    return read_header(marker_batch(m, timestamp=1000 + base, base_offset=base)), m


def write(state: ProducerStateManager, header: BatchHeader) -> None:
    assert state.check_append(header) is None
    assert state.update(header, header.base_offset, header.max_timestamp) is None
    state.map_end_offset = header.next_offset


def end(state: ProducerStateManager, pair: tuple[BatchHeader, TxnMarker]) -> CompletedTxn | None:
    header, m = pair
    state.check_marker(m)
    done = state.update(header, header.base_offset, header.max_timestamp, m)
    state.map_end_offset = header.next_offset
    return done


def code(call: object) -> int:
    with pytest.raises(KafkaError) as info:
        call()  # type: ignore[operator]
    return info.value.code


def test_a_transaction_holds_the_first_unstable_offset_until_its_marker(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    assert state.first_unstable_offset() is None
    write(state, data(A, 0, 10))
    write(state, data(A, 2, 12))
    assert state.first_unstable_offset() == 10
    done = end(state, marker(A, 14, commit=True))
    assert done == CompletedTxn(A, 10, 14, aborted=False)
    # Ended, but its marker is not replicated yet: still unstable.
    assert state.first_unstable_offset() == 10
    state.on_high_watermark(14)
    assert state.first_unstable_offset() == 10
    state.on_high_watermark(15)
    assert state.first_unstable_offset() is None
    # The next transaction of the same producer starts at its own first batch.
    write(state, data(A, 4, 15))
    assert state.first_unstable_offset() == 15


def test_the_earliest_open_transaction_of_any_producer_wins(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    write(state, data(A, 0, 0))
    write(state, data(B, 0, 2))
    write(state, data(A, 2, 4))
    done = end(state, marker(A, 6, commit=False))
    assert done == CompletedTxn(A, 0, 6, aborted=True)
    # What A's abort records in the .txnindex: B's transaction, open since 2, bounds it.
    assert state.last_stable_offset_after(done) == 2
    state.on_high_watermark(7)
    assert state.first_unstable_offset() == 2
    done_b = end(state, marker(B, 7, commit=True))
    assert done_b is not None
    assert state.last_stable_offset_after(done_b) == 8


def test_a_marker_with_nothing_open_ends_nothing(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    assert end(state, marker(A, 0, commit=False, coordinator=3)) is None
    assert state.first_unstable_offset() is None
    entry = state.last_entry(A)
    assert entry is not None and entry.coordinator_epoch == 3


def test_non_transactional_write_inside_a_transaction_is_invalid(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    write(state, data(A, 0, 0))
    assert code(lambda: state.check_append(data(A, 2, 2, txn=False))) == Errors.INVALID_TXN_STATE
    end(state, marker(A, 2, commit=True))
    write(state, data(A, 2, 3, txn=False))


def test_markers_of_old_epochs_and_fenced_coordinators_are_refused(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    write(state, data(A, 0, 0, epoch=1))
    end(state, marker(A, 2, commit=True, epoch=1, coordinator=5))
    older_epoch = marker(A, 3, commit=True, epoch=0, coordinator=5)[1]
    assert code(lambda: state.check_marker(older_epoch)) == Errors.INVALID_PRODUCER_EPOCH
    fenced = marker(A, 3, commit=True, epoch=1, coordinator=4)[1]
    assert code(lambda: state.check_marker(fenced)) == Errors.TRANSACTION_COORDINATOR_FENCED
    state.check_marker(marker(A, 3, commit=True, epoch=2, coordinator=6)[1])


def test_a_fencing_abort_bumps_the_partitions_epoch(tmp_path: Path) -> None:
    """The coordinator aborts a zombie's transaction under a bumped epoch: the zombie's next
    write to the partition is refused."""
    state = ProducerStateManager(tmp_path)
    write(state, data(A, 0, 0, epoch=0))
    done = end(state, marker(A, 2, commit=False, epoch=1))
    assert done == CompletedTxn(A, 0, 2, aborted=True)
    assert code(lambda: state.check_append(data(A, 2, 3, epoch=0))) == Errors.INVALID_PRODUCER_EPOCH


def test_producers_with_open_transactions_do_not_expire(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    write(state, data(A, 0, 0))
    write(state, data(B, 0, 2, txn=False))
    assert state.remove_expired(now_ms=10**9, max_age_ms=1) == 1
    assert state.last_entry(A) is not None and state.last_entry(B) is None
    assert state.first_unstable_offset() == 0


def test_snapshots_keep_open_transactions(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    write(state, data(A, 0, 0))
    end(state, marker(A, 2, commit=True, coordinator=7))
    write(state, data(A, 2, 3))
    write(state, data(B, 0, 5, txn=False))
    state.take_snapshot()
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load(0, 7) == 7
    assert loaded.producers == state.producers
    assert loaded.first_unstable_offset() == 3
    entry = loaded.last_entry(A)
    assert entry is not None and entry.coordinator_epoch == 7


def test_version_1_snapshots_still_load(tmp_path: Path) -> None:
    """A snapshot written before transactions (no coordinator epoch, no open transaction)."""
    body = struct.pack(">i", 1) + struct.pack(">qhqB", A, 2, 1234, 1)
    body += struct.pack(">iiqiq", 0, 4, 9, 4, 1234)
    snapshot_path(tmp_path, 10).write_bytes(struct.pack(">hI", 1, crc32c(body)) + body)
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load(0, 10) == 10
    entry = loaded.last_entry(A)
    assert entry is not None
    assert (entry.epoch, entry.last_seq, entry.current_txn_first_offset) == (2, 4, None)


def test_replay_reads_markers_and_reports_what_they_end(tmp_path: Path) -> None:
    batches = [
        build_simple_batch(
            [b"a"],
            base_offset=0,
            producer_id=A,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
        ),
        build_simple_batch(
            [b"b"],
            base_offset=1,
            producer_id=B,
            producer_epoch=0,
            base_sequence=0,
            transactional=True,
        ),
        marker_batch(TxnMarker(A, 0, False, 1), timestamp=0, base_offset=2),
        marker_batch(TxnMarker(B, 0, True, 1), timestamp=0, base_offset=3),
        build_simple_batch(
            [b"c"],
            base_offset=4,
            producer_id=A,
            producer_epoch=0,
            base_sequence=1,
            transactional=True,
        ),
    ]
    by_offset = {read_header(b).base_offset: b for b in batches}
    completed: list[CompletedTxn] = []
    state = ProducerStateManager(tmp_path)
    state.replay(
        [read_header(b) for b in batches],
        read_marker=lambda h: read_marker(by_offset[h.base_offset]),
        on_completed=completed.append,
    )
    assert completed == [CompletedTxn(A, 0, 2, True), CompletedTxn(B, 1, 3, False)]
    assert state.map_end_offset == 5
    assert state.first_unstable_offset() == 0  # markers not known replicated yet
    state.on_high_watermark(4)
    assert state.first_unstable_offset() == 4  # A's second transaction
