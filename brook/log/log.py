"""A partition's log (Kafka's ``UnifiedLog``): the segments of one ``<topic>-<partition>``
directory, appended to as leader or follower, read by offset or timestamp, truncated, rolled,
trimmed by retention and flushed. Batches stay opaque bytes apart from their 61-byte header.
"""

from __future__ import annotations

import functools
import logging
import shutil
import threading
import time
import uuid
from bisect import bisect_right
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from brook.protocol.batch import (
    CONTROL_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    CorruptBatch,
    check_batch,
    patch_base_offset,
    patch_leader_epoch,
    set_log_append_time,
    set_max_timestamp,
)
from brook.protocol.compression import CompressionError, decompress_bounded
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.primitives import INT64_MAX, INT64_MIN
from brook.protocol.records import validate_records
from brook.protocol.txn_marker import MarkerFormatError, TxnMarker, marker_batch, read_marker

from .checkpoints import CheckpointError, PartitionMetadataFile, fsync_path
from .config import LogConfig
from .dir_failure import LogDirFailureChannel, offline_error
from .epoch_cache import LeaderEpochCache
from .file_pool import FilePool, shared_pool
from .loader import LogLoader
from .offset_index import CorruptIndexError
from .producer_state import CompletedTxn, ProducerStateManager
from .record_errors import TIMESTAMPS_REJECTED, TimestampRule, record_validation_error
from .segment import (
    MAX_RELATIVE_OFFSET,
    CorruptSegmentError,
    LogSegment,
    SegmentView,
    delete_segment_files,
)
from .span import StoredSpan
from .swap import CleanedFiles
from .time_index import NO_TIMESTAMP
from .txn_index import AbortedTxn
from .txn_verification import VerificationGuard, missing_verification

log = logging.getLogger(__name__)

# A compressed batch's records are checked when they decompress to at most this much (Kafka
# streams them; holding more for the check would let a small batch exhaust memory).
_MAX_CHECKED_PAYLOAD = 64 << 20


LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
_READ_CACHE_SIZE = 16


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _storage_io(
    action: str,
) -> Callable[
    [Callable[Concatenate[PartitionLog, _P], _R]], Callable[Concatenate[PartitionLog, _P], _R]
]:
    """Kafka's ``maybeHandleIOException`` for a ``PartitionLog`` method: it refuses to run in
    an offline log directory, and an I/O error takes the directory offline and surfaces as
    KAFKA_STORAGE_ERROR ("Error while <action> <topic-partition> in dir <dir>"). Running out
    of descriptors surfaces the same way but leaves the directory online
    (``LogDirFailureChannel.fail``)."""

    def wrap(
        method: Callable[Concatenate[PartitionLog, _P], _R],
    ) -> Callable[Concatenate[PartitionLog, _P], _R]:
        @functools.wraps(method)
        def guarded(self: PartitionLog, *args: _P.args, **kwargs: _P.kwargs) -> _R:
            if self.failures.is_offline(self.log_dir):
                raise offline_error(self.dir.name, self.log_dir)
            try:
                return method(self, *args, **kwargs)
            except OSError as exc:
                raise self.failures.fail(self.log_dir, f"{action} {self.dir.name}", exc) from exc

        return guarded

    return wrap


def parse_topic_partition(name: str) -> tuple[str, int]:
    """Split a ``<topic>-<partition>`` directory name; topics may contain '-' themselves."""
    topic, dash, partition = name.rpartition("-")
    if not dash or not topic or not partition.isdigit():
        raise ValueError(f"{name!r} is not a <topic>-<partition> directory name")
    return topic, int(partition)


@dataclass(frozen=True, slots=True)
class AppendResult:
    first_offset: int
    last_offset: int
    log_append_time_ms: int
    log_start_offset: int
    records_count: int
    duplicate: bool


@dataclass(frozen=True, slots=True)
class ReadResult:
    records: bytes | StoredSpan
    log_start_offset: int
    log_end_offset: int


class PartitionLog:
    """Appends and truncation run on one thread (the event loop); ``flush`` may run on a
    worker thread at the same time, so changes to the segment list take ``_lock``.

    Every method that touches the files goes through ``_storage_io``: once an I/O error has
    taken the log directory offline (``failures``), the log neither reads nor writes again.
    """

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: list[LogSegment],
        *,
        log_start_offset: int,
        recovery_point: int,
        epoch_cache: LeaderEpochCache,
        now: int,
        failures: LogDirFailureChannel | None = None,
        files: FilePool | None = None,
    ) -> None:
        self.dir = directory
        self.log_dir = directory.parent
        self.failures = failures or LogDirFailureChannel()
        self.topic, self.partition = parse_topic_partition(directory.name)
        self.config = config
        # Where this log's segment files get their descriptors (the node's pool).
        self.files = shared_pool() if files is None else files
        self.topic_id: uuid.UUID | None = None
        self._segments = segments
        self._bases = [s.base_offset for s in segments]
        self._lock = threading.Lock()
        self.log_start_offset = log_start_offset
        self.log_end_offset = segments[-1].next_offset
        self.recovery_point = recovery_point
        self.epoch_cache = epoch_cache
        self.producer_state = ProducerStateManager(directory)
        self._last_flush_ms = now
        self._truncations = 0  # a flush racing a truncation must not move the recovery point
        # Files and directories created or replaced since the last flush: it fsyncs them, so
        # that nothing on the append path (the event loop) waits for a disk.
        self._unsynced_paths: set[Path] = set()
        # next offset -> (segment, position) where recent reads ended: sequential fetches
        # continue there without an index lookup and header scan.
        self._read_cache: dict[int, tuple[LogSegment, int]] = {}
        # Told the offset a truncation cut the log back to (the cleaner's checkpoint must not
        # stay above it: records written there again are dirty).
        self.on_truncated: Callable[[PartitionLog, int], None] | None = None

    @classmethod
    def open(
        cls,
        dir: Path,
        config: LogConfig,
        *,
        recovery_point: int = 0,
        log_start_offset: int = 0,
        had_clean_shutdown: bool = False,
        topic_id: uuid.UUID | None = None,
        now_ms: int | None = None,
        failures: LogDirFailureChannel | None = None,
        files: FilePool | None = None,
    ) -> PartitionLog:
        """Load (recovering if needed) or create the log in ``dir``; its files take their
        descriptors from ``files`` (a process-wide pool by default). An OSError here is the
        caller's to report (the log manager takes the directory offline)."""
        directory = Path(dir)
        parse_topic_partition(directory.name)
        created = not directory.exists()
        directory.mkdir(parents=True, exist_ok=True)
        now = wall_clock_ms() if now_ms is None else now_ms
        epoch_cache = LeaderEpochCache(directory / LEADER_EPOCH_CHECKPOINT)
        loaded = LogLoader(
            directory,
            config,
            epoch_cache,
            recovery_point=recovery_point,
            log_start_offset=log_start_offset,
            had_clean_shutdown=had_clean_shutdown,
            now_ms=now,
            files=files,
        ).load()
        plog = cls(
            directory,
            config,
            loaded.segments,
            log_start_offset=loaded.log_start_offset,
            recovery_point=loaded.recovery_point,
            epoch_cache=epoch_cache,
            now=now,
            failures=failures,
            files=files,
        )
        if created or loaded.fresh:
            plog._unsynced_paths.update((directory, directory.parent))
        try:
            plog.assign_topic_id(topic_id)
            plog._rebuild_producer_state(replay_from=loaded.recovered_from)
        except BaseException:
            plog.close_files()
            raise
        return plog

    @_storage_io("writing partition.metadata of")
    def assign_topic_id(self, topic_id: uuid.UUID | None) -> None:
        """Check ``topic_id`` against partition.metadata, writing it if the file has none."""
        if topic_id is not None and topic_id == self.topic_id:
            return  # read from (or written to) the file already: one read per start
        meta = PartitionMetadataFile(self.dir / PARTITION_METADATA)
        try:
            stored = meta.read()
        except CheckpointError:
            stored = None
        if topic_id is not None and stored is not None and stored != topic_id:
            raise KafkaError(
                Errors.INCONSISTENT_TOPIC_ID,
                f"{self.dir.name} belongs to topic id {stored}, not {topic_id}",
            )
        if topic_id is not None and stored is None:
            meta.write(topic_id, sync=False)
            with self._lock:
                self._unsynced_paths.update((meta.path, self.dir))
        self.topic_id = topic_id or stored

    def update_config(self, config: LogConfig) -> None:
        self.config = config
        self._segments[-1].reconfigure(config)

    # ------------------------------------------------------------------ appends
    @_storage_io("appending records to")
    def append_as_leader(
        self,
        records: bytes,
        leader_epoch: int,
        now_ms: int,
        verify: bool = False,
        guard: VerificationGuard | None = None,
    ) -> AppendResult:
        """Validate one client batch, give it the next offsets and ``leader_epoch``, write it.

        ``verify`` (KIP-890, a client's produce with ``transaction.partition.verification
        .enable``): a transactional batch that would open its producer's transaction here must
        carry ``guard``, the one its verification with the coordinator holds, else
        INVALID_TXN_STATE. Raises KafkaError with Kafka's code for a batch it rejects; nothing
        is written then.
        """
        header, max_timestamp = self._validate_client_batch(records, now_ms)
        config = self.config
        if header.producer_id >= 0:
            state = self.producer_state
            duplicate = state.check_append(header)
            if duplicate is not None:
                return AppendResult(
                    duplicate.first_offset,
                    duplicate.last_offset,
                    duplicate.timestamp if config.log_append_time else -1,
                    self.log_start_offset,
                    header.records_count,
                    True,
                )
            if verify:
                entry = state.last_entry(header.producer_id)
                open_txn = entry is not None and entry.current_txn_first_offset is not None
                if missing_verification(
                    state.verifications,
                    header.producer_id,
                    open_txn,
                    header.is_transactional,
                    header.is_control,
                    guard,
                ):
                    raise KafkaError(
                        Errors.INVALID_TXN_STATE, "Record was not part of an ongoing transaction"
                    )
            state.verifications.check_sequence(header.producer_id, header.base_sequence)
        base = self.log_end_offset
        size = len(records)
        if config.log_append_time:
            whole = bytearray(records)
            patch_base_offset(whole, 0, base)
            patch_leader_epoch(whole, 0, leader_epoch)
            set_log_append_time(whole, 0, now_ms)
            parts: tuple[bytes | bytearray | memoryview, ...] = (whole,)
            max_timestamp = append_time = now_ms
        else:
            head = bytearray(records[:HEADER_SIZE])
            patch_base_offset(head, 0, base)
            patch_leader_epoch(head, 0, leader_epoch)
            body = memoryview(records)[HEADER_SIZE:]
            if max_timestamp != header.max_timestamp:
                # As Kafka's validator: the batch carries its records' largest timestamp.
                set_max_timestamp(head, body, max_timestamp)
            parts = (head, body)
            append_time = -1
        last = base + header.last_offset_delta
        segment = self._segments[-1]
        if segment.should_roll(size, max_timestamp, last, now_ms, config):
            segment = self._roll(now_ms)
        # The epoch entry is written before the batch (so a flush that covers the batch also
        # syncs it), and the batch last: if any write fails, the batch's bytes are not left
        # in the log (the segment rolls its own failed write back; an entry past the log end
        # is dropped when the log is next opened).
        latest = self.epoch_cache.latest_epoch()
        if leader_epoch >= 0 and (latest is None or leader_epoch > latest):
            self.epoch_cache.assign(leader_epoch, base)
        segment.append(parts, size, last, max_timestamp)
        self.log_end_offset = last + 1
        if header.producer_id >= 0:
            self.producer_state.update(header, base, max_timestamp)
        self.producer_state.map_end_offset = last + 1
        return AppendResult(
            base, last, append_time, self.log_start_offset, header.records_count, False
        )

    def _validate_client_batch(self, records: bytes, now_ms: int) -> tuple[BatchHeader, int]:
        """Kafka's LogValidator checks: the header, then every record. Returns the header
        and the records' largest timestamp."""
        size = len(records)
        if size > 16 and records[16] != MAGIC:
            raise KafkaError(Errors.INVALID_RECORD, f"record batch magic {records[16]} is not 2")
        try:
            header = check_batch(records, 0, size)
        except CorruptBatch as exc:
            raise KafkaError(Errors.CORRUPT_MESSAGE, str(exc)) from None
        batch_size = header.batch_length + LOG_OVERHEAD
        if batch_size != size:
            if size - batch_size >= HEADER_SIZE:
                raise KafkaError(Errors.INVALID_RECORD, "a produce carries one batch per partition")
            raise KafkaError(Errors.CORRUPT_MESSAGE, "trailing bytes after the batch")
        count = header.records_count
        if count <= 0 or count != header.last_offset_delta + 1:
            raise KafkaError(
                Errors.INVALID_RECORD,
                f"batch of {count} records with last offset delta {header.last_offset_delta}",
            )
        if header.attributes & CONTROL_BIT:
            raise KafkaError(Errors.INVALID_RECORD, "clients may not write control batches")
        config = self.config
        if size > config.max_message_bytes:
            raise KafkaError(
                Errors.MESSAGE_TOO_LARGE,
                f"batch of {size} bytes exceeds max.message.bytes {config.max_message_bytes}",
            )
        if size > config.segment_bytes:
            raise KafkaError(
                Errors.RECORD_LIST_TOO_LARGE,
                f"batch of {size} bytes exceeds segment.bytes {config.segment_bytes}",
            )
        return header, self._check_records(records, header, now_ms)

    def _check_records(self, records: bytes, header: BatchHeader, now_ms: int) -> int:
        """Kafka's LogValidator over the records: every record whole (INVALID_RECORD for the
        batch otherwise); then each record keyed on a compacted topic and timestamped within
        message.timestamp.before/after.max.ms under CreateTime, a producer never stamping
        LogAppendTime. A batch with such invalid records is refused whole, naming every one
        of them (RecordValidationError). Returns the records' largest timestamp."""
        config = self.config
        reject = refused = False
        if config.log_append_time:
            low, high = INT64_MIN, INT64_MAX
        else:
            # The defaults are Long.MAX_VALUE: keep the bounds within int64.
            low = max(INT64_MIN, now_ms - config.message_timestamp_before_max_ms)
            high = min(INT64_MAX, now_ms + config.message_timestamp_after_max_ms)
        if header.log_append_time:
            # Every record of a LogAppendTime batch reads as its max timestamp: refused under
            # a LogAppendTime topic or when it is none, else checked against the bounds.
            stamp = header.max_timestamp
            refused = config.log_append_time or stamp == NO_TIMESTAMP
            reject = refused or not low <= stamp <= high
            low, high = INT64_MIN, INT64_MAX
        data: bytes | memoryview | None = memoryview(records)[HEADER_SIZE:]
        if header.codec:
            try:
                data = decompress_bounded(header.codec, data, _MAX_CHECKED_PAYLOAD)
            except CompressionError as exc:
                raise KafkaError(Errors.CORRUPT_MESSAGE, str(exc)) from None
            if data is None:
                # Too big once decompressed to hold for the check: stored as sent, with the
                # batch's own first and largest timestamps checked instead.
                stamps = (header.base_timestamp, header.max_timestamp)
                if reject or any(s != NO_TIMESTAMP and not low <= s <= high for s in stamps):
                    raise KafkaError(Errors.INVALID_TIMESTAMP, TIMESTAMPS_REJECTED)
                return header.max_timestamp
        try:
            max_timestamp, problems = validate_records(
                data,
                header.records_count,
                header.base_timestamp,
                low,
                high,
                config.compacted,
                reject,
            )
        except CorruptBatch as exc:
            raise KafkaError(
                Errors.INVALID_RECORD, f"Found invalid record structure: {exc}"
            ) from None
        if problems:
            rule = TimestampRule(
                now_ms,
                config.message_timestamp_before_max_ms,
                config.message_timestamp_after_max_ms,
                refused,
                header.max_timestamp if header.log_append_time else None,
            )
            raise record_validation_error(problems, self.dir.name, header.base_offset, rule)
        return max_timestamp

    @_storage_io("appending records to")
    def append_as_follower(self, records: bytes) -> AppendResult:
        """Append a leader's batches as they are (offsets, epochs, timestamps), after checking
        each one's CRC and that its offsets come after this log's end offset (they may skip
        some: the leader's log is compacted, as Kafka's follower accepts)."""
        view = memoryview(records)
        size = len(view)
        headers: list[tuple[int, BatchHeader]] = []
        markers: dict[int, TxnMarker] = {}  # what each transaction marker says, by position
        expected = self.log_end_offset
        pos = 0
        while pos < size:
            try:
                header = check_batch(view, pos, size)
            except CorruptBatch as exc:
                raise KafkaError(Errors.CORRUPT_MESSAGE, str(exc)) from None
            if header.base_offset < expected:
                raise KafkaError(
                    Errors.INVALID_RECORD,
                    f"batch at offset {header.base_offset} is below offset {expected}",
                )
            if header.size > self.config.segment_bytes:
                raise KafkaError(
                    Errors.RECORD_LIST_TOO_LARGE,
                    f"batch of {header.size} bytes exceeds segment.bytes",
                )
            if header.is_control and header.is_transactional and header.producer_id >= 0:
                try:
                    markers[pos] = read_marker(view[pos : pos + header.size])
                except (MarkerFormatError, CorruptBatch) as exc:
                    raise KafkaError(
                        Errors.CORRUPT_MESSAGE, f"marker at offset {header.base_offset}: {exc}"
                    ) from None
            headers.append((pos, header))
            expected = header.next_offset
            pos += header.size
        if not headers:
            return AppendResult(-1, -1, -1, self.log_start_offset, 0, False)
        now = wall_clock_ms()
        for part in self._segment_sized_runs(headers):
            start = part[0][0]
            end = part[-1][0] + part[-1][1].size
            last = part[-1][1].last_offset
            max_ts = max(h.max_timestamp for _, h in part)
            segment = self._segments[-1]
            if segment.should_roll(end - start, max_ts, last, now, self.config):
                # At the first batch's base offset, as Kafka's follower rolls: past a gap
                # the log end's relative offsets might not reach the batches.
                segment = self._roll(now, part[0][1].base_offset)
            for _, header in part:  # epochs before the batches, as in append_as_leader
                epoch = header.partition_leader_epoch
                latest = self.epoch_cache.latest_epoch()
                if epoch >= 0 and (latest is None or epoch > latest):
                    self.epoch_cache.assign(epoch, header.base_offset)
            segment.append_batches(view[start:end], [(p - start, h) for p, h in part])
            for pos, header in part:
                if header.producer_id >= 0:
                    completed = self.producer_state.update(
                        header, header.base_offset, header.max_timestamp, markers.get(pos)
                    )
                    if completed is not None:
                        self._index_completed(completed)
            self.log_end_offset = last + 1
            self.producer_state.map_end_offset = last + 1
        first, last_header = headers[0][1], headers[-1][1]
        return AppendResult(
            first.base_offset,
            last_header.last_offset,
            -1,
            self.log_start_offset,
            sum(h.records_count for _, h in headers),
            False,
        )

    def _segment_sized_runs(
        self, headers: list[tuple[int, BatchHeader]]
    ) -> Iterator[list[tuple[int, BatchHeader]]]:
        """Consecutive batches grouped so that each group fits in one segment: in its bytes,
        and in the relative offsets from its first batch (offsets may skip)."""
        limit = self.config.segment_bytes
        run: list[tuple[int, BatchHeader]] = []
        run_bytes = 0
        for item in headers:
            if run and (
                run_bytes + item[1].size > limit
                or item[1].last_offset - run[0][1].base_offset > MAX_RELATIVE_OFFSET
            ):
                yield run
                run, run_bytes = [], 0
            run.append(item)
            run_bytes += item[1].size
        yield run

    @_storage_io("rolling")
    def roll(self, now_ms: int) -> None:
        """Start a new active segment now (Kafka's ``UnifiedLog.roll``), unless the active
        one is empty."""
        if self._segments[-1].size:
            self._roll(now_ms)

    def _roll(self, now: int, next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the log end, or at ``next_offset`` (the next
        batch's base) when it is past it. An empty active segment (rolled only for a batch
        past a gap wider than its relative offsets reach) is replaced, as Kafka's roll does."""
        old = self._segments[-1]
        base = self.log_end_offset if next_offset is None else max(next_offset, self.log_end_offset)
        segment = LogSegment.with_config(
            self.dir, base, self.config, now, create=True, files=self.files
        )
        if not old.size:
            with self._lock:
                self._segments[-1] = segment
                self._bases[-1] = base
                self._read_cache.clear()
                self._unsynced_paths.add(self.dir)
            old.delete()
            return segment
        old.on_become_inactive()
        with self._lock:
            self._segments.append(segment)
            self._bases.append(segment.base_offset)
            self._unsynced_paths.add(self.dir)
        self.producer_state.take_snapshot()
        return segment

    # ------------------------------------------------------------------ reads
    @_storage_io("reading from")
    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_batch: bool = True,
        spans: bool = False,
    ) -> ReadResult:
        """Whole stored batches from the one holding ``offset``, within ``max_bytes`` (but at
        least one batch when ``min_one_batch``), none ending after ``max_offset``. With
        ``spans`` (fetch responses), large reads are ``StoredSpan``s: see span.py."""
        start, end = self.log_start_offset, self.log_end_offset
        if offset < start or offset > end:
            raise KafkaError(
                Errors.OFFSET_OUT_OF_RANGE,
                f"offset {offset} is outside [{start}, {end}] of {self.dir.name}",
            )
        if offset == end or (max_offset is not None and offset >= max_offset):
            return ReadResult(b"", start, end)
        located = self._locate(offset)
        while located is not None:
            segment, position = located
            data, next_offset = segment.read(position, max_bytes, max_offset, min_one_batch, spans)
            if data:
                if isinstance(data, StoredSpan):
                    data.log = self  # its chunks are read through read_span's guard
                cache = self._read_cache
                if len(cache) >= _READ_CACHE_SIZE:
                    del cache[next(iter(cache))]
                cache[next_offset] = (segment, position + len(data))
                return ReadResult(data, start, end)
            if position < segment.size:
                break
            located = self._next_segment_start(segment)
        return ReadResult(b"", start, end)

    @_storage_io("reading from")
    def read_span(self, span: StoredSpan, offset: int, size: int) -> bytes:
        """``size`` bytes from ``offset`` within a span this log cut, read as a connection
        sends it. The guard is that of ``read``, since the directory may have gone offline
        since the span was cut: KAFKA_STORAGE_ERROR then, with nothing opened; an I/O error
        takes the directory offline; running out of descriptors for the segment's reopening
        fails this read only. A segment closed or truncated since raises SpanGone."""
        return span.segment.read_span(span.position + offset, size, span.truncations)

    def _locate(self, offset: int) -> tuple[LogSegment, int] | None:
        """The segment and position of the batch holding ``offset``."""
        cached = self._read_cache.get(offset)
        if cached is not None:
            return cached
        segments = self._segments
        for i in range(max(0, bisect_right(self._bases, offset) - 1), len(segments)):
            position = segments[i].find_position(offset)
            if position is not None:
                return segments[i], position
        return None

    def _next_segment_start(self, segment: LogSegment) -> tuple[LogSegment, int] | None:
        i = bisect_right(self._bases, segment.base_offset)
        return (self._segments[i], 0) if i < len(self._segments) else None

    def _headers_from(self, offset: int) -> Iterator[BatchHeader]:
        """Headers of the batches from the one holding ``offset`` to the log end."""
        located = self._locate(offset)
        if located is None:
            return
        segment, position = located
        i = self._segments.index(segment)
        for seg in self._segments[i:]:
            for _, header in seg.iter_headers(position):
                yield header
            position = 0

    @_storage_io("reading from")
    def offset_for_timestamp(self, timestamp_ms: int) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the first record with timestamp >= target."""
        for segment in list(self._segments):
            if segment.max_timestamp >= timestamp_ms:
                found = segment.find_offset_by_timestamp(timestamp_ms, self.log_start_offset)
                if found is not None:
                    return found
        return None

    @_storage_io("reading from")
    def max_timestamp_offset(self) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the first record with the largest timestamp."""
        best: LogSegment | None = None
        for segment in self._segments:
            if segment.max_timestamp > (NO_TIMESTAMP if best is None else best.max_timestamp):
                best = segment
        return best.max_timestamp_record() if best is not None else None

    def latest_epoch(self) -> int | None:
        return self.epoch_cache.latest_epoch()

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        return self.epoch_cache.end_offset_for(epoch, self.log_end_offset)

    # ------------------------------------------------------------------ truncation
    @_storage_io("truncating")
    def truncate_to(self, offset: int) -> None:
        """Remove everything at ``offset`` and after (a follower diverged from its leader).

        Whole batches go: an ``offset`` inside a batch leaves the log ending before it.
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        if offset >= self.log_end_offset:
            return
        if offset < self.log_start_offset:
            self.truncate_fully_and_start_at(offset)
            return
        with self._lock:
            keep = max(1, bisect_right(self._bases, offset))
            doomed = self._segments[keep:]
            del self._segments[keep:]
            del self._bases[keep:]
            self._truncations += 1
            self._read_cache.clear()
        for segment in doomed:
            segment.delete()
        active = self._segments[-1]
        active.truncate_to(offset, wall_clock_ms())
        if active.next_offset < self.log_start_offset:
            # The batch holding ``offset`` also held the log start: nothing readable is left.
            self.truncate_fully_and_start_at(self.log_start_offset)
            return
        self.log_end_offset = active.next_offset
        self.recovery_point = min(self.recovery_point, self.log_end_offset)
        self.epoch_cache.truncate_from_end(self.log_end_offset)
        self._rebuild_producer_state()
        if self.on_truncated is not None:
            self.on_truncated(self, self.log_end_offset)

    @_storage_io("truncating")
    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and restart the log empty at ``offset``."""
        with self._lock:
            doomed = list(self._segments)
            self._truncations += 1
            self._read_cache.clear()
            for old in doomed:
                old.delete()
            segment = LogSegment.with_config(
                self.dir, offset, self.config, wall_clock_ms(), create=True, files=self.files
            )
            self._segments[:] = [segment]
            self._bases[:] = [offset]
            self._unsynced_paths.add(self.dir)
        self.log_start_offset = self.log_end_offset = self.recovery_point = offset
        self.epoch_cache.clear()
        self.producer_state.truncate_fully(offset)
        if self.on_truncated is not None:
            self.on_truncated(self, offset)

    @_storage_io("moving the log start offset of")
    def maybe_increment_log_start_offset(self, offset: int) -> None:
        """Move the log start forward (DeleteRecords); segments below it go at the next
        retention run."""
        if offset > self.log_end_offset:
            raise KafkaError(
                Errors.OFFSET_OUT_OF_RANGE,
                f"log start {offset} would pass the log end {self.log_end_offset}",
            )
        if offset > self.log_start_offset:
            self.log_start_offset = offset
            self.epoch_cache.truncate_from_start(offset)

    def _rebuild_producer_state(self, replay_from: int | None = None) -> None:
        """Latest snapshot at or below the log end (and ``replay_from``), then the batches
        after it. The aborted-transaction indexes are rebuilt over the same range: their
        entries from the snapshot on are dropped and written again as the replay finds them."""
        state = self.producer_state
        start = state.load(self.log_start_offset, self.log_end_offset, at_most=replay_from)
        for segment in self._segments:
            if segment.next_offset > start or segment.txn_index.last_offset is not None:
                segment.txn_index.truncate_to(start)
        if start < self.log_end_offset:
            state.replay(
                self._headers_from(start),
                read_marker=self._read_marker,
                on_completed=self._index_completed,
            )
        state.map_end_offset = self.log_end_offset

    # ------------------------------------------------------------------ transactions
    def _read_marker(self, header: BatchHeader) -> TxnMarker | None:
        """What the transaction marker batch ``header`` says, read back from its segment.
        None, logged, for one that does not parse (appends refuse those, so only a damaged
        file has one): the log still opens, and that producer's transaction stays open."""
        located = self._locate(header.base_offset)
        try:
            if located is None:
                raise MarkerFormatError("no batch there")
            segment, position = located
            return read_marker(segment.read_batch(position, header))
        except (MarkerFormatError, CorruptBatch) as exc:
            log.warning("%s: unreadable marker at offset %d: %s", self.dir, header.base_offset, exc)
            return None

    def _index_completed(self, completed: CompletedTxn) -> None:
        """An aborted transaction goes into the ``.txnindex`` of the segment holding its
        marker, with the last stable offset once it ended (Kafka's updateTxnIndex)."""
        if not completed.aborted:
            return
        i = bisect_right(self._bases, completed.last_offset) - 1
        segment = self._segments[max(i, 0)]
        segment.txn_index.append(
            AbortedTxn(
                completed.producer_id,
                completed.first_offset,
                completed.last_offset,
                self.producer_state.last_stable_offset_after(completed),
            )
        )

    def first_unstable_offset(self) -> int | None:
        """Where the earliest transaction still undecided (or decided by a marker not yet
        below the high watermark) starts; None: the last stable offset is the HW."""
        return self.producer_state.first_unstable_offset()

    def on_high_watermark(self, high_watermark: int) -> None:
        """The partition's HW moved: markers below it no longer hold the LSO back."""
        self.producer_state.on_high_watermark(high_watermark)

    @_storage_io("reading the aborted transactions of")
    def aborted_transactions(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [fetch_offset, upper_bound) (a read_committed
        fetch's range), segment by segment from the one holding ``fetch_offset`` until an
        entry's last stable offset reaches ``upper_bound`` (Kafka's collectAbortedTxns)."""
        segments = self._segments
        i = max(bisect_right(self._bases, fetch_offset) - 1, 0)
        found: list[AbortedTxn] = []
        for segment in segments[i:]:
            if segment.base_offset >= upper_bound:
                break
            txns, complete = segment.txn_index.collect(fetch_offset, upper_bound)
            found.extend(txns)
            if complete:
                break
        return found

    @_storage_io("appending a transaction marker to")
    def append_marker(
        self, marker: TxnMarker, leader_epoch: int, now_ms: int
    ) -> tuple[AppendResult, CompletedTxn | None]:
        """Write a COMMIT or ABORT marker as leader (WriteTxnMarkers): Kafka's checks of the
        producer and coordinator epochs first (KafkaError, nothing written), then the control
        batch at the log end; an abort is indexed in the active segment's ``.txnindex``."""
        self.producer_state.check_marker(marker)
        base = self.log_end_offset
        batch = marker_batch(marker, timestamp=now_ms, base_offset=base, leader_epoch=leader_epoch)
        header = check_batch(batch, 0, len(batch))
        segment = self._segments[-1]
        if segment.should_roll(len(batch), now_ms, base, now_ms, self.config):
            segment = self._roll(now_ms)
        latest = self.epoch_cache.latest_epoch()
        if leader_epoch >= 0 and (latest is None or leader_epoch > latest):
            self.epoch_cache.assign(leader_epoch, base)
        segment.append((batch,), len(batch), base, now_ms)
        self.log_end_offset = base + 1
        completed = self.producer_state.update(header, base, now_ms, marker)
        if completed is not None:
            self._index_completed(completed)
        self.producer_state.map_end_offset = base + 1
        return AppendResult(base, base, -1, self.log_start_offset, 1, False), completed

    # ------------------------------------------------------------------ retention
    @_storage_io("deleting segments of")
    def delete_old_segments(self, now_ms: int, high_watermark: int | None = None) -> int:
        """Delete the oldest segments that retention allows, never any data at or above
        ``high_watermark``; returns how many segments went."""
        limit = self.log_end_offset if high_watermark is None else high_watermark
        deleted = self._delete_segments(
            lambda _seg, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset,
            limit,
            now_ms,
        )
        config = self.config
        if not config.delete_enabled:
            return deleted
        if config.retention_ms >= 0:
            deleted += self._delete_segments(
                lambda seg, _nxt: now_ms - seg.largest_timestamp > config.retention_ms,
                limit,
                now_ms,
            )
        if config.retention_bytes >= 0:
            excess = self.size_in_bytes() - config.retention_bytes

            def over_size(seg: LogSegment, _nxt: LogSegment | None) -> bool:
                nonlocal excess
                if excess - seg.size >= 0:
                    excess -= seg.size
                    return True
                return False

            if excess >= 0:
                deleted += self._delete_segments(over_size, limit, now_ms)
        return deleted

    def _delete_segments(
        self,
        predicate: Callable[[LogSegment, LogSegment | None], bool],
        high_watermark: int,
        now: int,
    ) -> int:
        segments = self._segments
        doomed: list[LogSegment] = []
        for i, segment in enumerate(segments):
            nxt = segments[i + 1] if i + 1 < len(segments) else None
            upper = nxt.base_offset if nxt is not None else self.log_end_offset
            if not (high_watermark >= upper and predicate(segment, nxt)):
                break
            if nxt is None and segment.size == 0:
                break
            doomed.append(segment)
        if not doomed:
            return 0
        if len(doomed) == len(segments):
            self._roll(now)
        with self._lock:
            del self._segments[: len(doomed)]
            del self._bases[: len(doomed)]
            self._read_cache.clear()
        for segment in doomed:
            segment.delete()
        first_base = self._segments[0].base_offset
        if first_base > self.log_start_offset:
            self.log_start_offset = first_base
            self.epoch_cache.truncate_from_start(first_base)
        self.producer_state.delete_snapshots_before(first_base)
        return len(doomed)

    # ------------------------------------------------------------------ compaction
    def cleanable_segments(self) -> tuple[list[SegmentView], int]:
        """Views of every segment but the active one (which is never cleaned), and the
        active segment's base offset. On the log's thread."""
        segments = self._segments
        return [s.view() for s in segments[:-1]], segments[-1].base_offset

    def producer_last_offsets(self) -> dict[int, int]:
        """Each producer's last offset: the cleaner keeps the batch ending there (empty if
        need be), since it holds the producer's last sequence. On the log's thread."""
        return {
            pid: entry.batches[-1].last_offset
            for pid, entry in self.producer_state.producers.items()
            if entry.batches
        }

    def producer_marker_epochs(self) -> dict[int, int]:
        """The epoch of each producer whose state holds no data batch (its last batch is a
        marker, as after a fencing abort that bumped its epoch): the cleaner keeps its markers
        of that epoch, which carry the epoch that fences its zombie (Kafka's lastRecord
        without a data offset). On the log's thread."""
        return {
            pid: entry.epoch
            for pid, entry in self.producer_state.producers.items()
            if not entry.batches and entry.epoch >= 0
        }

    @_storage_io("replacing cleaned segments of")
    def replace_segments(
        self,
        old: Sequence[SegmentView],
        cleaned: CleanedFiles,
        on_step: Callable[[str], None] | None = None,
    ) -> bool:
        """Swap the cleaned segment (written and synced as ``cleaned``) in for the segments
        ``old`` (swap.py's protocol), on the log's thread. Refused (False, the cleaned files
        removed) unless ``old`` are still consecutive segments of this log, none the active
        one, none truncated, appended to or deleted since they were read.

        The old segments are closed, so a ``StoredSpan`` being sent from one of them fails
        (the client fetches again) as after retention. ``on_step`` is called after each step
        of the protocol (crash tests)."""
        segments = self._segments
        first = old[0].segment
        i = next((n for n, s in enumerate(segments) if s is first), -1)
        if (
            i < 0
            or i + len(old) >= len(segments)
            or any(
                s is not v.segment or not v.unchanged()
                for s, v in zip(segments[i : i + len(old)], old, strict=True)
            )
        ):
            cleaned.discard()
            return False
        cleaned.to_swap()
        if on_step is not None:
            on_step("swap")
        for view in old:
            view.segment.close()
            delete_segment_files(self.dir, view.base_offset)
        if on_step is not None:
            on_step("deleted")
        cleaned.swap_in()
        if on_step is not None:
            on_step("renamed")
        segment = LogSegment.with_config(
            self.dir, cleaned.base_offset, self.config, wall_clock_ms(), files=self.files,
            create=False,
        )  # fmt: skip
        try:
            segment.load()
        except (CorruptIndexError, CorruptSegmentError):
            segment.recover()  # never expected: the cleaner wrote and synced both
        segment.release_files()
        with self._lock:
            segments[i : i + len(old)] = [segment]
            self._bases[i : i + len(old)] = [segment.base_offset]
            self._read_cache.clear()
            self._unsynced_paths.add(self.dir)
        return True

    # ------------------------------------------------------------------ flushing, files
    def needs_flush(self, now_ms: int) -> bool:
        unflushed = self.unflushed_messages()
        if unflushed <= 0:
            return False
        return (
            unflushed >= self.config.flush_messages
            or now_ms - self._last_flush_ms >= self.config.flush_ms
        )

    def unflushed_messages(self) -> int:
        return self.log_end_offset - self.recovery_point

    @_storage_io("flushing")
    def flush(self, up_to: int | None = None) -> None:
        """fsync the segments holding offsets below ``up_to`` (default: the log end) and move
        the recovery point there. Safe to call from a worker thread.

        Fails if the directory went offline meanwhile, even when this thread's fsyncs
        succeeded: after a failed fsync the kernel may have dropped dirty pages, and a later
        fsync can succeed without them, so only a flush with no failure around it is one that
        may acknowledge anything."""
        with self._lock:
            target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
            segments = [
                s
                for s in self._segments
                if s.base_offset < target and s.next_offset > self.recovery_point
            ]
            generation = self._truncations
            paths, self._unsynced_paths = self._unsynced_paths, set()
        for segment in segments:
            segment.flush()
        self.producer_state.sync_snapshots()
        self.epoch_cache.sync()
        # files before the directories holding them, the partition directory before its parent
        for path in sorted(paths, key=lambda p: len(p.parts), reverse=True):
            try:
                fsync_path(path)
            except FileNotFoundError:
                continue  # removed since (a deleted log or a replaced file)
        if self.failures.is_offline(self.log_dir):
            raise offline_error(self.dir.name, self.log_dir)
        with self._lock:
            if generation == self._truncations and target > self.recovery_point:
                self.recovery_point = target
            self._last_flush_ms = wall_clock_ms()

    def size_in_bytes(self) -> int:
        return sum(segment.size for segment in self._segments)

    def segments(self) -> list[LogSegment]:
        """A copy of the segment list, oldest first."""
        with self._lock:
            return list(self._segments)

    @_storage_io("closing")
    def close(self) -> None:
        """Flush, snapshot the producer state at the log end, and close every file."""
        self.flush_for_close()
        self.close_files()

    @_storage_io("closing")
    def flush_for_close(self) -> None:
        """What ``close`` makes durable before closing: everything, and a producer snapshot
        at the log end. As Kafka, the snapshot is taken only when the log end is beyond the
        latest snapshot (or 0 without one): an equal one is on disk already, and an empty
        log at 0 has nothing to remember. Safe on a worker thread, one per log; an I/O error
        takes the directory offline as in ``flush``."""
        self.flush()
        state = self.producer_state
        snapshots = state.snapshot_offsets()
        if state.map_end_offset > (snapshots[-1] if snapshots else 0):
            state.take_snapshot(sync=True)

    def close_files(self) -> None:
        """Close every file without flushing (the log is being deleted or moved)."""
        with self._lock:
            for segment in self._segments:
                segment.close()

    def delete(self) -> None:
        """Close and remove the whole directory."""
        self.close_files()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (
            f"PartitionLog({self.dir.name}, start={self.log_start_offset}, "
            f"end={self.log_end_offset}, segments={len(self._segments)})"
        )
