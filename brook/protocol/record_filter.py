"""A stored batch taken apart into its records and rebuilt with some of them (the batch side
of Kafka's ``MemoryRecords.filterTo``, which the log cleaner runs over every batch).

A rebuilt batch keeps what identifies it: its base offset and last offset delta (so every
kept record keeps its offset, and a producer's last sequence survives), its producer id,
epoch and base sequence, its leader epoch, codec and flags. The kept records are copied as
they were stored; only when the cleaner sets a delete horizon (KIP-534), which becomes the
batch's base timestamp, is each record's timestamp delta rewritten so that every record
keeps its timestamp.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .batch import (
    CODEC_MASK,
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    HEADER_SIZE,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    CorruptBatch,
)
from .compression import compress
from .primitives import read_varint, varint
from .records import batch_header, batch_payload, decode_records_into

__all__ = ["BatchRecords", "empty_batch", "rebuild_batch", "record_data"]


@dataclass(frozen=True, slots=True)
class BatchRecords:
    """The records of one batch: ``payload`` holds them (decompressed), record ``i`` is
    ``payload[starts[i]:starts[i + 1]]`` and has ``offsets[i]``, ``timestamps[i]``,
    ``keys[i]`` and whether it has a value (``has_value[i]``; a tombstone has none)."""

    header: BatchHeader
    payload: bytes | memoryview
    starts: list[int]
    offsets: list[int]
    timestamps: list[int]
    keys: list[bytes | None]
    has_value: list[bool]

    @classmethod
    def read(cls, buf: bytes | memoryview, pos: int, header: BatchHeader) -> BatchRecords:
        """Decode the batch at ``pos`` of ``buf``; CorruptBatch if its records are malformed
        or it does not decompress."""
        payload, first, last = record_data(buf, pos, header)
        decoded: list[Any] = []
        decode_records_into(
            decoded, tuple, payload, header.records_count, base_offset=header.base_offset,
            base_timestamp=header.base_timestamp, topic="", partition=0, timestamp_type=0,
            leader_epoch=-1, start=first, end=last,
        )  # fmt: skip
        starts = _record_starts(payload, first, last, header.records_count)
        return cls(
            header,
            payload,
            starts,
            [r[2] for r in decoded],
            [r[3] for r in decoded],
            [r[5] for r in decoded],
            [r[10] >= 0 for r in decoded],
        )

    def __len__(self) -> int:
        return len(self.offsets)

    def record_bytes(self, i: int) -> bytes | memoryview:
        return self.payload[self.starts[i] : self.starts[i + 1]]


def record_data(
    buf: bytes | memoryview, pos: int, header: BatchHeader
) -> tuple[bytes | memoryview, int, int]:
    """Where the records of the batch at ``pos`` lie: (data, start, end), ``buf`` itself
    for an uncompressed batch, its decompressed records otherwise (CorruptBatch if they do
    not decompress)."""
    if header.codec:
        payload = batch_payload(buf, pos, header)
        return payload, 0, len(payload)
    return buf, pos + HEADER_SIZE, pos + header.size


def _record_starts(data: bytes | memoryview, pos: int, end: int, count: int) -> list[int]:
    """Where each of ``count`` records starts, and where the last one ends (the records
    have been decoded already, so their lengths are sound)."""
    starts = []
    for _ in range(count):
        starts.append(pos)
        b = data[pos]
        if b < 0x80:
            length = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            length, pos = read_varint(data, pos)
        pos += length
        if length < 0 or pos > end:
            raise CorruptBatch("record length runs past its batch")
    starts.append(pos)
    return starts


def _shift_timestamp(record: bytes | memoryview, shift: int) -> bytes:
    """The record with its timestamp delta lowered by ``shift`` (its base timestamp moved up
    by as much)."""
    _, body = read_varint(record, 0)
    delta, after = read_varint(record, body + 1)  # after the attributes byte
    new_body = b"".join((bytes(record[body : body + 1]), varint(delta - shift), record[after:]))
    return varint(len(new_body)) + new_body


def rebuild_batch(
    records: BatchRecords, kept: Sequence[int], *, delete_horizon_ms: int | None = None
) -> bytes:
    """The batch with only the records at indexes ``kept`` (at least one), compressed again
    with its codec. ``delete_horizon_ms`` sets KIP-534's delete horizon, which a batch
    already carrying one keeps."""
    header = records.header
    attributes = header.attributes
    base_timestamp = header.base_timestamp
    parts: list[bytes | memoryview] = [records.record_bytes(i) for i in kept]
    if delete_horizon_ms is not None and not attributes & DELETE_HORIZON_BIT:
        shift = delete_horizon_ms - base_timestamp
        parts = [_shift_timestamp(part, shift) for part in parts]
        base_timestamp = delete_horizon_ms
        attributes |= DELETE_HORIZON_BIT
    if header.log_append_time:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = max(records.timestamps[i] for i in kept)
    payload = b"".join(parts)
    if header.codec:
        payload = compress(header.codec, payload)
    head = batch_header(
        payload,
        attributes=attributes,
        count=len(kept),
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch,
        last_offset_delta=header.last_offset_delta,
    )
    return head + payload


def empty_batch(header: BatchHeader) -> bytes:
    """The batch without any record (Kafka's ``writeEmptyHeader``): kept for its offsets and
    its producer's last sequence. Uncompressed, both timestamps the batch's max timestamp."""
    keep = TIMESTAMP_TYPE_BIT | TRANSACTIONAL_BIT | CONTROL_BIT
    return batch_header(
        b"",
        attributes=header.attributes & keep & ~CODEC_MASK,
        count=0,
        base_timestamp=header.max_timestamp,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        base_offset=header.base_offset,
        partition_leader_epoch=header.partition_leader_epoch,
        last_offset_delta=header.last_offset_delta,
    )
