"""Admission control, micro-batch ranges with data-loss checks, and task splitting."""

from __future__ import annotations

import itertools

from brook.spark.planning import (
    OffsetRange,
    TriggerDelay,
    rate_limit,
    resolve_ranges,
    split_ranges,
)


def test_rate_limit_shares_by_backlog() -> None:
    start = {("t", 0): 0, ("t", 1): 100}
    latest = {("t", 0): 300, ("t", 1): 200}
    assert rate_limit(40, start, latest, {}) == {("t", 0): 30, ("t", 1): 110}


def test_rate_limit_does_not_starve_small_partitions_and_counts_new_ones() -> None:
    start = {("t", 0): 0}
    latest = {("t", 0): 10_000, ("t", 1): 5}  # partition 1 is new, its log starts at 3
    end = rate_limit(100, start, latest, {("t", 1): 3})
    assert end[("t", 1)] == 4  # a share below one record rounds up
    assert end[("t", 0)] == 99


def test_rate_limit_with_nothing_new_returns_latest() -> None:
    latest = {("t", 0): 7}
    assert rate_limit(5, {("t", 0): 7}, latest, {}) == latest


def test_trigger_delay() -> None:
    delay = TriggerDelay(min_rows=100, max_delay_ms=1000, now_ms=0)
    start = {("t", 0): 0}
    assert delay.should_wait(start, {("t", 0): 50}, now_ms=10)
    assert not delay.should_wait(start, {("t", 0): 150}, now_ms=20)
    assert delay.should_wait(start, {("t", 0): 50}, now_ms=500)
    assert not delay.should_wait(start, {("t", 0): 50}, now_ms=1020)  # waited long enough


def test_resolve_ranges_reports_each_kind_of_loss() -> None:
    losses: list[str] = []
    ranges = resolve_ranges(
        start={("t", 0): 5, ("t", 1): 9, ("gone", 0): 4},
        end={("t", 0): 8, ("t", 1): 3, ("t", 2): 6, ("t", 3): 1},
        earliest_of_new={("t", 2): 2},  # t-3 appeared and vanished again
        report_data_loss=losses.append,
    )
    assert ranges == [
        OffsetRange("t", 0, 5, 8),
        OffsetRange("t", 1, 9, 3),
        OffsetRange("t", 2, 2, 6),
    ]
    assert any("Cannot find earliest offsets of ['t-3']" in m for m in losses)
    assert any("Added partition t-2 starts from 2 instead of 0" in m for m in losses)
    assert any("['gone-0'] are gone" in m for m in losses)
    assert any("Partition t-1's offset was changed from 9 to 3" in m for m in losses)


def test_resolve_ranges_quiet_when_nothing_is_lost() -> None:
    losses: list[str] = []
    ranges = resolve_ranges({("t", 0): 1}, {("t", 0): 4, ("t", 1): 2}, {("t", 1): 0}, losses.append)
    assert losses == [] and ranges == [OffsetRange("t", 0, 1, 4), OffsetRange("t", 1, 0, 2)]


def test_split_ranges_for_min_partitions() -> None:
    big = OffsetRange("t", 0, 0, 1000)
    small = OffsetRange("t", 1, 0, 10)
    empty = OffsetRange("t", 2, 5, 5)
    pieces = split_ranges([big, small, empty], min_partitions=5)
    assert OffsetRange("t", 1, 0, 10) in pieces  # too small to split
    big_pieces = [p for p in pieces if p.partition == 0]
    assert len(big_pieces) == 4
    assert big_pieces[0].start == 0 and big_pieces[-1].end == 1000
    assert all(a.end == b.start for a, b in itertools.pairwise(big_pieces))
    assert split_ranges([big, small, empty], min_partitions=None) == [big, small]


def test_split_ranges_max_records_per_partition() -> None:
    pieces = split_ranges([OffsetRange("t", 0, 0, 25)], None, max_records_per_partition=10)
    assert [(p.start, p.end) for p in pieces] == [(0, 8), (8, 16), (16, 25)]


def test_max_records_per_partition_cuts_before_min_partitions_splits() -> None:
    # Spark's KafkaOffsetRangeCalculator: 1000 records at most 400 a task gives 3 ranges of
    # about 333; each is then too small a share of the total to split for minPartitions=4.
    pieces = split_ranges([OffsetRange("t", 0, 0, 1000)], 4, max_records_per_partition=400)
    assert [(p.start, p.end) for p in pieces] == [(0, 333), (333, 666), (666, 1000)]
