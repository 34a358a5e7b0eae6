"""One cleaning of one log (Kafka's ``Cleaner``), on a cleaner thread.

1. Map every key of the dirty part to the latest offset written for it (``OffsetMap``),
   batch by batch until the map is full or the first uncleanable offset is reached; the map
   speaks for the offsets up to its ``latest_offset``, and the pass cleans the log below
   ``latest_offset + 1`` (the next pass's first dirty offset). Kafka stops mapping at the
   record that finds the map full; stopping at the end of its batch instead lets every pass
   make progress, even over a batch holding more keys than the map.
2. Group the segments below that offset so each group fits one segment (``segment.bytes``,
   ``segment.index.bytes``, relative offsets in 31 bits), and rewrite each group into one
   cleaned segment, keeping of every record only the latest for its key: a record is kept
   when the map holds no later offset for its key, or when its offset is past what the map
   speaks for. A tombstone (no value) is kept until its batch's delete horizon
   (KIP-534): the first cleaning that keeps it sets the horizon to now +
   ``delete.retention.ms``, and the first cleaning after that drops it. Records without a
   key are dropped (a compacted topic refuses them; older data may hold some).
   Transactions (cleaned_txns.py): the batches of aborted transactions are dropped (and
   never mapped); a marker stays while its transaction has batches, then gets a delete
   horizon like a tombstone and goes at the first cleaning past it. The ``.txnindex``
   entries of the aborts whose marker stays go to the cleaned segment.
3. Swap each cleaned segment in (swap.py), on the log's own thread.

Batches keep their base offset and last offset delta, so records keep their offsets and
consumers read across the gaps. A batch whose records are all kept is copied as it is
(unless it needs its delete horizon set); one left empty is dropped, unless it is its
producer's last (it holds the producer's last sequence: kept empty, as Kafka keeps it) or
the last of its group (kept empty so the cleaned segment ends where its successor begins:
see swap.py). A control batch is kept whole or dropped, never emptied: one that could go
but is its group's last, or its producer's last batch (Kafka's case of a producer whose last
write is a marker: it carries the epoch that fences), stays whole.
"""

from __future__ import annotations

import logging
import os
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from brook.protocol.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    CorruptBatch,
    check_batch,
    read_header,
)
from brook.protocol.record_filter import BatchRecords, empty_batch, rebuild_batch, record_data
from brook.protocol.records import decode_records_into
from brook.protocol.txn_marker import MarkerFormatError, TxnMarker, read_marker

from .cleaned_segment import CleanedSegmentWriter
from .cleaned_txns import CleanedTxns
from .cleaner_manager import LogToClean, floor_index
from .offset_map import OffsetMap, key_digest
from .segment import MAX_RELATIVE_OFFSET, SegmentView
from .swap import CleanedFiles

log = logging.getLogger(__name__)

_INT32 = struct.Struct(">i")


class CleaningAborted(Exception):
    """The cleaning stopped before its end: the node is stopping, or the log changed under
    it (truncated, deleted, its segments deleted by retention). Segments swapped in before
    stay; the log is cleaned again later from its checkpoint."""


class Throttler:
    """``log.cleaner.io.max.bytes.per.second``, shared by the cleaner threads: a thread that
    finds the bytes moved since the last check (every 300 ms, as Kafka's Throttler) above
    the rate sleeps until they are not."""

    CHECK_INTERVAL_S = 0.3

    def __init__(
        self,
        rate: float,
        sleep: Callable[[float], Any] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rate = rate
        self._sleep = sleep
        self._clock = clock
        self._lock = threading.Lock()
        self._started = clock()
        self._bytes = 0.0

    def maybe_throttle(self, count: int) -> None:
        if self.rate >= 1e300:
            return
        with self._lock:
            self._bytes += count
            now = self._clock()
            elapsed = now - self._started
            if elapsed < self.CHECK_INTERVAL_S:
                return
            pause = self._bytes / self.rate - elapsed
            self._started = now + max(pause, 0.0)
            self._bytes = 0.0
        if pause > 0:
            self._sleep(pause)


@dataclass
class CleanerStats:
    """What one cleaning did, for its log line and the benchmark."""

    started: float = field(default_factory=time.monotonic)
    map_done: float = 0.0
    ended: float = 0.0
    map_bytes: int = 0
    map_records: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_kept: int = 0
    invalid_records: int = 0
    groups: int = 0

    @property
    def elapsed(self) -> float:
        return self.ended - self.started


def group_segments_by_size(
    segments: list[SegmentView], max_size: int, max_index_size: int, first_uncleanable: int
) -> list[list[SegmentView]]:
    """Kafka's groupSegmentsBySize: consecutive segments whose log bytes, offset-index bytes
    and time-index bytes each add up to at most one segment's limits, and whose offsets
    stay within 2^31 of the group's base offset (the next segment's base bounds a segment's
    last offset)."""
    groups: list[list[SegmentView]] = []
    i = 0
    while i < len(segments):
        group = [segments[i]]
        log_size, index_size, time_size = (
            segments[i].size,
            segments[i].index_bytes,
            segments[i].time_index_bytes,
        )
        i += 1
        while i < len(segments):
            nxt = segments[i]
            bound = segments[i + 1].base_offset if i + 1 < len(segments) else first_uncleanable
            last = bound - 1
            if not (
                log_size + nxt.size <= max_size
                and index_size + nxt.index_bytes <= max_index_size
                and time_size + nxt.time_index_bytes <= max_index_size
                and (nxt.size == 0 or last - group[0].base_offset <= MAX_RELATIVE_OFFSET)
            ):
                break
            group.append(nxt)
            log_size += nxt.size
            index_size += nxt.index_bytes
            time_size += nxt.time_index_bytes
            i += 1
        groups.append(group)
    return groups


Swap = Callable[[LogToClean, list[SegmentView], CleanedFiles], bool]


class Cleaner:
    """Cleans one log at a time with its own offset map and read buffer."""

    def __init__(
        self,
        offset_map: OffsetMap,
        swap: Swap,
        *,
        io_buffer_size: int = 256 * 1024,
        throttler: Throttler | None = None,
        stopping: Callable[[], bool] = lambda: False,
        swap_delay: Callable[[], None] | None = None,
    ) -> None:
        """``swap`` puts a cleaned segment in place, on the log's thread (False: the log
        changed, and the cleaned files are gone); ``stopping`` aborts the cleaning between
        reads; ``swap_delay`` runs before each swap (the crash tests' fault delay)."""
        self.offset_map = offset_map
        self._swap = swap
        self.io_buffer_size = max(io_buffer_size, HEADER_SIZE)
        self.throttler = throttler or Throttler(float("inf"))
        self._stopping = stopping
        self._swap_delay = swap_delay

    def clean(self, job: LogToClean, now_ms: int) -> tuple[int, CleanerStats]:
        """Clean ``job``'s log below the offset returned (its next first dirty offset)."""
        stats = CleanerStats()
        offset_map = self.offset_map
        offset_map.clear()
        try:
            self._build_offset_map(job, stats)
            end_offset = offset_map.latest_offset + 1
            stats.map_done = time.monotonic()
            below = [v for v in job.segments if v.base_offset < end_offset]
            config = job.config
            groups = group_segments_by_size(
                below,
                config.segment_bytes,
                config.segment_index_bytes,
                job.first_uncleanable_offset,
            )
            txns = CleanedTxns(job.aborted_txns)
            for group in groups:
                if sum(v.size for v in group):
                    self._clean_group(job, group, now_ms, stats, txns)
            stats.ended = time.monotonic()
            return end_offset, stats
        finally:
            offset_map.clear()

    # ------------------------------------------------------------------ the offset map
    def _build_offset_map(self, job: LogToClean, stats: CleanerStats) -> None:
        """Map the dirty segments' keys, from the first dirty offset up to the first
        uncleanable one, until the map is full; a segment read to its end moves the map's
        latest offset to just before the next segment (offsets skipped by an earlier
        cleaning included)."""
        segments = job.segments
        start = job.first_dirty_offset
        end = job.first_uncleanable_offset
        offset_map = self.offset_map
        first = floor_index(segments, start, end)
        txns = CleanedTxns(job.aborted_txns, start)
        for n in range(first, len(segments)):
            view = segments[n]
            if view.base_offset >= end:
                break
            position = job.first_dirty_position if n == first else 0
            if self._map_segment(view, position, start, stats, txns):
                return
            upper = segments[n + 1].base_offset if n + 1 < len(segments) else end
            offset_map.update_latest_offset(min(upper, end) - 1)

    def _map_segment(
        self,
        view: SegmentView,
        position: int,
        start: int,
        stats: CleanerStats,
        txns: CleanedTxns,
    ) -> bool:
        """Map one segment's keys from ``position`` (not those of aborted transactions);
        True when the map filled up."""
        offset_map = self.offset_map
        for buf, pos, header, _ in self._batches(view, position):
            stats.map_bytes += header.size
            if header.is_control:
                txns.on_marker(header, _marker(buf, pos, header))
            elif txns.on_data(header):
                pass  # aborted: its records are dropped, whatever their keys
            elif header.last_offset >= start:
                self._map_batch(buf, pos, header, start, stats)
            if header.last_offset >= start:
                offset_map.update_latest_offset(header.last_offset)
                if offset_map.full:
                    # Whole batches only: the pass speaks for every offset up to this one.
                    return True
        return False

    def _map_batch(
        self, buf: bytes, pos: int, header: BatchHeader, start: int, stats: CleanerStats
    ) -> None:
        put = self.offset_map.put_digest
        decoded: list[Any] = []
        data, first, last = record_data(buf, pos, header)
        decode_records_into(
            decoded, tuple, data, header.records_count,
            base_offset=header.base_offset, base_timestamp=header.base_timestamp,
            topic="", partition=0, timestamp_type=0, leader_epoch=-1,
            start=first, end=last,
        )  # fmt: skip
        for record in decoded:
            key = record[5]
            if key is not None and record[2] >= start:
                put(key_digest(key), record[2])
        stats.map_records += len(decoded)

    # ------------------------------------------------------------------ rewriting
    def _clean_group(
        self,
        job: LogToClean,
        group: list[SegmentView],
        now_ms: int,
        stats: CleanerStats,
        txns: CleanedTxns,
    ) -> None:
        files = CleanedFiles(job.log.dir, group[0].base_offset)
        config = job.config
        writer = CleanedSegmentWriter(
            files, config.index_interval_bytes, config.segment_index_bytes
        )
        try:
            last_view = group[-1]
            for view in group:
                for buf, pos, header, last_of_segment in self._batches(view, 0):
                    last_of_group = view is last_view and last_of_segment
                    if header.is_control:
                        kept, max_timestamp = self._filter_control(
                            job, buf, pos, header, now_ms, last_of_group, stats, txns, writer
                        )
                    else:
                        kept, max_timestamp = self._filter(
                            job, buf, pos, header, now_ms, last_of_group, stats, txns
                        )
                    if kept is not None:
                        writer.append(kept, header.last_offset, max_timestamp)
                        stats.bytes_written += len(kept)
                        self.throttler.maybe_throttle(len(kept))
            writer.finish(os.stat(last_view.path).st_mtime_ns)
        except BaseException:
            writer.abort()
            raise
        stats.groups += 1
        if self._swap_delay is not None:
            self._swap_delay()
        try:
            if self._stopping():
                raise CleaningAborted("the node is stopping")
            if not self._swap(job, group, files):
                raise CleaningAborted(f"{job.log.dir.name} changed while it was being cleaned")
        except CleaningAborted:
            files.discard()  # not swapped in, and never will be
            raise

    def _filter(
        self,
        job: LogToClean,
        buf: bytes | memoryview,
        pos: int,
        header: BatchHeader,
        now_ms: int,
        last_of_group: bool,
        stats: CleanerStats,
        txns: CleanedTxns,
    ) -> tuple[bytes | memoryview | None, int]:
        """The bytes to keep of one data batch (None: nothing) and their max timestamp."""
        whole = memoryview(buf)[pos : pos + header.size]
        stats.bytes_read += header.size
        records = BatchRecords.read(buf, pos, header)
        stats.records_read += len(records)
        if txns.on_data(header):  # an aborted transaction's: none of its records stays
            return self._emptied(job, header, whole, len(records), last_of_group)
        offset_map = self.offset_map
        latest = offset_map.latest_offset
        horizon = header.delete_horizon_ms
        retain_deletes = horizon is None or now_ms < horizon
        kept: list[int] = []
        tombstones = False
        for i, offset in enumerate(records.offsets):
            has_value = records.has_value[i]
            if offset > latest:
                keep = True
            else:
                key = records.keys[i]
                if key is None:
                    stats.invalid_records += 1
                    continue
                keep = offset >= offset_map.get(key) and (has_value or retain_deletes)
            if keep:
                kept.append(i)
                tombstones = tombstones or not has_value
        stats.records_kept += len(kept)
        if not kept:
            return self._emptied(job, header, whole, len(records), last_of_group)
        set_horizon = tombstones and horizon is None
        if len(kept) == len(records) and not set_horizon:
            return whole, header.max_timestamp
        rebuilt = rebuild_batch(
            records,
            kept,
            delete_horizon_ms=now_ms + job.config.delete_retention_ms if set_horizon else None,
        )
        return rebuilt, read_header(rebuilt).max_timestamp

    @staticmethod
    def _emptied(
        job: LogToClean,
        header: BatchHeader,
        whole: memoryview,
        count: int,
        last_of_group: bool,
    ) -> tuple[bytes | memoryview | None, int]:
        """A data batch none of whose records stays: kept empty if it is its producer's last
        (it holds the producer's last sequence) or its group's last, else dropped."""
        producer_last = job.producer_last_offsets.get(header.producer_id)
        if last_of_group or (header.producer_id >= 0 and producer_last == header.last_offset):
            return (whole if not count else empty_batch(header)), header.max_timestamp
        return None, header.max_timestamp

    def _filter_control(
        self,
        job: LogToClean,
        buf: bytes | memoryview,
        pos: int,
        header: BatchHeader,
        now_ms: int,
        last_of_group: bool,
        stats: CleanerStats,
        txns: CleanedTxns,
        writer: CleanedSegmentWriter,
    ) -> tuple[bytes | memoryview | None, int]:
        """A control batch: kept whole while its transaction has batches; once it may go, it
        gets a delete horizon (KIP-534, ``delete.retention.ms``) and goes at the first
        cleaning past it, unless it is its group's last batch or its producer's last."""
        whole = memoryview(buf)[pos : pos + header.size]
        stats.bytes_read += header.size
        may_go, entry = txns.on_marker(header, _marker(buf, pos, header))
        if entry is not None:
            writer.add_aborted(entry)
        if not may_go:
            return whole, header.max_timestamp
        horizon = header.delete_horizon_ms
        if horizon is None:
            if not header.records_count:
                return whole, header.max_timestamp  # nothing to stamp: an emptied batch
            records = BatchRecords.read(buf, pos, header)
            rebuilt = rebuild_batch(
                records,
                range(len(records)),
                delete_horizon_ms=now_ms + job.config.delete_retention_ms,
            )
            return rebuilt, header.max_timestamp
        if now_ms < horizon:
            return whole, header.max_timestamp
        producer_epoch = job.producer_marker_epochs.get(header.producer_id)
        if last_of_group or (header.producer_id >= 0 and producer_epoch == header.producer_epoch):
            return whole, header.max_timestamp
        return None, header.max_timestamp

    # ------------------------------------------------------------------ reading
    def _batches(
        self, view: SegmentView, position: int
    ) -> Iterator[tuple[bytes, int, BatchHeader, bool]]:
        """(buffer, position in it, header, whether it is the segment's last) of each batch
        in the segment's first ``view.size`` bytes from ``position``, read in chunks through
        the cleaner's own descriptor, CRC checked. A segment deleted meanwhile raises
        FileNotFoundError; a batch that fails its check or is cut short, CorruptBatch."""
        fd = os.open(view.path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            size = view.size
            buffer_size = self.io_buffer_size
            while position < size:
                if self._stopping():
                    raise CleaningAborted("the node is stopping")
                chunk = os.pread(fd, min(buffer_size, size - position), position)
                self.throttler.maybe_throttle(len(chunk))
                off = 0
                while len(chunk) - off >= LOG_OVERHEAD:
                    batch_size = _INT32.unpack_from(chunk, off + 8)[0] + LOG_OVERHEAD
                    if off + batch_size > len(chunk):
                        break
                    header = check_batch(chunk, off, off + batch_size)
                    yield chunk, off, header, position + off + batch_size >= size
                    off += batch_size
                if off:
                    position += off
                    continue
                # Not one whole batch in the chunk: one larger than the buffer, or a torn one.
                batch_size = (
                    _INT32.unpack_from(chunk, 8)[0] + LOG_OVERHEAD
                    if len(chunk) >= LOG_OVERHEAD
                    else 0
                )
                if batch_size < HEADER_SIZE or position + batch_size > size:
                    raise CorruptBatch(f"{view.path}: batch at {position} is cut short")
                buffer_size = batch_size
        finally:
            os.close(fd)


def _marker(buf: bytes | memoryview, pos: int, header: BatchHeader) -> TxnMarker | None:
    """What the control batch at ``pos`` says, if it is a transaction marker."""
    if not header.is_transactional or not header.records_count:
        return None
    try:
        return read_marker(memoryview(buf)[pos : pos + header.size])
    except (MarkerFormatError, CorruptBatch):
        return None
