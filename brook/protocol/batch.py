"""RecordBatch v2 (magic 2) headers: read, validate, and patch in place.

The broker never decodes single records on the produce and fetch paths: it reads the 61-byte
header, checks the CRC-32C (which covers ``attributes`` to the end, so assigning offsets and
stamping the leader epoch need no new CRC), and rewrites ``baseOffset`` and
``partitionLeaderEpoch``.

    offset  size  field
    0       8     baseOffset
    8       4     batchLength (bytes after this field)
    12      4     partitionLeaderEpoch
    16      1     magic (2)
    17      4     crc (CRC-32C of bytes 21..end)
    21      2     attributes: bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control,
                  6 delete horizon (KIP-534: baseTimestamp is when the log cleaner may drop
                  the batch's tombstones)
    23      4     lastOffsetDelta
    27      8     baseTimestamp
    35      8     maxTimestamp
    43      8     producerId
    51      2     producerEpoch
    53      4     baseSequence
    57      4     recordsCount
    61            records
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import NamedTuple

from crc32c import crc32c

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: bytes not counted by batchLength
MIN_BATCH_LENGTH = HEADER_SIZE - LOG_OVERHEAD
MAGIC = 2

_HEADER = struct.Struct(">qiibIhiqqqhii")
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")

CODEC_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1


class CorruptBatch(ValueError):
    """A batch whose framing, magic or CRC is wrong."""


class BatchHeader(NamedTuple):
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the whole batch takes, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def delete_horizon_ms(self) -> int | None:
        """KIP-534: when the log cleaner may drop this batch's tombstones (its base
        timestamp), if a cleaning has set it."""
        return self.base_timestamp if self.attributes & DELETE_HORIZON_BIT else None

    @property
    def last_sequence(self) -> int:
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    """Parse the header at ``pos``; raises CorruptBatch if fewer than 61 bytes remain."""
    if len(buf) - pos < HEADER_SIZE:
        raise CorruptBatch("fewer bytes than a batch header")
    return BatchHeader._make(_HEADER.unpack_from(buf, pos))


def batch_size_at(buf: bytes | bytearray | memoryview, pos: int) -> int:
    """Size of the batch at ``pos`` from its length field alone (-1 if not even 12 bytes)."""
    if len(buf) - pos < LOG_OVERHEAD:
        return -1
    return _INT32.unpack_from(buf, pos + 8)[0] + LOG_OVERHEAD


def check_batch(buf: bytes | bytearray | memoryview, pos: int, end: int) -> BatchHeader:
    """Validate the batch at ``pos`` (must end by ``end``): length, magic, CRC, counts."""
    if end - pos < HEADER_SIZE:
        raise CorruptBatch("truncated batch header")
    length = _INT32.unpack_from(buf, pos + 8)[0]
    if length < MIN_BATCH_LENGTH:
        raise CorruptBatch(f"batch length {length} below the minimum {MIN_BATCH_LENGTH}")
    if pos + LOG_OVERHEAD + length > end:
        raise CorruptBatch("batch runs past the end of the data")
    header = read_header(buf, pos)
    if header.magic != MAGIC:
        raise CorruptBatch(f"unsupported magic {header.magic}")
    stored = header.crc
    actual = crc32c(memoryview(buf)[pos + 21 : pos + LOG_OVERHEAD + length])
    if stored != actual:
        raise CorruptBatch(f"CRC mismatch (stored {stored:#x}, computed {actual:#x})")
    if header.last_offset_delta < 0 or header.records_count < 0:
        raise CorruptBatch("negative record count")
    return header


def iter_batches(
    buf: bytes | bytearray | memoryview, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each valid batch; CorruptBatch at the first bad one."""
    end = len(buf) if end is None else end
    pos = start
    while pos < end:
        header = check_batch(buf, pos, end)
        yield pos, header
        pos += header.size


def iter_whole_batches(
    buf: bytes | bytearray | memoryview, on_corrupt: Callable[[CorruptBatch], None]
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) of each whole batch in ``buf``: a partial trailing batch ends
    the walk, a corrupt one is reported to ``on_corrupt`` and skipped (a coordinator loading
    its topic keeps everything it can read)."""
    pos = 0
    end = len(buf)
    while end - pos >= LOG_OVERHEAD:
        size = _INT32.unpack_from(buf, pos + 8)[0] + LOG_OVERHEAD
        if pos + size > end:
            return
        try:
            header = check_batch(buf, pos, end)
        except CorruptBatch as exc:
            on_corrupt(exc)
        else:
            yield pos, header
        pos += size


def patch_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    _INT64.pack_into(buf, pos, base_offset)


def patch_leader_epoch(buf: bytearray | memoryview, pos: int, epoch: int) -> None:
    _INT32.pack_into(buf, pos + 12, epoch)


def set_max_timestamp(head: bytearray, body: bytes | memoryview, max_timestamp: int) -> None:
    """Set maxTimestamp in a batch's 61-byte ``head`` (its records follow in ``body``) and
    redo the CRC."""
    _INT64.pack_into(head, 35, max_timestamp)
    _UINT32.pack_into(head, 17, crc32c(body, crc32c(memoryview(head)[21:HEADER_SIZE])))


def set_log_append_time(buf: bytearray | memoryview, pos: int, now_ms: int) -> None:
    """Stamp LogAppendTime: set the timestamp-type bit and maxTimestamp, then redo the CRC."""
    size = _INT32.unpack_from(buf, pos + 8)[0] + LOG_OVERHEAD
    attributes = _INT16.unpack_from(buf, pos + 21)[0] | TIMESTAMP_TYPE_BIT
    _INT16.pack_into(buf, pos + 21, attributes)
    _INT64.pack_into(buf, pos + 35, now_ms)
    _UINT32.pack_into(buf, pos + 17, crc32c(memoryview(buf)[pos + 21 : pos + size]))
