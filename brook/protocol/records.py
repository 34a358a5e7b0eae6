"""Records inside a v2 batch: build batches (client side) and decode them (consumers, tools,
timestamp lookups). The broker's produce and fetch paths never come here, except to check
that a batch for a compacted topic carries keys.

    record := length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
              keyLength varint, key, valueLength varint, value,
              headerCount varint, (keyLength varint, key utf8, valueLength varint, value)*
A length of -1 means null.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from crc32c import crc32c
from kio.schema.leader_change_message.v0.data import LeaderChangeMessage, Voter

from .batch import (
    CODEC_MASK,
    CONTROL_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    CorruptBatch,
    check_batch,
    read_header,
)
from .compression import CompressionError, compress, decompress
from .framing import encode_kio
from .primitives import INT64_MAX, INT64_MIN, read_uvarint, uvarint, varint

Headers = Sequence[tuple[str, bytes | None]]

_HEADER_AFTER_CRC = struct.Struct(">hiqqqhii")
_PREFIX = struct.Struct(">qiib")
_UINT32 = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Headers = (),
) -> bytes:
    parts = [b"\x00", varint(timestamp_delta), varint(offset_delta)]
    if key is None:
        parts.append(b"\x01")  # varint(-1)
    else:
        parts.append(varint(len(key)))
        parts.append(key)
    if value is None:
        parts.append(b"\x01")
    else:
        parts.append(varint(len(value)))
        parts.append(value)
    parts.append(varint(len(headers)))
    for hkey, hvalue in headers:
        hk = hkey.encode()
        parts.append(varint(len(hk)))
        parts.append(hk)
        if hvalue is None:
            parts.append(b"\x01")
        else:
            parts.append(varint(len(hvalue)))
            parts.append(hvalue)
    body = b"".join(parts)
    return varint(len(body)) + body


def record_size_upper_bound(key: bytes | None, value: bytes | None, headers: Headers = ()) -> int:
    """A cheap upper bound of an encoded record's size (as Java's estimate, generous varints)."""
    size = 21 + 5 + (len(key) if key else 0) + 5 + (len(value) if value else 0) + 5
    for hkey, hvalue in headers:
        size += 10 + len(hkey.encode()) + (len(hvalue) if hvalue else 0)
    return size


def build_batch(
    records: Sequence[bytes],
    *,
    base_timestamp: int,
    max_timestamp: int,
    codec: int = 0,
    base_offset: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = -1,
    transactional: bool = False,
    log_append_time: bool = False,
) -> bytes:
    """A whole batch from already-encoded records (see ``encode_record``)."""
    if not records:
        raise ValueError("a batch needs at least one record")
    payload = b"".join(records)
    if codec:
        payload = compress(codec, payload)
    attributes = codec & CODEC_MASK
    if transactional:
        attributes |= TRANSACTIONAL_BIT
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_BIT
    header = batch_header(
        payload,
        attributes=attributes,
        count=len(records),
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        base_offset=base_offset,
        partition_leader_epoch=partition_leader_epoch,
    )
    return header + payload


def batch_header(
    payload: bytes | bytearray,
    *,
    attributes: int,
    count: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = -1,
    base_sequence: int = NO_SEQUENCE,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
    last_offset_delta: int | None = None,
) -> bytes:
    """The 61-byte v2 header of a batch whose (compressed) records are ``payload``; the
    records are only read for the CRC, never copied. ``last_offset_delta`` defaults to
    ``count - 1`` (records at consecutive offsets); a compacted batch keeps its original one
    with fewer records."""
    after_crc = _HEADER_AFTER_CRC.pack(
        attributes,
        count - 1 if last_offset_delta is None else last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        count,
    )
    crc = crc32c(payload, crc32c(after_crc))
    batch_length = len(after_crc) + len(payload) + 4 + 1 + 4  # leader epoch + magic + crc
    return (
        _PREFIX.pack(base_offset, batch_length, partition_leader_epoch, MAGIC)
        + _UINT32.pack(crc)
        + after_crc
    )


LEADER_CHANGE = 2  # Kafka's ControlRecordType.LEADER_CHANGE


def leader_change_batch(
    leader_id: int,
    *,
    base_offset: int,
    leader_epoch: int,
    timestamp: int,
    voters: Sequence[int] = (),
    granting_voters: Sequence[int] = (),
) -> bytes:
    """A control batch of one LEADER_CHANGE record (key: version 0, type 2; value: KRaft's
    LeaderChangeMessage v0), with its offset and leader epoch set. The metadata quorum's
    leader writes it with its voters; a quorum-acks partition's leader too (no voters).
    Consumers skip control batches, as they skip transaction markers."""
    key = struct.pack(">hh", 0, LEADER_CHANGE)
    value = encode_kio(
        LeaderChangeMessage(
            version=0,
            leader_id=leader_id,
            voters=tuple(Voter(voter_id=v) for v in voters),
            granting_voters=tuple(Voter(voter_id=v) for v in granting_voters),
        )
    )
    payload = encode_record(0, 0, key, value, ())
    header = batch_header(
        payload,
        attributes=CONTROL_BIT,
        count=1,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        base_offset=base_offset,
        partition_leader_epoch=leader_epoch,
    )
    return header + payload


def build_simple_batch(
    values: Sequence[tuple[bytes | None, bytes | None]] | Sequence[bytes | None],
    *,
    timestamp: int = 0,
    codec: int = 0,
    headers: Headers = (),
    **kwargs: int,
) -> bytes:
    """Convenience for tests and tools: records from values or (key, value) pairs."""
    encoded = []
    for i, item in enumerate(values):
        key, value = item if isinstance(item, tuple) else (None, item)
        encoded.append(encode_record(i, 0, key, value, headers))
    return build_batch(
        encoded, base_timestamp=timestamp, max_timestamp=timestamp, codec=codec, **kwargs
    )


def batch_records(
    buf: bytes | bytearray | memoryview, pos: int = 0, header: BatchHeader | None = None
) -> list[Record]:
    """Decode (and decompress) every record of the batch at ``pos``.

    With LogAppendTime every record carries the batch's maxTimestamp, as in Kafka.
    """
    header = header or read_header(buf, pos)
    raw = bytes(memoryview(buf)[pos + HEADER_SIZE : pos + LOG_OVERHEAD + header.batch_length])
    try:
        data = decompress(header.codec, raw) if header.codec else raw
    except CompressionError as exc:
        raise CorruptBatch(str(exc)) from None
    decoded: list[tuple[Any, ...]] = []
    try:
        decode_records_into(
            decoded, tuple, data, header.records_count, base_offset=header.base_offset,
            base_timestamp=header.base_timestamp, topic="", partition=0, timestamp_type=0,
            leader_epoch=-1,
            log_append_time=header.max_timestamp if header.log_append_time else None,
        )  # fmt: skip
    except CorruptBatch as exc:
        raise CorruptBatch(f"malformed record: {exc}") from None
    # The decoder's tuple: (topic, partition, offset, timestamp, timestamp type, key, value,
    # headers, leader epoch, key size, value size).
    return [Record(r[2], r[3], r[5], r[6], r[7]) for r in decoded]


# -- the consumer's fast path ----------------------------------------------------------------
#
# Every fetched record goes through ``decode_records_into``: one loop, no generator, no call per
# field. Varints of one byte (and lengths of two) are decoded inline; longer ones take
# ``_varint``. Records below ``min_offset`` are stepped over by their length alone.

_new_tuple = tuple.__new__


def _varint(data: bytes, pos: int, limit: int = 63) -> tuple[int, int]:
    """A zigzag varint: a varlong (up to 10 bytes) by default; ``limit=28`` reads a 32-bit
    varint (up to 5 bytes), as Kafka reads every field but the timestamp delta."""
    result = 0
    shift = 0
    while True:
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > limit:
            raise CorruptBatch("varint too long")


def _headers(data: bytes, pos: int) -> tuple[tuple[tuple[str, bytes | None], ...], int]:
    count, pos = _varint(data, pos, 28)
    if count < 0:
        raise CorruptBatch("negative header count")
    out = []
    for _ in range(count):
        klen, pos = _varint(data, pos, 28)
        if klen < 0:
            raise CorruptBatch("null header key")
        hkey = data[pos : pos + klen].decode("utf-8", "replace")
        pos += klen
        vlen, pos = _varint(data, pos, 28)
        if vlen < -1:
            raise CorruptBatch("record length does not match its fields")
        if vlen == -1:
            out.append((hkey, None))
        else:
            out.append((hkey, data[pos : pos + vlen]))
            pos += vlen
    return tuple(out), pos


def _decode_records_into_py(
    out: list[Any],
    record_type: type,
    data: bytes,
    count: int,
    *,
    base_offset: int,
    base_timestamp: int,
    topic: str,
    partition: int,
    timestamp_type: int,
    leader_epoch: int,
    min_offset: int = 0,
    log_append_time: int | None = None,
    start: int = 0,
    end: int | None = None,
) -> None:
    """The pure-Python decoder behind :func:`decode_records_into`, with its contract."""
    append = out.append
    if end is None:
        end = len(data)
    pos = start
    try:
        for _ in range(count):
            b = data[pos]
            if b < 0x80:
                length = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    raw = (b & 0x7F) | (c << 7)
                    length = (raw >> 1) ^ -(raw & 1)
                    pos += 2
                else:
                    length, pos = _varint(data, pos, 28)
            record_end = pos + length
            if length < 6 or record_end > end:
                raise CorruptBatch("record runs past its batch")
            pos += 1  # attributes (unused in v2)
            b = data[pos]
            if b < 0x80:
                ts_delta = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    raw = (b & 0x7F) | (c << 7)
                    ts_delta = (raw >> 1) ^ -(raw & 1)
                    pos += 2
                else:
                    ts_delta, pos = _varint(data, pos)
            b = data[pos]
            if b < 0x80:
                offset = base_offset + ((b >> 1) ^ -(b & 1))
                pos += 1
            else:
                c = data[pos + 1]
                if c < 0x80:
                    raw = (b & 0x7F) | (c << 7)
                    offset = base_offset + ((raw >> 1) ^ -(raw & 1))
                    pos += 2
                else:
                    delta, pos = _varint(data, pos, 28)
                    offset = base_offset + delta
            if not INT64_MIN <= offset <= INT64_MAX:
                raise CorruptBatch("offset out of range")
            if offset < min_offset:
                pos = record_end
                continue
            b = data[pos]
            if b == 1:
                key = None
                key_size = -1
                pos += 1
            else:
                if b < 0x80:
                    key_size = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    key_size, pos = _varint(data, pos, 28)
                if key_size < 0:
                    raise CorruptBatch("record length does not match its fields")
                key = data[pos : pos + key_size]
                pos += key_size
            b = data[pos]
            if b == 1:
                value = None
                value_size = -1
                pos += 1
            else:
                if b < 0x80:
                    value_size = (b >> 1) ^ -(b & 1)
                    pos += 1
                else:
                    c = data[pos + 1]
                    if c < 0x80:
                        raw = (b & 0x7F) | (c << 7)
                        value_size = (raw >> 1) ^ -(raw & 1)
                        pos += 2
                    else:
                        value_size, pos = _varint(data, pos, 28)
                if value_size < 0:
                    raise CorruptBatch("record length does not match its fields")
                value = data[pos : pos + value_size]
                pos += value_size
            if data[pos] == 0:
                headers: tuple[tuple[str, bytes | None], ...] = ()
                pos += 1
            else:
                headers, pos = _headers(data, pos)
            if pos != record_end:
                raise CorruptBatch("record length does not match its fields")
            timestamp = base_timestamp + ts_delta
            if not INT64_MIN <= timestamp <= INT64_MAX:
                raise CorruptBatch("timestamp out of range")
            append(
                _new_tuple(
                    record_type,
                    (
                        topic,
                        partition,
                        offset,
                        timestamp if log_append_time is None else log_append_time,
                        timestamp_type,
                        key,
                        value,
                        headers,
                        leader_epoch,
                        key_size,
                        value_size,
                    ),
                )
            )
    except IndexError:
        raise CorruptBatch("record runs past its batch") from None


try:
    if os.environ.get("BROOK_NO_SPEEDUPS"):
        raise ImportError("speedups turned off by BROOK_NO_SPEEDUPS")
    from . import _crecords
except ImportError:
    _crecords = None  # type: ignore[assignment]


def decode_records_into(
    out: list[Any],
    record_type: type,
    data: bytes,
    count: int,
    *,
    base_offset: int,
    base_timestamp: int,
    topic: str,
    partition: int,
    timestamp_type: int,
    leader_epoch: int,
    min_offset: int = 0,
    log_append_time: int | None = None,
    start: int = 0,
    end: int | None = None,
) -> None:
    """Append the records of one batch's (decompressed) record data to ``out``.

    The records are ``data[start:end]`` (all of ``data`` by default): an uncompressed batch
    is decoded where it lies in the fetched bytes, without copying it out first.

    Each record is ``record_type`` (a tuple subclass) made from the tuple ``(topic, partition,
    offset, timestamp, timestamp_type, key, value, headers, leader_epoch, key_size,
    value_size)``; a null key or value has size -1. Records with an offset below
    ``min_offset`` are skipped. ``log_append_time`` replaces every record's timestamp (the
    batch's maxTimestamp under LogAppendTime). Raises CorruptBatch for malformed data.

    The work is done by the C decoder (``_crecords``) when it was built, else by
    :func:`_decode_records_into_py`; the two give the same records and the same errors.
    """
    if _crecords is None:
        _decode_records_into_py(
            out,
            record_type,
            data,
            count,
            base_offset=base_offset,
            base_timestamp=base_timestamp,
            topic=topic,
            partition=partition,
            timestamp_type=timestamp_type,
            leader_epoch=leader_epoch,
            min_offset=min_offset,
            log_append_time=log_append_time,
            start=start,
            end=end,
        )
    else:
        _crecords.decode_into(
            out,
            record_type,
            data,
            count,
            base_offset,
            base_timestamp,
            topic,
            partition,
            timestamp_type,
            leader_epoch,
            min_offset,
            log_append_time,
            start,
            end,
        )


# What is wrong with a record, in validate_records' problems.
RECORD_NULL_KEY = 1
RECORD_BAD_TIMESTAMP = 2

# One invalid record: (index in the batch, RECORD_NULL_KEY or RECORD_BAD_TIMESTAMP, offset
# delta, timestamp, key size, value size); sizes are -1 for null.
RecordProblem = tuple[int, int, int, int, int, int]


def _skip_bytes(data: Any, pos: int, end: int) -> tuple[int, int]:
    size, pos = _varint(data, pos, 28)
    if size < -1 or size > end - pos:
        raise CorruptBatch("record length does not match its fields")
    return size, pos + max(size, 0)


def _validate_records_py(
    data: Any,
    count: int,
    base_timestamp: int,
    low: int,
    high: int,
    key_required: bool,
    reject_timestamps: bool,
) -> tuple[int, list[RecordProblem] | None]:
    """The reference for :func:`validate_records`."""
    problems: list[RecordProblem] | None = None
    max_timestamp = -1
    pos = 0
    end = len(data)
    try:
        for index in range(count):
            length, pos = _varint(data, pos, 28)
            record_end = pos + length
            if length < 6 or record_end > end:
                raise CorruptBatch("record runs past its batch")
            pos += 1  # attributes
            ts_delta, pos = _varint(data, pos)
            offset_delta, pos = _varint(data, pos, 28)
            key_size, pos = _skip_bytes(data, pos, record_end)
            value_size, pos = _skip_bytes(data, pos, record_end)
            headers, pos = _varint(data, pos, 28)
            if headers < 0:
                raise CorruptBatch("negative header count")
            for _ in range(headers):
                hkey, pos = _skip_bytes(data, pos, record_end)
                if hkey < 0:
                    raise CorruptBatch("null header key")
                _, pos = _skip_bytes(data, pos, record_end)
            if pos != record_end:
                raise CorruptBatch("record length does not match its fields")
            timestamp = base_timestamp + ts_delta
            if not INT64_MIN <= timestamp <= INT64_MAX:
                raise CorruptBatch("timestamp out of range")
            problem = 0
            if key_required and key_size < 0:
                problem = RECORD_NULL_KEY
            elif reject_timestamps or (timestamp != -1 and not low <= timestamp <= high):
                problem = RECORD_BAD_TIMESTAMP
            if problem:
                if problems is None:
                    problems = []
                problems.append((index, problem, offset_delta, timestamp, key_size, value_size))
            if timestamp > max_timestamp:
                max_timestamp = timestamp
    except IndexError:
        raise CorruptBatch("record runs past its batch") from None
    if pos != end:
        raise CorruptBatch("records still remaining after the batch's record count")
    return max_timestamp, problems


def validate_records(
    data: bytes | memoryview,
    count: int,
    base_timestamp: int,
    low: int,
    high: int,
    key_required: bool = False,
    reject_timestamps: bool = False,
) -> tuple[int, list[RecordProblem] | None]:
    """Walk a batch's (decompressed) record data as Kafka's LogValidator does before it
    appends a client's batch: every record whole and exactly as long as its length says, no
    bytes left after ``count`` records (CorruptBatch otherwise, for the whole batch).

    Returns the records' largest timestamp (-1 for none) and, as Kafka collects them, every
    invalid record (None when there is none, so a valid batch allocates nothing): at most one
    problem a record, the key first, as in Kafka: RECORD_NULL_KEY for a null key when
    ``key_required`` (a compacted topic); else RECORD_BAD_TIMESTAMP when
    ``reject_timestamps`` (every record's timestamp is refused) or its timestamp, other than
    -1, lies outside [low, high]. In C when the extension was built, else
    :func:`_validate_records_py`."""
    if _crecords is None:
        return _validate_records_py(
            data, count, base_timestamp, low, high, key_required, reject_timestamps
        )
    return _crecords.validate_records(  # type: ignore[no-any-return]
        data, count, base_timestamp, low, high, key_required, reject_timestamps
    )


def batch_payload(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> bytes:
    """The record data of the batch at ``pos``, decompressed; CorruptBatch if it cannot be."""
    raw = memoryview(buf)[pos + HEADER_SIZE : pos + LOG_OVERHEAD + header.batch_length]
    if not header.codec:
        return bytes(raw)
    try:
        return decompress(header.codec, raw)
    except CompressionError as exc:
        raise CorruptBatch(str(exc)) from None


def iter_records(
    buf: bytes | bytearray | memoryview, *, skip_control: bool = True, verify: bool = True
) -> Iterator[tuple[BatchHeader, Record]]:
    """Every record of every whole batch in ``buf``; a partial trailing batch is ignored."""
    pos = 0
    end = len(buf)
    while end - pos >= LOG_OVERHEAD:
        size = struct.unpack_from(">i", buf, pos + 8)[0] + LOG_OVERHEAD
        if pos + size > end:
            break
        header = check_batch(buf, pos, end) if verify else read_header(buf, pos)
        if not (skip_control and header.attributes & CONTROL_BIT):
            for record in batch_records(buf, pos, header):
                yield header, record
        pos += size


__all__ = [
    "Record",
    "batch_header",
    "batch_payload",
    "batch_records",
    "build_batch",
    "build_simple_batch",
    "decode_records_into",
    "encode_record",
    "iter_records",
    "read_uvarint",
    "record_size_upper_bound",
    "uvarint",
]
