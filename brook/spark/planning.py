"""Deciding what each micro-batch and each task reads, as Spark's Kafka source does, with no I/O:
admission control (maxOffsetsPerTrigger shared in proportion to each partition's backlog,
minOffsetsPerTrigger with maxTriggerDelay), the per-batch ranges with data-loss checks (new,
deleted and rewound partitions), and splitting ranges for minPartitions /
maxRecordsPerPartition (KafkaOffsetRangeCalculator).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from .offsets import PartitionOffsets, TopicPartitionKey

__all__ = [
    "OffsetRange",
    "TriggerDelay",
    "rate_limit",
    "resolve_ranges",
    "split_ranges",
]

ReportDataLoss = Callable[[str], None]


@dataclass(frozen=True)
class OffsetRange:
    """Offsets [start, end) of one partition."""

    topic: str
    partition: int
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


def _name(tp: TopicPartitionKey) -> str:
    return f"{tp[0]}-{tp[1]}"


def rate_limit(
    limit: int,
    start: Mapping[TopicPartitionKey, int],
    latest: Mapping[TopicPartitionKey, int],
    earliest_of_new: Mapping[TopicPartitionKey, int],
) -> PartitionOffsets:
    """End offsets admitting at most ``limit`` records, shared by backlog (Spark's rateLimit).

    A partition that is not in ``start`` is new: it begins at ``earliest_of_new``.
    """
    sizes: dict[TopicPartitionKey, int] = {}
    for tp, end in latest.items():
        begin = start.get(tp, earliest_of_new.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(latest)
    out: PartitionOffsets = {}
    for tp, end in latest.items():
        if tp not in sizes:
            out[tp] = end
            continue
        begin = start.get(tp, earliest_of_new.get(tp, 0))
        share = limit * (sizes[tp] / total)
        # Round small shares up so a partition with a little data is never starved.
        admitted = math.ceil(share) if share < 1 else math.floor(share)
        out[tp] = min(end, begin + admitted)
    return out


class TriggerDelay:
    """minOffsetsPerTrigger with maxTriggerDelay: hold a batch back until enough records wait,
    unless the delay since the last batch ran out (Spark's delayBatch)."""

    def __init__(self, min_rows: int, max_delay_ms: int, now_ms: int) -> None:
        self.min_rows = min_rows
        self.max_delay_ms = max_delay_ms
        self.last_trigger_ms = now_ms

    def should_wait(
        self,
        start: Mapping[TopicPartitionKey, int],
        latest: Mapping[TopicPartitionKey, int],
        now_ms: int,
    ) -> bool:
        if now_ms - self.last_trigger_ms >= self.max_delay_ms:
            self.last_trigger_ms = now_ms
            return False
        waiting = sum(end - start.get(tp, 0) for tp, end in latest.items())
        if waiting < self.min_rows:
            return True
        self.last_trigger_ms = now_ms
        return False


def resolve_ranges(
    start: Mapping[TopicPartitionKey, int],
    end: Mapping[TopicPartitionKey, int],
    earliest_of_new: Mapping[TopicPartitionKey, int],
    report_data_loss: ReportDataLoss,
) -> list[OffsetRange]:
    """The ranges of one micro-batch from its start and end offsets (Spark's
    getOffsetRangesFromResolvedOffsets); ``earliest_of_new`` holds the log start of the
    partitions that appeared since ``start`` (a missing one was deleted again)."""
    new = set(end) - set(start)
    missing = sorted(new - set(earliest_of_new))
    if missing:
        report_data_loss(
            f"Cannot find earliest offsets of {[_name(tp) for tp in missing]}. "
            "Some data may have been missed"
        )
    for tp in sorted(new & set(earliest_of_new)):
        if earliest_of_new[tp] != 0:
            report_data_loss(
                f"Added partition {_name(tp)} starts from {earliest_of_new[tp]} instead of 0. "
                "Some data may have been missed"
            )
    deleted = sorted(set(start) - set(end))
    if deleted:
        report_data_loss(
            f"{[_name(tp) for tp in deleted]} are gone. Some data may have been missed."
        )
    ranges = []
    for tp in sorted(end):
        if tp in start:
            begin = start[tp]
        elif tp in earliest_of_new:
            begin = earliest_of_new[tp]
        else:
            continue
        until = end[tp]
        if until < begin:
            report_data_loss(
                f"Partition {_name(tp)}'s offset was changed from {begin} to {until}, "
                "some data may have been missed"
            )
        ranges.append(OffsetRange(tp[0], tp[1], begin, until))
    return ranges


def split_ranges(
    ranges: list[OffsetRange],
    min_partitions: int | None,
    max_records_per_partition: int | None = None,
) -> list[OffsetRange]:
    """Drop empty ranges; as Spark's KafkaOffsetRangeCalculator, first cut each range to at
    most ``max_records_per_partition`` records, then split large ones so there are about
    ``min_partitions`` tasks (in proportion to size, small ranges left whole)."""
    ranges = [r for r in ranges if r.size > 0]
    if max_records_per_partition is not None:
        ranges = [
            piece for r in ranges for piece in _cut(r, -(-r.size // max_records_per_partition))
        ]
        ranges = [r for r in ranges if r.size > 0]
    if min_partitions is not None and len(ranges) < min_partitions:
        total = sum(r.size for r in ranges)
        # Ranges too small to split keep one task each and are left out of the share.
        whole = [r for r in ranges if _part_count(r.size, total, min_partitions) == 1]
        split_total = total - sum(r.size for r in whole)
        split_wanted = max(min_partitions - len(whole), 1)
        ranges = [
            piece
            for r in ranges
            for piece in _cut(
                r, 1 if r in whole else _part_count(r.size, split_total, split_wanted)
            )
        ]
    return [r for r in ranges if r.size > 0]


def _part_count(size: int, total: int, wanted: int) -> int:
    # Java's Math.round: halves round up.
    return max(math.floor(size / total * wanted + 0.5), 1)


def _cut(r: OffsetRange, parts: int) -> list[OffsetRange]:
    """``parts`` contiguous pieces; integer division, the last piece takes the remainder."""
    pieces = []
    remaining = r.size
    begin = r.start
    for part in range(parts):
        this = remaining // (parts - part)
        remaining -= this
        end = min(begin + this, r.end)
        pieces.append(OffsetRange(r.topic, r.partition, begin, end))
        begin = end
    return pieces
