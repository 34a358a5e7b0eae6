"""Transactions in a partition log: markers written as leader and as follower, the first
unstable offset, the aborted-transaction index per segment and what a read_committed fetch is
told, across rolls, truncation, retention, and clean and unclean restarts."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.log.txn_index import ENTRY_SIZE, AbortedTxn
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch
from brook.protocol.txn_marker import TxnMarker

OpenLog = Callable[..., PartitionLog]
A, B = 4000, 5000
NOW = 1_700_000_000_000


class Producer:
    """A transactional producer's batches: sequence numbers kept per producer."""

    def __init__(self, pid: int, epoch: int = 0) -> None:
        self.pid, self.epoch, self.seq = pid, epoch, 0

    def batch(self, *values: bytes, transactional: bool = True) -> bytes:
        data = build_simple_batch(
            list(values),
            producer_id=self.pid,
            producer_epoch=self.epoch,
            base_sequence=self.seq,
            transactional=transactional,
            timestamp=NOW,
        )
        self.seq += len(values)
        return data


def send(plog: PartitionLog, producer: Producer, *values: bytes) -> int:
    return plog.append_as_leader(producer.batch(*values), 0, NOW).first_offset


def end(plog: PartitionLog, producer: Producer, commit: bool, coordinator: int = 0) -> int:
    marker = TxnMarker(producer.pid, producer.epoch, commit, coordinator)
    result, _ = plog.append_marker(marker, 0, NOW)
    return result.first_offset


def aborted(plog: PartitionLog) -> list[AbortedTxn]:
    return plog.aborted_transactions(0, plog.log_end_offset + 1)


def test_markers_decide_the_first_unstable_offset_and_index_aborts(open_log: OpenLog) -> None:
    plog = open_log()
    a, b = Producer(A), Producer(B)
    assert plog.first_unstable_offset() is None
    send(plog, a, b"a1")  # 0
    send(plog, b, b"b1")  # 1
    send(plog, a, b"a2")  # 2
    assert plog.first_unstable_offset() == 0
    assert end(plog, a, commit=False) == 3
    plog.on_high_watermark(4)
    assert plog.first_unstable_offset() == 1  # b's transaction
    assert end(plog, b, commit=True) == 4
    plog.on_high_watermark(5)
    assert plog.first_unstable_offset() is None
    # Only the abort is indexed, with the LSO at that point (b open since 1).
    assert aborted(plog) == [AbortedTxn(A, 0, 3, 1)]
    index = plog.segments()[-1].txn_index.path
    assert index.name == f"{0:020d}.txnindex" and index.stat().st_size == ENTRY_SIZE
    # A fetch of [2, 5) still overlaps a's transaction (it ends at 3); [4, 5) does not.
    assert plog.aborted_transactions(2, 5) == [AbortedTxn(A, 0, 3, 1)]
    assert plog.aborted_transactions(4, 5) == []


def test_marker_checks_refuse_and_write_nothing(open_log: OpenLog) -> None:
    plog = open_log()
    a = Producer(A, epoch=2)
    send(plog, a, b"x")
    end(plog, a, commit=True, coordinator=5)
    before = plog.log_end_offset
    with pytest.raises(KafkaError) as old_epoch:
        plog.append_marker(TxnMarker(A, 1, True, 5), 0, NOW)
    assert old_epoch.value.code == Errors.INVALID_PRODUCER_EPOCH
    with pytest.raises(KafkaError) as fenced:
        plog.append_marker(TxnMarker(A, 2, False, 4), 0, NOW)
    assert fenced.value.code == Errors.TRANSACTION_COORDINATOR_FENCED
    assert plog.log_end_offset == before


def test_clients_cannot_write_markers(open_log: OpenLog) -> None:
    from brook.protocol.txn_marker import marker_batch

    plog = open_log()
    with pytest.raises(KafkaError) as refused:
        plog.append_as_leader(marker_batch(TxnMarker(A, 0, True, 0), timestamp=NOW), 0, NOW)
    assert refused.value.code == Errors.INVALID_RECORD


def test_a_fencing_abort_refuses_the_zombies_next_write(open_log: OpenLog) -> None:
    plog = open_log()
    zombie = Producer(A, epoch=0)
    send(plog, zombie, b"x")
    plog.append_marker(TxnMarker(A, 1, False, 0), 0, NOW)  # the coordinator's bumped epoch
    with pytest.raises(KafkaError) as refused:
        send(plog, zombie, b"y")
    assert refused.value.code == Errors.INVALID_PRODUCER_EPOCH


def test_non_transactional_write_inside_a_transaction(open_log: OpenLog) -> None:
    plog = open_log()
    a = Producer(A)
    send(plog, a, b"x")
    with pytest.raises(KafkaError) as refused:
        plog.append_as_leader(a.batch(b"y", transactional=False), 0, NOW)
    assert refused.value.code == Errors.INVALID_TXN_STATE


def _three_segments(plog: PartitionLog) -> list[AbortedTxn]:
    """Aborts in three segments (segment.bytes small enough to roll every few batches)."""
    expected = []
    for i in range(6):
        p = Producer(A + i)
        first = send(plog, p, b"v" * 200)
        send(plog, p, b"w" * 200)
        last = end(plog, p, commit=i % 2 == 1)
        if i % 2 == 0:
            expected.append(AbortedTxn(A + i, first, last, last + 1))
    return expected


def test_aborts_are_indexed_in_the_segment_of_their_marker(
    open_log: OpenLog, make_config: Callable[..., LogConfig]
) -> None:
    plog = open_log(config=make_config(segment_bytes=1000))
    expected = _three_segments(plog)
    assert len(plog.segments()) >= 3
    assert aborted(plog) == expected
    for segment in plog.segments():
        for txn in segment.txn_index.entries:
            assert segment.base_offset <= txn.last_offset < segment.next_offset
    # A fetch from the middle is told only what overlaps it.
    middle = expected[1]
    assert plog.aborted_transactions(middle.first_offset, middle.last_offset) == [middle]


def test_clean_restart_keeps_aborts_and_open_transactions(
    open_log: OpenLog, make_config: Callable[..., LogConfig]
) -> None:
    config = make_config(segment_bytes=1000)
    plog = open_log(config=config)
    expected = _three_segments(plog)
    open_txn = Producer(B)
    start = send(plog, open_txn, b"open")
    plog.close()
    again = open_log(config=config, had_clean_shutdown=True, recovery_point=plog.log_end_offset)
    assert aborted(again) == expected
    assert again.first_unstable_offset() == start


@pytest.mark.parametrize("damage", ["deleted", "torn", "garbage"])
def test_unclean_restart_rebuilds_the_index(
    open_log: OpenLog, make_config: Callable[..., LogConfig], tmp_path: Path, damage: str
) -> None:
    config = make_config(segment_bytes=1000)
    plog = open_log(config=config)
    expected = _three_segments(plog)
    open_txn = Producer(B)
    start = send(plog, open_txn, b"open")
    plog.flush_for_close()
    plog.close_files()
    for path in (tmp_path / "topic-0").glob("*.txnindex"):
        if damage == "deleted":
            path.unlink()
        elif damage == "torn":
            path.write_bytes(path.read_bytes()[:-5])
        else:
            path.write_bytes(b"\x00\x07" + path.read_bytes()[2:])  # an unknown version
    again = open_log(config=config, had_clean_shutdown=False, recovery_point=0)
    assert aborted(again) == expected
    # The replayed markers hold the LSO until the partition's HW is known to be past them.
    assert again.first_unstable_offset() == 0
    again.on_high_watermark(start)
    assert again.first_unstable_offset() == start


def test_truncation_drops_aborts_past_the_cut_and_reopens_the_transaction(
    open_log: OpenLog,
) -> None:
    plog = open_log()
    a, b = Producer(A), Producer(B)
    send(plog, a, b"a1")  # 0
    end(plog, a, commit=False)  # 1
    send(plog, b, b"b1")  # 2
    end(plog, b, commit=False)  # 3
    plog.on_high_watermark(4)
    assert [t.producer_id for t in aborted(plog)] == [A, B]
    plog.truncate_to(3)  # b's abort marker goes; b's transaction is open again
    assert aborted(plog) == [AbortedTxn(A, 0, 1, 2)]
    plog.on_high_watermark(2)
    assert plog.first_unstable_offset() == 2


def test_a_follower_gets_the_same_state_from_the_leaders_bytes(
    open_log: OpenLog, make_config: Callable[..., LogConfig]
) -> None:
    config = make_config(segment_bytes=1000)
    leader = open_log("leader-0", config=config)
    expected = _three_segments(leader)
    start = send(leader, Producer(B), b"open")
    follower = open_log("follower-0", config=config)
    offset = 0
    while offset < leader.log_end_offset:
        records: Any = leader.read(offset, 700).records
        follower.append_as_follower(bytes(records))
        offset = follower.log_end_offset
    assert aborted(follower) == expected
    follower.on_high_watermark(start)
    assert follower.first_unstable_offset() == start


def test_a_malformed_marker_from_a_leader_is_refused(open_log: OpenLog) -> None:
    from brook.protocol.batch import CONTROL_BIT, TRANSACTIONAL_BIT
    from brook.protocol.records import batch_header, encode_record

    payload = encode_record(0, 0, b"\x00\x00\x00\x00", b"\x00")  # value too short
    bad = (
        batch_header(
            payload,
            attributes=CONTROL_BIT | TRANSACTIONAL_BIT,
            count=1,
            base_timestamp=NOW,
            max_timestamp=NOW,
            producer_id=A,
            producer_epoch=0,
        )
        + payload
    )
    follower = open_log()
    with pytest.raises(KafkaError) as refused:
        follower.append_as_follower(bad)
    assert refused.value.code == Errors.CORRUPT_MESSAGE
    assert follower.log_end_offset == 0


def test_retention_deletes_the_index_with_its_segment(
    open_log: OpenLog, make_config: Callable[..., LogConfig], tmp_path: Path
) -> None:
    plog = open_log(config=make_config(segment_bytes=1000, retention_bytes=0))
    _three_segments(plog)
    first = plog.segments()[0]
    assert first.txn_index.path.exists()
    plog.delete_old_segments(NOW)
    assert not first.txn_index.path.exists()
    assert {p.name for p in (tmp_path / "topic-0").glob("*.txnindex")} == {
        s.txn_index.path.name for s in plog.segments() if s.txn_index.entries
    }
