"""One log segment (Kafka's ``LogSegment``): the ``<base offset>.log`` file of whole v2 batches
with its sparse offset and time indexes. Appends, reads by position, offset and timestamp
lookups, truncation, roll decisions and recovery (CRC and offset checks of every batch).
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from brook.protocol.batch import (
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    BatchHeader,
    CorruptBatch,
    check_batch,
    read_header,
)
from brook.protocol.errors import KafkaError
from brook.protocol.records import Record, batch_records

from .config import LogConfig
from .dir_failure import out_of_descriptors
from .file_pool import FilePool, shared_pool
from .offset_index import CorruptIndexError, OffsetIndex
from .span import SpanGone, StoredSpan
from .time_index import NO_TIMESTAMP, TimeIndex
from .txn_index import TXN_INDEX_SUFFIX, TransactionIndex

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
DELETED_SUFFIX = ".deleted"
SEGMENT_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
MAX_RELATIVE_OFFSET = 2**31 - 1

_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_LAST_OFFSET_DELTA_AT = 23
_WALK_HEADER_BYTES = _LAST_OFFSET_DELTA_AT + 4
_DIRECT_READ_BYTES = 32 * 1024
_HEADER_SCAN_CHUNK = 16 * 1024
_RECOVERY_CHUNK = 4 * 1024 * 1024


class CorruptSegmentError(ValueError):
    """A segment whose batches do not chain to its end; it needs recovery."""


class TornAppendError(OSError):
    """A failed append whose bytes could not be cut back: the segment's files end with what
    the next appends would land after. Always a failure of the log directory, whatever the
    error that began it (even one that alone would leave the directory online)."""


class _AppendState(NamedTuple):
    """What an append changes in a segment, kept to undo it if the write fails."""

    size: int
    next_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    rolling_timestamp: int | None
    bytes_since_index: int
    index_entries: int
    time_index_entries: int


def segment_path(directory: Path, base_offset: int, suffix: str) -> Path:
    return directory / f"{base_offset:020d}{suffix}"


def delete_segment_files(directory: Path, base_offset: int) -> None:
    """Rename a segment's files to ``.deleted`` (so a crash midway leaves no live half of it)
    and remove them."""
    for suffix in SEGMENT_SUFFIXES:
        path = segment_path(directory, base_offset, suffix)
        doomed = path.with_name(path.name + DELETED_SUFFIX)
        try:
            os.replace(path, doomed)
        except FileNotFoundError:
            continue
        doomed.unlink(missing_ok=True)


def _write_all(fd: int, parts: Sequence[bytes | bytearray | memoryview], size: int) -> None:
    """os.writev until all ``size`` bytes are out (short writes only happen on errors such as
    a full disk, which then raise on the next call)."""
    written = os.writev(fd, parts)
    if written == size:
        return
    rest = memoryview(b"".join(parts))[written:]
    while rest:
        rest = rest[os.write(fd, rest) :]


class SegmentView(NamedTuple):
    """A segment as it was when another thread (the log cleaner) took it to read: the
    bytes below ``size`` are what it reads, and ``unchanged`` tells whether they still are."""

    segment: LogSegment
    base_offset: int
    size: int
    truncations: int
    index_bytes: int
    time_index_bytes: int
    # the first batch's max timestamp (max.compaction.lag.ms counts from it), None if empty
    first_batch_timestamp: int | None
    largest_timestamp: int

    @property
    def path(self) -> Path:
        return self.segment.log_path

    def unchanged(self) -> bool:
        """Neither closed (deleted), truncated nor appended to since the view was taken."""
        segment = self.segment
        return (
            not segment.closed
            and segment.size == self.size
            and segment.truncations == self.truncations
        )


class LogSegment:
    """Offsets in ``[base_offset, next_offset)``; ``size`` bytes of whole batches."""

    def __init__(
        self,
        directory: Path,
        base_offset: int,
        *,
        index_interval_bytes: int,
        max_index_size: int,
        roll_jitter_ms: int = 0,
        created_ms: int | None = None,
        create: bool = False,
        files: FilePool | None = None,
    ) -> None:
        self.dir = directory
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.roll_jitter_ms = roll_jitter_ms
        self.created_ms = int(time.time() * 1000) if created_ms is None else created_ms
        self.log_path = segment_path(directory, base_offset, LOG_SUFFIX)
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND
        if create:
            flags |= os.O_TRUNC
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                segment_path(directory, base_offset, suffix).unlink(missing_ok=True)
        pool = shared_pool() if files is None else files
        # Counts truncations: a StoredSpan cut before one no longer names its bytes.
        self.truncations = 0
        try:
            # A segment found on disk is opened when first read or written.
            self.size = 0 if create else os.stat(self.log_path).st_size
            self._file = pool.open(self.log_path, flags, lazy=not create)
        except FileNotFoundError:
            self._file = pool.open(self.log_path, flags)
            self.size = os.fstat(self._fd).st_size
        opened: list[OffsetIndex | TimeIndex | TransactionIndex] = []
        try:
            self.offset_index = OffsetIndex(
                segment_path(directory, base_offset, INDEX_SUFFIX),
                base_offset,
                max_index_size,
                pool,
            )
            opened.append(self.offset_index)
            self.time_index = TimeIndex(
                segment_path(directory, base_offset, TIME_INDEX_SUFFIX),
                base_offset,
                max_index_size,
                pool,
            )
            opened.append(self.time_index)
            # The aborted transactions whose markers are in this segment (no file until one).
            self.txn_index = TransactionIndex(
                segment_path(directory, base_offset, TXN_INDEX_SUFFIX), base_offset, pool
            )
        except BaseException:
            # Not a segment after all: its files go back to the pool (descriptor budget).
            self._file.close()
            for index in opened:
                index.close()
            raise
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        # The first batch's max timestamp: segment.ms counts from it (creation time if empty).
        self.rolling_timestamp: int | None = None
        self._bytes_since_index = 0
        # Both indexes are checked only when they grow: a full one makes the next append roll.
        self._check_indexes_full()

    @classmethod
    def with_config(
        cls,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        now_ms: int,
        *,
        create: bool,
        files: FilePool | None = None,
    ) -> LogSegment:
        """Open (or with ``create``, start afresh) the segment at ``base_offset``."""
        return cls(
            directory,
            base_offset,
            index_interval_bytes=config.index_interval_bytes,
            max_index_size=config.segment_index_bytes,
            roll_jitter_ms=config.random_segment_jitter(),
            created_ms=now_ms,
            create=create,
            files=files,
        )

    def view(self) -> SegmentView:
        """What another thread may read of this segment now (see ``SegmentView``)."""
        return SegmentView(
            self,
            self.base_offset,
            self.size,
            self.truncations,
            len(self.offset_index) * 8,
            len(self.time_index) * 12,
            self.rolling_timestamp,
            self.largest_timestamp,
        )

    @property
    def _fd(self) -> int:
        """The log file's descriptor, reopened if the pool closed it. Every use counts as a
        possible write for ``flush``: reads happen on segments that a flush skips (all
        below the recovery point) or syncs anyway (holding unflushed data)."""
        return self._file.write_fd()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def release_files(self) -> None:
        """Give the pool back this segment's descriptors; the next use reopens them."""
        self._file.release()
        self.offset_index.release()
        self.time_index.release()
        self.txn_index.release()

    # ------------------------------------------------------------------ loading
    def load(self) -> None:
        """Check the indexes and find the end of a segment written before a clean shutdown.

        Raises CorruptIndexError or CorruptSegmentError when the segment needs ``recover``.
        """
        if self.size and not (self.offset_index.existed and self.time_index.existed):
            raise CorruptIndexError(f"{self.log_path}: an index file is missing")
        self.offset_index.sanity_check(self.size)
        self._load_tail()
        self.time_index.sanity_check(self.next_offset)
        self.txn_index.sanity_check()

    def _load_tail(self) -> None:
        """Walk the batches after the last index entry: next offset, max timestamp."""
        index = self.offset_index
        start, last_indexed = 0, None
        if len(index):
            last_indexed, start = index.entry(len(index) - 1)
        self.max_timestamp, self.offset_of_max_timestamp = self.time_index.last_entry()
        self.next_offset = self.base_offset
        end = start
        for pos, header in self.iter_headers(start):
            if pos == start and last_indexed is not None and header.last_offset != last_indexed:
                raise CorruptIndexError(f"{index.path}: last entry does not match its batch")
            self._note_timestamp(header.max_timestamp, header.last_offset)
            self.next_offset = header.next_offset
            end = pos + header.size
        if end != self.size or (last_indexed is not None and end == start):
            raise CorruptSegmentError(f"{self.log_path}: batches end at {end} of {self.size}")
        self._bytes_since_index = self.size - start
        self._check_indexes_full()
        self.rolling_timestamp = None
        if self.size:
            self.rolling_timestamp = read_header(os.pread(self._fd, HEADER_SIZE, 0)).max_timestamp

    def _note_timestamp(self, max_timestamp: int, last_offset: int) -> None:
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset

    def recover(
        self,
        on_batch: Callable[[BatchHeader], None] | None = None,
        end_offset: int | None = None,
    ) -> int:
        """Validate every batch (framing, magic, CRC, offsets increasing from the base
        offset and, when ``end_offset`` is given (the next segment's base offset), ending by
        it), cut the file at the first invalid or torn one and rebuild both indexes.

        Offsets may skip: the log cleaner removes records and whole batches, as Kafka's. The
        base offset is outside the CRC, though, and a damaged one can look like such a skip:
        when offsets then go back, the batch that skipped is taken for the damaged one and
        the cut is made before it.

        Returns the number of bytes cut off.
        """
        kept: list[tuple[int, BatchHeader]] = []
        skipped: list[bool] = []  # whether each kept batch skipped offsets before it
        expected = self.base_offset
        for pos, header in self._valid_batches():
            relative = header.last_offset - self.base_offset
            backwards = header.base_offset < expected
            if (
                backwards
                or relative > MAX_RELATIVE_OFFSET
                or (end_offset is not None and header.next_offset > end_offset)
            ):
                if backwards and skipped and skipped[-1]:
                    kept.pop()
                break
            kept.append((pos, header))
            skipped.append(header.base_offset > expected)
            expected = header.next_offset
        index_entries: list[tuple[int, int]] = []
        time_entries: list[tuple[int, int]] = []
        self.max_timestamp, self.offset_of_max_timestamp = NO_TIMESTAMP, self.base_offset
        self.rolling_timestamp = None
        expected = self.base_offset
        since_index = 0
        valid_end = 0
        for pos, header in kept:
            if on_batch is not None:
                on_batch(header)
            if self.rolling_timestamp is None:
                self.rolling_timestamp = header.max_timestamp
            self._note_timestamp(header.max_timestamp, header.last_offset)
            if since_index > self.index_interval_bytes:
                index_entries.append((header.last_offset, pos))
                if not time_entries or self.max_timestamp > time_entries[-1][0]:
                    time_entries.append((self.max_timestamp, self.offset_of_max_timestamp))
                since_index = 0
            since_index += header.size
            expected = header.next_offset
            valid_end = pos + header.size
        if self.max_timestamp > NO_TIMESTAMP and (
            not time_entries or self.max_timestamp > time_entries[-1][0]
        ):
            # As a cleanly closed segment does, end the time index with the largest timestamp.
            time_entries.append((self.max_timestamp, self.offset_of_max_timestamp))
        self.offset_index.reset(index_entries)
        self.time_index.reset(time_entries)
        self._bytes_since_index = since_index
        self._check_indexes_full()
        self.next_offset = expected
        removed = self.size - valid_end
        if removed:
            os.ftruncate(self._fd, valid_end)
            self.size = valid_end
        # The log rebuilds what it lost from its producer state (PartitionLog.open replays
        # from at most this segment's base); markers past the cut are gone.
        self.txn_index.truncate_to(expected)
        return removed

    def _valid_batches(self) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch passing ``check_batch``, read in large chunks;
        stops before the first torn or invalid one."""
        file_size = self.size
        pos = 0
        need = _RECOVERY_CHUNK
        while file_size - pos >= HEADER_SIZE:
            buf = os.pread(self._fd, min(need, file_size - pos), pos)
            off = 0
            while len(buf) - off >= HEADER_SIZE:
                size = _INT32.unpack_from(buf, off + 8)[0] + LOG_OVERHEAD
                if size < HEADER_SIZE or off + size > len(buf):
                    break
                try:
                    header = check_batch(buf, off, off + size)
                except CorruptBatch:
                    return
                yield pos + off, header
                off += size
            if off == 0:
                size = _INT32.unpack_from(buf, 8)[0] + LOG_OVERHEAD
                if size < HEADER_SIZE or pos + size > file_size or need >= size:
                    return
                need = size
                continue
            pos += off
            need = _RECOVERY_CHUNK

    # ------------------------------------------------------------------ appends
    def should_roll(
        self, size: int, max_timestamp: int, last_offset: int, now_ms: int, config: LogConfig
    ) -> bool:
        """Kafka's roll rule for a coming append; an empty segment is rolled only when the
        append's last offset is past its relative offsets (a follower's, after a gap)."""
        if self.size == 0:
            return last_offset - self.base_offset > MAX_RELATIVE_OFFSET
        if self.size > config.segment_bytes - size or self.indexes_full:
            return True
        rolling = self.rolling_timestamp
        if rolling is not None and rolling >= 0:
            waited = max_timestamp - rolling
        else:
            waited = now_ms - self.created_ms
        return (
            waited > config.roll_ms - self.roll_jitter_ms
            or last_offset - self.base_offset > MAX_RELATIVE_OFFSET
        )

    def reconfigure(self, config: LogConfig) -> None:
        """Apply a changed index.interval.bytes and segment.index.bytes."""
        self.index_interval_bytes = config.index_interval_bytes
        self.offset_index.resize(config.segment_index_bytes)
        self.time_index.resize(config.segment_index_bytes)
        self._check_indexes_full()

    def _check_indexes_full(self) -> None:
        self.indexes_full = self.offset_index.is_full or self.time_index.is_full

    def append(
        self,
        parts: Sequence[bytes | bytearray | memoryview],
        size: int,
        last_offset: int,
        max_timestamp: int,
    ) -> None:
        """Write one batch given as consecutive byte chunks; on an I/O error the segment and
        its indexes are rolled back to where they were (see ``_roll_back``) and it re-raises."""
        before = self._append_state()
        fd = self._fd  # first: failing to get a descriptor has written nothing to undo
        try:
            _write_all(fd, parts, size)
            self._account(self.size, size, last_offset, max_timestamp)
        except (OSError, KafkaError) as exc:
            self._undo_append(before, exc)
            raise

    def append_batches(self, data: memoryview, headers: Sequence[tuple[int, BatchHeader]]) -> None:
        """Write consecutive whole batches; ``headers`` gives each one's position in ``data``.
        Rolled back as ``append`` is on an I/O error."""
        before = self._append_state()
        position = self.size
        fd = self._fd
        try:
            _write_all(fd, [data], len(data))
            for pos, header in headers:
                self._account(position + pos, header.size, header.last_offset, header.max_timestamp)
        except (OSError, KafkaError) as exc:
            self._undo_append(before, exc)
            raise

    def _append_state(self) -> _AppendState:
        return _AppendState(
            self.size,
            self.next_offset,
            self.max_timestamp,
            self.offset_of_max_timestamp,
            self.rolling_timestamp,
            self._bytes_since_index,
            len(self.offset_index),
            len(self.time_index),
        )

    def _undo_append(self, state: _AppendState, error: BaseException) -> None:
        """Roll a failed append back. If the files could not be cut back and ``error`` alone
        would leave the directory online (the process was out of descriptors, and still is
        for the cut), raise TornAppendError instead: the directory must go offline, since
        later appends would land after the torn bytes."""
        if not self._roll_back(state) and out_of_descriptors(error):
            raise TornAppendError(
                f"{self.log_path}: a failed append ({error}) could not be cut back"
            ) from error

    def _roll_back(self, state: _AppendState) -> bool:
        """Undo a failed append: a write cut short (a full disk) leaves part of a batch at the
        end of the file, and the file is opened with O_APPEND, so unless the file is cut back
        every later write would land after those torn bytes, where reads and recovery never
        reach. The files are cut through pooled descriptors, reopened if the pool closed them.
        Best effort: returns False if a cut failed too; the log directory then goes offline
        (see ``_undo_append``) and recovery at the next start cuts the torn tail. Not a
        truncation for ``StoredSpan``s: it cuts only bytes past the size before the append,
        which no span covers."""
        self.size, self.next_offset = state.size, state.next_offset
        self.max_timestamp = state.max_timestamp
        self.offset_of_max_timestamp = state.offset_of_max_timestamp
        self.rolling_timestamp = state.rolling_timestamp
        self._bytes_since_index = state.bytes_since_index
        whole = True
        for cut in (
            lambda: os.ftruncate(self._fd, state.size),
            lambda: self.offset_index.roll_back(state.index_entries),
            lambda: self.time_index.roll_back(state.time_index_entries),
        ):
            try:
                cut()
            except (OSError, KafkaError):  # KafkaError: the pool refuses an offline directory
                whole = False
        self._check_indexes_full()
        return whole

    def _account(self, position: int, size: int, last_offset: int, max_timestamp: int) -> None:
        if self.rolling_timestamp is None:
            self.rolling_timestamp = max_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if self._bytes_since_index > self.index_interval_bytes and not self.indexes_full:
            self.offset_index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = 0
            self._check_indexes_full()
        self._bytes_since_index += size
        self.size = position + size
        self.next_offset = last_offset + 1

    def on_become_inactive(self) -> None:
        """At roll: the time index ends with the segment's largest timestamp."""
        self.time_index.maybe_append(
            self.max_timestamp, self.offset_of_max_timestamp, skip_full_check=True
        )

    # ------------------------------------------------------------------ reads
    def _header_views(
        self, start: int, stop: int, need: int, buf: bytes | memoryview = b""
    ) -> Iterator[tuple[bytes | memoryview, int, int, int]]:
        """(buffer, offset in it, file position, batch size) of each batch whose first
        ``need`` header bytes lie before ``stop``, reading ahead in chunks (``buf`` may hold
        the bytes at ``start`` already)."""
        buf_start = pos = start
        while stop - pos >= need:
            off = pos - buf_start
            if len(buf) - off < need:
                buf_start, off = pos, 0
                buf = os.pread(self._fd, min(max(_HEADER_SCAN_CHUNK, need), stop - pos), pos)
                if len(buf) < need:
                    return
            size = _INT32.unpack_from(buf, off + 8)[0] + LOG_OVERHEAD
            if size < HEADER_SIZE:
                return
            yield buf, off, pos, size
            pos += size

    def iter_headers(self, start: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each whole batch from ``start``; stops at a torn or garbled
        one. No CRC check: for walking a log already validated."""
        end = self.size
        for buf, off, pos, size in self._header_views(start, end, HEADER_SIZE):
            header = read_header(buf, off)
            if header.magic != MAGIC or pos + size > end:
                return
            yield pos, header

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= ``offset`` (None when the segment ends
        before it), searched from the index entry below ``offset``."""
        _, pos = self.offset_index.lookup(offset)
        for found in self.iter_headers(pos):
            if found[1].last_offset >= offset:
                return found
        return None

    def find_position(self, offset: int) -> int | None:
        """``find_batch`` without parsing whole headers: the position alone."""
        _, start = self.offset_index.lookup(offset)
        for buf, off, pos, _ in self._header_views(start, self.size, _WALK_HEADER_BYTES):
            base = _INT64.unpack_from(buf, off)[0]
            if base + _INT32.unpack_from(buf, off + _LAST_OFFSET_DELTA_AT)[0] >= offset:
                return pos
        return None

    def read(
        self,
        position: int,
        max_bytes: int,
        max_offset: int | None,
        min_one_batch: bool,
        spans: bool = False,
    ) -> tuple[bytes | StoredSpan, int]:
        """Whole batches from ``position`` (a batch boundary), at most ``max_bytes`` unless
        the first batch alone is larger and ``min_one_batch``, none ending after
        ``max_offset``. Returns the bytes and the offset after them. With ``spans``, more
        than 32 KiB come back as a ``StoredSpan`` to be read while being sent."""
        available = self.size - position
        if available <= 0:
            return b"", -1
        if max_offset is not None and max_offset >= self.next_offset:
            max_offset = None
        if max_bytes >= available and max_offset is None:
            return self._bytes(position, available, spans), self.next_offset
        limit = max(0, min(max_bytes, available))
        # The last index entry within the limits is a batch boundary with only whole batches
        # before it: walking headers from there finds the end of the data to return.
        jump = max(position, self.offset_index.last_position_within(position + limit, max_offset))
        if limit <= _DIRECT_READ_BYTES:
            # Small reads: read the span once and cut it after the last whole batch.
            data = os.pread(self._fd, limit, position) if limit else b""
            ahead = memoryview(data)[jump - position :]
            end, next_offset = self._walk(jump, position + limit, max_offset, ahead)
            data = data if end - position == len(data) else data[: end - position]
        else:
            # Large reads: one pread of exactly the whole batches.
            end, next_offset = self._walk(jump, position + limit, max_offset)
            data = self._bytes(position, end - position, spans) if end > position else b""
        if data:
            return data, next_offset
        return self._read_one(position, max_offset, spans) if min_one_batch else (b"", -1)

    def _bytes(self, position: int, size: int, span: bool) -> bytes | StoredSpan:
        if span and size > _DIRECT_READ_BYTES:
            return StoredSpan(self, position, size)
        return os.pread(self._fd, size, position)

    def read_span(self, position: int, size: int, truncations: int) -> bytes:
        """``size`` bytes at ``position`` for a ``StoredSpan`` cut after ``truncations``
        truncations; raises SpanGone if the segment has been closed or truncated since.

        The pool may have closed the descriptor since the previous chunk: it is reopened
        (never created), and only read, so the file is not made dirty for the next flush.
        In an offline directory this raises KAFKA_STORAGE_ERROR before anything else, even
        with the descriptor still open: nothing is read from a failed directory."""
        self._file.check_online()
        if self.closed or truncations != self.truncations or position + size > self.size:
            raise SpanGone(f"{self.log_path.name} was closed or truncated")
        data = os.pread(self._file.fd(), size, position)
        if len(data) != size:
            raise SpanGone(f"{self.log_path.name} ends before {position + size}")
        return data

    def _walk(
        self, start: int, stop: int, max_offset: int | None, buf: bytes | memoryview = b""
    ) -> tuple[int, int]:
        """From ``start`` (with ``buf`` holding the bytes there, if read already), the end of
        the whole batches that finish by ``stop`` and at or below ``max_offset``, and the
        offset that follows them."""
        end = start
        next_offset = -1
        for view, off, pos, size in self._header_views(start, stop, _WALK_HEADER_BYTES, buf):
            base = _INT64.unpack_from(view, off)[0]
            if next_offset < 0:
                next_offset = base
            batch_next = base + _INT32.unpack_from(view, off + _LAST_OFFSET_DELTA_AT)[0] + 1
            if pos + size > stop or (max_offset is not None and batch_next > max_offset):
                break
            end, next_offset = pos + size, batch_next
        if next_offset < 0 and start < self.size:
            # No header before ``stop``: the batch at ``start`` follows the data.
            next_offset = _INT64.unpack(os.pread(self._fd, 8, start))[0]
        return end, next_offset

    def _read_one(
        self, position: int, max_offset: int | None, spans: bool = False
    ) -> tuple[bytes | StoredSpan, int]:
        header = read_header(os.pread(self._fd, HEADER_SIZE, position))
        if max_offset is not None and header.next_offset > max_offset:
            return b"", -1
        return self._bytes(position, header.size, spans), header.next_offset

    def read_batch(self, position: int, header: BatchHeader) -> bytes:
        return os.pread(self._fd, header.size, position)

    def find_offset_by_timestamp(
        self, timestamp: int, start_offset: int
    ) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the first record at or after ``timestamp``
        with an offset >= ``start_offset``."""
        _, indexed_offset = self.time_index.lookup(timestamp)
        _, pos = self.offset_index.lookup(max(indexed_offset, start_offset))
        for batch_pos, header in self.iter_headers(pos):
            if header.max_timestamp < timestamp or header.last_offset < start_offset:
                continue
            for record in self._records(batch_pos, header):
                if record.timestamp >= timestamp and record.offset >= start_offset:
                    return record.offset, record.timestamp, header.partition_leader_epoch
        return None

    def max_timestamp_record(self) -> tuple[int, int, int] | None:
        """(offset, timestamp, leader epoch) of the first record holding the segment's largest
        timestamp."""
        if self.max_timestamp <= NO_TIMESTAMP:
            return None
        found = self.find_batch(self.offset_of_max_timestamp)
        if found is None:
            return None
        pos, header = found
        for record in self._records(pos, header):
            if record.timestamp == header.max_timestamp:
                return record.offset, record.timestamp, header.partition_leader_epoch
        return header.last_offset, header.max_timestamp, header.partition_leader_epoch

    def _records(self, position: int, header: BatchHeader) -> list[Record]:
        try:
            return batch_records(self.read_batch(position, header), 0, header)
        except CorruptBatch:
            return []

    @property
    def largest_timestamp(self) -> int:
        """The largest record timestamp, or the file's modification time without one."""
        if self.max_timestamp > NO_TIMESTAMP:
            return self.max_timestamp
        if self.closed:
            return NO_TIMESTAMP
        try:
            # By path: reopening a pooled descriptor for its modification time is not needed.
            return int(os.stat(self.log_path).st_mtime * 1000)
        except FileNotFoundError:
            return NO_TIMESTAMP

    # ------------------------------------------------------------------ truncation, files
    def truncate_to(self, offset: int, now_ms: int) -> int:
        """Remove the batches holding ``offset`` and after; returns the bytes removed."""
        found = self.find_batch(offset)
        if found is None:
            return 0
        position, header = found
        removed = self.size - position
        self.truncations += 1
        os.ftruncate(self._fd, position)
        self.size = position
        self.offset_index.truncate_to_position(position)
        self.time_index.truncate_to(header.base_offset)
        self.txn_index.truncate_to(header.base_offset)
        self._load_tail()
        if self.size == 0:
            self.created_ms = now_ms
        return removed

    def flush(self) -> None:
        """fsync the log and both indexes, those the pool closed since they were written
        included (tolerating a concurrent close by retention)."""
        try:
            self._file.sync()
            self.offset_index.flush()
            self.time_index.flush()
            self.txn_index.flush()
        except OSError:
            if not self.closed:
                raise

    def close(self) -> None:
        self._file.close()
        self.offset_index.close()
        self.time_index.close()
        self.txn_index.close()

    def delete(self) -> None:
        self.close()
        delete_segment_files(self.dir, self.base_offset)

    def __repr__(self) -> str:
        return f"LogSegment(base={self.base_offset}, next={self.next_offset}, size={self.size})"
