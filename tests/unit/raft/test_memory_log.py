"""``MemoryLog``: appends and reads, Kafka's leader-epoch cache and its answers, truncation,
snapshots and their download, and what survives a crash (only what was flushed)."""

from __future__ import annotations

import pytest

from brook.raft.log import LeaderChangeRecord
from brook.raft.memory_log import MemoryBatch, MemoryLog
from brook.raft.messages import OffsetAndEpoch


def build(*batches: tuple[int, int]) -> MemoryLog:
    """A log of batches given as (epoch, record count)."""
    log = MemoryLog()
    for epoch, count in batches:
        log.append_as_leader([b"r"] * count, epoch)
    return log


def test_appends_assign_offsets_and_epochs() -> None:
    log = MemoryLog()
    assert log.append_as_leader([b"a", b"b"], 1) == (0, 1)
    assert log.append_leader_change(LeaderChangeRecord(2, (1, 2, 3), (2, 3)), 2) == 2
    assert log.append_as_leader([b"c"], 2) == (3, 3)
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch) == (0, 4, 2)
    assert log.epoch_entries() == [(1, 0), (2, 2)]
    assert log.epoch_at(1) == 1 and log.epoch_at(2) == 2
    assert log.batches()[1].leader_change == LeaderChangeRecord(2, (1, 2, 3), (2, 3))


def test_an_empty_batch_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one record"):
        MemoryLog().append_as_leader([], 1)


def test_reads_return_whole_batches_within_the_byte_limit_but_at_least_one() -> None:
    log = build((1, 2), (1, 1), (1, 3))
    assert [b.base_offset for b in log.read(0, 1 << 20)] == [0, 2, 3]
    assert [b.base_offset for b in log.read(2, 1 << 20)] == [2, 3]
    assert [b.base_offset for b in log.read(0, 1)] == [0]  # one batch even if too big
    two = log.batches()[0].size + log.batches()[1].size
    assert [b.base_offset for b in log.read(0, two)] == [0, 2]
    assert log.read(6, 100) == ()


def test_a_follower_appends_the_leaders_batches_as_they_are() -> None:
    leader = build((1, 2), (3, 1))
    follower = MemoryLog()
    follower.append_as_follower(leader.read(0, 1 << 20))
    assert follower.end_offset == 3 and follower.epoch_entries() == [(1, 0), (3, 2)]
    with pytest.raises(ValueError, match="does not follow"):
        follower.append_as_follower(leader.read(0, 1 << 20))


def test_end_offset_for_epoch_answers_as_kafka() -> None:
    log = build((1, 2), (3, 2), (4, 1))  # epochs 1@0, 3@2, 4@4; end 5
    assert log.end_offset_for_epoch(4) == OffsetAndEpoch(5, 4)  # the latest ends at the log end
    assert log.end_offset_for_epoch(3) == OffsetAndEpoch(4, 3)
    assert log.end_offset_for_epoch(2) == OffsetAndEpoch(2, 1)  # largest epoch below it
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(2, 1)
    assert log.end_offset_for_epoch(0) == OffsetAndEpoch(0, 0)  # below all: the first start
    assert log.end_offset_for_epoch(9) == OffsetAndEpoch(5, 4)  # unknown future epoch


def test_a_new_leader_epoch_starts_at_the_log_end_before_any_record() -> None:
    log = build((1, 2))
    log.initialize_leader_epoch(5)
    assert log.epoch_entries() == [(1, 0), (5, 2)] and log.last_fetched_epoch == 5


def test_truncation_drops_records_and_epochs_from_the_offset_on() -> None:
    log = build((1, 2), (2, 2), (3, 1))
    log.flush()
    log.truncate_to(2)
    assert log.end_offset == 2 and log.flushed_offset == 2
    assert log.epoch_entries() == [(1, 0)]
    log.truncate_to(7)  # past the end: nothing
    assert log.end_offset == 2
    with pytest.raises(ValueError, match="inside a batch"):
        log.truncate_to(1)


def test_a_crash_keeps_only_what_was_flushed() -> None:
    log = build((1, 2))
    log.flush()
    log.append_as_leader([b"x"], 2)
    survivor = log.crashed()
    assert survivor.end_offset == 2 and survivor.epoch_entries() == [(1, 0)]
    assert log.end_offset == 3  # the crashed copy is separate


def test_a_crash_after_a_truncation_does_not_resurrect_records() -> None:
    log = build((1, 3))
    log.flush()
    log.truncate_to(0)
    log.append_as_leader([b"y"], 2)
    assert log.crashed().end_offset == 0


def snapshotted(end: int = 3) -> MemoryLog:
    log = build((1, 1), (1, 2), (2, 2))  # batches at 0, 1, 3; end 5
    log.flush()
    log.create_snapshot(OffsetAndEpoch(end, log.epoch_at(end - 1)), b"state")
    return log


def test_snapshots_must_end_at_a_batch_boundary_with_the_right_epoch() -> None:
    log = build((1, 1), (1, 2))
    with pytest.raises(ValueError, match="batch boundary"):
        log.create_snapshot(OffsetAndEpoch(2, 1), b"s")
    with pytest.raises(ValueError, match="epochs"):
        log.create_snapshot(OffsetAndEpoch(3, 2), b"s")
    with pytest.raises(ValueError, match="outside"):
        log.create_snapshot(OffsetAndEpoch(4, 1), b"s")
    log.create_snapshot(OffsetAndEpoch(3, 1), b"s")
    assert log.latest_snapshot_id() == OffsetAndEpoch(3, 1)
    assert log.snapshot_size(OffsetAndEpoch(3, 1)) == 1


def test_deleting_before_a_snapshot_moves_the_log_start() -> None:
    log = snapshotted(3)
    assert log.delete_before_snapshot(OffsetAndEpoch(3, 1))
    assert log.start_offset == 3 and log.end_offset == 5
    assert [b.base_offset for b in log.batches()] == [3]
    assert log.epoch_entries() == [(2, 3)]
    assert log.read(1, 100) == ()
    assert not log.delete_before_snapshot(OffsetAndEpoch(3, 1))  # already there


def test_an_epoch_below_the_log_start_is_answered_with_the_snapshot() -> None:
    log = build((1, 1), (2, 2), (3, 2))  # 1@0, 2@1, 3@3; end 5
    log.create_snapshot(OffsetAndEpoch(3, 2), b"s")
    log.delete_before_snapshot(OffsetAndEpoch(3, 2))
    assert log.end_offset_for_epoch(1) == OffsetAndEpoch(3, 2)


def test_the_epoch_of_an_emptied_log_is_its_snapshots() -> None:
    log = MemoryLog()
    assert log.begin_snapshot_download(OffsetAndEpoch(7, 4))
    assert log.append_snapshot_chunk(OffsetAndEpoch(7, 4), b"ab") == 2
    assert log.append_snapshot_chunk(OffsetAndEpoch(7, 4), b"cd") == 4
    log.finish_snapshot_download(OffsetAndEpoch(7, 4))
    assert not log.begin_snapshot_download(OffsetAndEpoch(7, 4))  # already held
    assert log.truncate_to_latest_snapshot()
    assert (log.start_offset, log.end_offset, log.last_fetched_epoch) == (7, 7, 4)
    assert log.read_snapshot(OffsetAndEpoch(7, 4), 1, 2) == b"bc"
    assert not log.truncate_to_latest_snapshot()  # no longer past the end


def test_a_snapshot_not_past_the_log_end_does_not_truncate() -> None:
    log = snapshotted(3)
    assert not log.truncate_to_latest_snapshot()
    assert log.end_offset == 5


def test_an_aborted_download_leaves_nothing() -> None:
    log = MemoryLog()
    log.begin_snapshot_download(OffsetAndEpoch(5, 1))
    log.append_snapshot_chunk(OffsetAndEpoch(5, 1), b"partial")
    log.abort_snapshot_download(OffsetAndEpoch(5, 1))
    assert log.latest_snapshot_id() is None
    assert log.crashed().latest_snapshot_id() is None


def test_a_crash_with_a_snapshot_past_the_flushed_end_restarts_from_the_snapshot() -> None:
    # an observer (no flush) applied and snapshotted records it never flushed
    log = build((1, 4))
    log.create_snapshot(OffsetAndEpoch(4, 1), b"s")
    survivor = log.crashed()
    assert (survivor.start_offset, survivor.end_offset) == (4, 4)
    assert survivor.last_fetched_epoch == 1


def test_batches_know_their_offsets() -> None:
    batch = MemoryBatch(10, 2, (b"a", b"bc"))
    assert (batch.last_offset, batch.next_offset, batch.size) == (11, 12, 61 + 3)
