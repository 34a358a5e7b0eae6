"""The records of ``__transaction_state`` in Kafka's formats: key TransactionLogKey v0 (the
transactional id) and value TransactionLogValue v0 or v1 (v1 flexible, with the tagged
PreviousProducerId, NextProducerId and ClientTransactionVersion), each prefixed by its int16
version as Kafka's coordinator records are; a null value (tombstone) removes the id (it
expired). Brook writes v1, as Kafka 4 does, and reads both, so a log Kafka wrote loads.

Every length is checked against the bytes that remain: a damaged record is a
``RecordFormatError``, never an oversized allocation.
"""

from __future__ import annotations

import struct
from collections import defaultdict
from collections.abc import Iterable

from brook.protocol.primitives import compact_string, legacy_string, read_uvarint, uvarint

from .state import NO_PRODUCER_ID, TopicPartition, TxnMetadata, TxnState

TRANSACTION_STATE_TOPIC = "__transaction_state"
KEY_VERSION = 0
VALUE_VERSION = 1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_HEAD = struct.Struct(">qhib")  # producer id, epoch, timeout, status
_TIMES = struct.Struct(">qq")  # last update, start

_TAG_PREVIOUS_PRODUCER_ID, _TAG_NEXT_PRODUCER_ID, _TAG_CLIENT_TXN_VERSION = 0, 1, 2


class RecordFormatError(ValueError):
    """A key or value of ``__transaction_state`` that does not parse."""


# ---------------------------------------------------------------------- keys


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(KEY_VERSION) + legacy_string(transactional_id)


def decode_key(data: bytes) -> str:
    reader = _Reader(data)
    version = reader.i16()
    if version != KEY_VERSION:
        raise RecordFormatError(f"unknown TransactionLogKey version {version}")
    tid = reader.string(flexible=False)
    if tid is None:
        raise RecordFormatError("null transactional id")
    reader.end()
    return tid


# ---------------------------------------------------------------------- values


def encode_value(meta: TxnMetadata, version: int = VALUE_VERSION) -> bytes:
    """The value Kafka writes for ``meta``: an Empty transaction stores null partitions."""
    if meta.state == TxnState.DEAD:
        raise ValueError("a Dead transactional id is written as a tombstone, not a value")
    flexible = version >= 1
    out = bytearray(_I16.pack(version))
    out += _HEAD.pack(meta.producer_id, meta.producer_epoch, meta.timeout_ms, meta.state)
    if meta.state == TxnState.EMPTY:
        out += b"\x00" if flexible else _I32.pack(-1)
    else:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, partition in sorted(meta.partitions):
            by_topic[topic].append(partition)
        out += uvarint(len(by_topic) + 1) if flexible else _I32.pack(len(by_topic))
        for topic, ids in by_topic.items():
            out += compact_string(topic) if flexible else legacy_string(topic)
            out += uvarint(len(ids) + 1) if flexible else _I32.pack(len(ids))
            out += b"".join(_I32.pack(i) for i in ids)
            if flexible:
                out += b"\x00"
    out += _TIMES.pack(meta.last_update_ms, meta.start_ms)
    if flexible:
        tags = []
        if meta.prev_producer_id != NO_PRODUCER_ID:
            tags.append((_TAG_PREVIOUS_PRODUCER_ID, _I64.pack(meta.prev_producer_id)))
        if meta.next_producer_id != NO_PRODUCER_ID:
            tags.append((_TAG_NEXT_PRODUCER_ID, _I64.pack(meta.next_producer_id)))
        out += uvarint(len(tags))
        for tag, data in tags:
            out += uvarint(tag) + uvarint(len(data)) + data
    return bytes(out)


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    reader = _Reader(data)
    version = reader.i16()
    if version not in (0, 1):
        raise RecordFormatError(f"unknown TransactionLogValue version {version}")
    flexible = version >= 1
    producer_id, epoch, timeout, status = reader.unpack(_HEAD)
    try:
        state = TxnState(status)
    except ValueError:
        raise RecordFormatError(f"unknown transaction status {status}") from None
    partitions: set[TopicPartition] = set()
    for _ in range(reader.count(flexible, nullable=True)):
        topic = reader.string(flexible)
        if topic is None:
            raise RecordFormatError("null topic")
        for _p in range(reader.count(flexible, width=4)):
            partitions.add((topic, reader.unpack(_I32)[0]))
        if flexible:
            reader.skip_tags()
    last_update, start = reader.unpack(_TIMES)
    prev_pid = next_pid = NO_PRODUCER_ID
    if flexible:
        for tag, payload in reader.tags():
            if tag == _TAG_PREVIOUS_PRODUCER_ID and len(payload) == 8:
                prev_pid = _I64.unpack(payload)[0]
            elif tag == _TAG_NEXT_PRODUCER_ID and len(payload) == 8:
                next_pid = _I64.unpack(payload)[0]
    reader.end()
    return TxnMetadata(
        transactional_id=transactional_id,
        producer_id=producer_id,
        producer_epoch=epoch,
        timeout_ms=timeout,
        state=state,
        partitions=frozenset(partitions),
        start_ms=start,
        last_update_ms=last_update,
        prev_producer_id=prev_pid,
        next_producer_id=next_pid,
    )


def replay(records: Iterable[tuple[bytes | None, bytes | None]]) -> dict[str, TxnMetadata]:
    """The transactional ids a partition's records add up to: the last value per key wins, a
    tombstone removes the key (Kafka's loadTransactionsForTxnTopicPartition)."""
    loaded: dict[str, TxnMetadata] = {}
    for key, value in records:
        if key is None:
            raise RecordFormatError("a record without a key")
        tid = decode_key(key)
        if value is None:
            loaded.pop(tid, None)
        else:
            loaded[tid] = decode_value(tid, value)
    return loaded


# ---------------------------------------------------------------------- reading


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.view = memoryview(data)
        self.pos = 0

    def _take(self, n: int) -> memoryview:
        if n < 0 or self.pos + n > len(self.view):
            raise RecordFormatError(f"{n} bytes wanted at {self.pos} of {len(self.view)}")
        part = self.view[self.pos : self.pos + n]
        self.pos += n
        return part

    def unpack(self, fmt: struct.Struct) -> tuple[int, ...]:
        return fmt.unpack(self._take(fmt.size))

    def i16(self) -> int:
        return int(self.unpack(_I16)[0])

    def uvarint(self) -> int:
        try:
            value, self.pos = read_uvarint(self.view, self.pos)
        except (IndexError, ValueError) as exc:
            raise RecordFormatError(f"bad varint at {self.pos}: {exc}") from None
        return value

    def count(self, flexible: bool, *, nullable: bool = False, width: int = 1) -> int:
        """An array's length (null: 0 when ``nullable``), at most what the bytes can hold."""
        n = self.uvarint() - 1 if flexible else int(self.unpack(_I32)[0])
        if n < 0:
            if n == -1 and nullable:
                return 0
            raise RecordFormatError(f"array length {n} at {self.pos}")
        if n * width > len(self.view) - self.pos:
            raise RecordFormatError(f"array of {n} longer than the record")
        return n

    def string(self, flexible: bool) -> str | None:
        n = self.uvarint() - 1 if flexible else self.i16()
        if n < 0:
            return None
        try:
            return bytes(self._take(n)).decode()
        except UnicodeDecodeError as exc:
            raise RecordFormatError(str(exc)) from None

    def tags(self) -> list[tuple[int, bytes]]:
        out = []
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out.append((tag, bytes(self._take(self.uvarint()))))
        return out

    def skip_tags(self) -> None:
        self.tags()

    def end(self) -> None:
        if self.pos != len(self.view):
            raise RecordFormatError(f"{len(self.view) - self.pos} bytes after the record")
