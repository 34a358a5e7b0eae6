"""Idempotent producer state: Kafka's sequence and epoch rules, duplicates, snapshots."""

from __future__ import annotations

from pathlib import Path

import pytest

from brook.log.producer_state import ProducerEntry, ProducerStateManager, snapshot_path
from brook.protocol.batch import BatchHeader, read_header
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch

PID = 4000


def _header(seq: int, count: int = 2, epoch: int = 0, pid: int = PID) -> BatchHeader:
    batch = build_simple_batch(
        [b"x"] * count, producer_id=pid, producer_epoch=epoch, base_sequence=seq
    )
    return read_header(batch)


def _append(state: ProducerStateManager, header: BatchHeader, base: int) -> None:
    assert state.check_append(header) is None
    state.update(header, base, 1000 + base)
    state.map_end_offset = base + header.records_count


def _entry(state: ProducerStateManager) -> ProducerEntry:
    entry = state.last_entry(PID)
    assert entry is not None
    return entry


def _code(state: ProducerStateManager, header: BatchHeader) -> int:
    with pytest.raises(KafkaError) as info:
        state.check_append(header)
    return info.value.code


def test_unknown_producer_may_start_anywhere(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    _append(state, _header(seq=57), 0)
    _append(state, _header(seq=59), 2)
    assert _entry(state).last_seq == 60


def test_sequence_must_follow(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    _append(state, _header(seq=0), 0)
    assert _code(state, _header(seq=3)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert _code(state, _header(seq=1, count=3)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    _append(state, _header(seq=2), 2)


def test_sequence_wraps_after_int32_max(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    _append(state, _header(seq=2**31 - 2), 0)
    header = _header(seq=0)
    assert state.check_append(header) is None


def test_retry_of_a_recent_batch_is_a_duplicate(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    for i in range(6):
        _append(state, _header(seq=2 * i), 2 * i)
    duplicate = state.check_append(_header(seq=6))
    assert duplicate is not None
    assert (duplicate.first_offset, duplicate.last_offset, duplicate.timestamp) == (6, 7, 1006)
    assert state.check_append(_header(seq=2)) is not None
    # only the last five batches are kept: the first is gone
    assert _code(state, _header(seq=0)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    # same first sequence but another last sequence is not a duplicate
    assert _code(state, _header(seq=6, count=3)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER


def test_epoch_rules(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    _append(state, _header(seq=0, epoch=3), 0)
    assert _code(state, _header(seq=2, epoch=2)) == Errors.INVALID_PRODUCER_EPOCH
    assert _code(state, _header(seq=2, epoch=4)) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    _append(state, _header(seq=0, epoch=4), 2)
    assert _entry(state).epoch == 4
    # a retry from the fenced epoch is no longer a duplicate
    assert _code(state, _header(seq=0, epoch=3)) == Errors.INVALID_PRODUCER_EPOCH


def test_snapshot_round_trip(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    for i in range(3):
        _append(state, _header(seq=2 * i), 2 * i)
    _append(state, _header(seq=10, pid=7, epoch=2), 6)
    state.take_snapshot()
    state.sync_snapshots()
    assert snapshot_path(tmp_path, 8).exists()
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load(0, 8) == 8
    assert loaded.producers == state.producers
    assert loaded.check_append(_header(seq=4)) is not None


def test_load_skips_later_and_corrupt_snapshots(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    _append(state, _header(seq=0), 0)
    state.take_snapshot()
    _append(state, _header(seq=2), 2)
    state.take_snapshot()
    _append(state, _header(seq=4), 4)
    state.take_snapshot()
    assert state.snapshot_offsets() == [2, 4, 6]
    data = snapshot_path(tmp_path, 4).read_bytes()
    snapshot_path(tmp_path, 4).write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    loaded = ProducerStateManager(tmp_path)
    assert loaded.load(0, 5) == 2
    assert loaded.snapshot_offsets() == [2]
    assert _entry(loaded).last_seq == 1


def test_without_snapshot_replay_starts_at_log_start(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    assert state.load(7, 20) == 7
    assert state.map_end_offset == 7


def test_replay_rebuilds_the_same_state(tmp_path: Path) -> None:
    headers = []
    offset = 0
    for i in range(4):
        batch = build_simple_batch(
            [b"v", b"w"],
            base_offset=offset,
            producer_id=PID,
            producer_epoch=0,
            base_sequence=2 * i,
            timestamp=1000 + offset,
        )
        headers.append(read_header(batch))
        offset += 2
    state = ProducerStateManager(tmp_path)
    state.replay(headers)
    assert state.map_end_offset == 8
    duplicate = state.check_append(_header(seq=6))
    assert duplicate is not None and duplicate.first_offset == 6


def test_expiry_and_truncate_fully(tmp_path: Path) -> None:
    state = ProducerStateManager(tmp_path)
    _append(state, _header(seq=0), 0)
    state.take_snapshot()
    assert state.remove_expired(now_ms=1000 + 10, max_age_ms=100) == 0
    assert state.remove_expired(now_ms=1000 + 100, max_age_ms=100) == 1
    assert len(state) == 0
    state.truncate_fully(50)
    assert state.map_end_offset == 50 and state.snapshot_offsets() == []
