"""The batch reader and the streaming reader. Both plan on the driver (offsets through the admin
client, ranges, admission control) and read on executors through ``fetch.read_partition``.

The stream reader lives in one long-lived driver process for the whole query; Spark persists
the offsets it returns (``{"topic":{"0":23}}``, Spark's Kafka shape) in the checkpoint and hands
them back on restart, so nothing else needs to survive a restart: ``commit`` has nothing to do
and may be called again for a batch already committed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark.sql.datasource import DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)

from .discovery import OffsetReader
from .fetch import RangePartition, read_partition, report_data_loss
from .offsets import PartitionOffsets, from_json_dict, to_json_dict
from .options import SourceOptions
from .planning import OffsetRange, TriggerDelay, rate_limit, resolve_ranges, split_ranges

__all__ = ["BrookBatchReader", "BrookStreamReader"]

log = logging.getLogger(__name__)


def _now_ms() -> int:
    return int(time.time() * 1000)


class _Planner:
    """What both readers share: the offset reader, data-loss reporting and task creation."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self.offsets = OffsetReader(options)

    def report_data_loss(self, message: str) -> None:
        report_data_loss(self.options.fail_on_data_loss, message)

    def tasks(self, ranges: list[OffsetRange]) -> list[InputPartition]:
        o = self.options
        pieces = split_ranges(ranges, o.min_partitions, o.max_records_per_partition)
        return [
            RangePartition(
                r.topic,
                r.partition,
                r.start,
                r.end,
                dict(o.client_config),
                o.include_headers,
                o.fail_on_data_loss,
                o.poll_timeout_ms,
            )
            for r in pieces
        ]

    def skip_lost(self, ranges: list[OffsetRange]) -> list[OffsetRange]:
        """Ranges that begin below the log start (retention deleted records the query has
        not read): data loss, then read what is left."""
        if not ranges:
            return ranges
        earliest = self.offsets.earliest({(r.topic, r.partition) for r in ranges})
        out = []
        for r in ranges:
            tp = (r.topic, r.partition)
            if tp not in earliest:
                self.report_data_loss(
                    f"Cannot fetch offsets [{r.start}, {r.end}) of {r.topic}-{r.partition}: "
                    "the topic or partition no longer exists"
                )
                continue
            if r.start < earliest[tp] and r.size > 0:
                self.report_data_loss(
                    f"Cannot fetch offset {r.start} of {r.topic}-{r.partition}: the log now "
                    f"starts at {earliest[tp]} (offsets [{r.start}, {min(earliest[tp], r.end)}) "
                    "are gone)"
                )
                r = OffsetRange(r.topic, r.partition, min(earliest[tp], r.end), r.end)
            out.append(r)
        return out


class BrookBatchReader(DataSourceReader):
    """``spark.read.format("brook")``: startingOffsets to endingOffsets, resolved once on the
    driver when the query is planned."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        planner = _Planner(self.options)
        try:
            start = planner.offsets.resolve(
                self.options.starting, planner.report_data_loss, is_start=True
            )
            end = planner.offsets.resolve(
                self.options.ending, planner.report_data_loss, is_start=False
            )
            ranges = []
            for tp in sorted(start):
                if tp not in end:
                    continue
                if start[tp] > end[tp]:
                    raise ValueError(
                        f"The specified starting offset {start[tp]} is greater than ending "
                        f"offset {end[tp]} for topic {tp[0]} partition {tp[1]}."
                    )
                ranges.append(OffsetRange(tp[0], tp[1], start[tp], end[tp]))
            return planner.tasks(planner.skip_lost(ranges))
        finally:
            planner.offsets.close()

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)


class BrookStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("brook")``: micro-batches with admission control."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._planner = _Planner(options)
        self._available_now: PartitionOffsets | None = None
        self._trigger_available_now = False
        self._latest: PartitionOffsets = {}
        self._delay = (
            TriggerDelay(options.min_offsets_per_trigger, options.max_trigger_delay_ms, _now_ms())
            if options.min_offsets_per_trigger is not None
            else None
        )

    # -- offsets ---------------------------------------------------------------------------

    def initialOffset(self) -> dict:
        """Where a new query starts (startingOffsets); never called on restart."""
        p = self._planner
        offsets = p.offsets.resolve(self.options.starting, p.report_data_loss, is_start=True)
        log.info("Initial offsets: %s", offsets)
        return to_json_dict(offsets)

    def getDefaultReadLimit(self) -> ReadLimit:
        o = self.options
        if o.max_offsets_per_trigger is not None:
            return ReadMaxRows(o.max_offsets_per_trigger)
        if o.min_offsets_per_trigger is not None:
            return ReadMinRows(o.min_offsets_per_trigger)
        return ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._trigger_available_now = True

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict:
        """The end of the next micro-batch: what is available now (fetched once for the
        whole run with availableNow), cut down by the read limit."""
        begin = from_json_dict(start)
        if self._trigger_available_now:
            if self._available_now is None:
                self._available_now = self._planner.offsets.latest()
            latest = dict(self._available_now)
        else:
            latest = self._planner.offsets.latest()
        self._latest = latest
        end = self._admit(begin, latest, limit)
        return to_json_dict(end)

    def _admit(
        self, begin: PartitionOffsets, latest: PartitionOffsets, limit: ReadLimit
    ) -> PartitionOffsets:
        if isinstance(limit, ReadAllAvailable):
            return latest
        # minOffsetsPerTrigger would wait for data forever under availableNow: it only applies
        # to triggers that keep running.
        if (
            self._delay is not None
            and not self._trigger_available_now
            and self._delay.should_wait(begin, latest, _now_ms())
        ):
            return dict(begin)
        max_rows = (
            limit.max_rows
            if isinstance(limit, ReadMaxRows)
            else self.options.max_offsets_per_trigger
        )
        if max_rows is None:
            return latest
        new = [tp for tp in latest if tp not in begin]
        earliest_of_new = self._planner.offsets.earliest(new) if new else {}
        return rate_limit(max_rows, begin, latest, earliest_of_new)

    def reportLatestOffset(self) -> dict | None:
        return to_json_dict(self._latest) if self._latest else None

    # -- planning and reading --------------------------------------------------------------

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        p = self._planner
        begin, until = from_json_dict(start), from_json_dict(end)
        new = [tp for tp in until if tp not in begin]
        earliest_of_new = p.offsets.earliest(new) if new else {}
        ranges = resolve_ranges(begin, until, earliest_of_new, p.report_data_loss)
        return p.tasks(p.skip_lost([r for r in ranges if r.size > 0]))

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return read_partition(partition)

    def commit(self, end: dict) -> None:
        """Offsets live in Spark's checkpoint; nothing is committed to Brook."""

    def stop(self) -> None:
        self._planner.offsets.close()
