"""Group state as records of ``__consumer_offsets`` in Kafka's formats (OffsetCommitKey v0-1 with
OffsetCommitValue v0-4, GroupMetadataKey v2 with GroupMetadataValue v0-3), and the replay that
rebuilds it: the last value per key wins, a null value deletes the key.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from brook.protocol.primitives import read_uvarint, skip_tagged_fields

OFFSETS_TOPIC = "__consumer_offsets"

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
GROUP_METADATA_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

TopicPartition = tuple[str, int]


class RecordFormatError(ValueError):
    """A key or value of ``__consumer_offsets`` that does not parse."""


# ---------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed offset, as OffsetCommitValue stores it."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    # Set only by OffsetCommit v2-v4 with an explicit retention time (value v1).
    expire_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: tuple[MemberMetadata, ...] = ()


@dataclass(frozen=True, slots=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True, slots=True)
class GroupKey:
    group: str


# ---------------------------------------------------------------------- primitives


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if n < 0 or end > len(self.data):
            raise RecordFormatError("record ends early")
        out = self.data[self.pos : end]
        self.pos = end
        return out

    def i16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def i64(self) -> int:
        return int(_I64.unpack(self._take(8))[0])

    def string(self) -> str | None:
        size = self.i16()
        return None if size < 0 else self._take(size).decode("utf-8")

    def compact_string(self) -> str | None:
        size, self.pos = read_uvarint(self.data, self.pos)
        return None if size == 0 else self._take(size - 1).decode("utf-8")

    def bytes_(self) -> bytes:
        size = self.i32()
        return b"" if size < 0 else self._take(size)

    def tagged_fields(self) -> None:
        try:
            self.pos = skip_tagged_fields(self.data, self.pos)
        except ValueError as exc:
            raise RecordFormatError(str(exc)) from None


def _string(value: str | None) -> bytes:
    if value is None:
        return _I16.pack(-1)
    data = value.encode("utf-8")
    return _I16.pack(len(data)) + data


def _bytes(value: bytes) -> bytes:
    return _I32.pack(len(value)) + value


# ---------------------------------------------------------------------- keys


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return (
        _I16.pack(OFFSET_COMMIT_KEY_VERSION)
        + _string(group)
        + _string(topic)
        + _I32.pack(partition)
    )


def group_key(group: str) -> bytes:
    return _I16.pack(GROUP_METADATA_KEY_VERSION) + _string(group)


def decode_key(data: bytes) -> OffsetKey | GroupKey | None:
    """The key's meaning; None for record types this coordinator does not keep."""
    reader = _Reader(data)
    version = reader.i16()
    if version in (0, 1):
        return OffsetKey(reader.string() or "", reader.string() or "", reader.i32())
    if version == GROUP_METADATA_KEY_VERSION:
        return GroupKey(reader.string() or "")
    return None


# ---------------------------------------------------------------------- offset values


def encode_offset_value(value: OffsetAndMetadata) -> bytes:
    """Version 1 when an explicit expiry is kept, else version 3 (as Kafka 2.1+ writes)."""
    if value.expire_timestamp is not None:
        return (
            _I16.pack(1)
            + _I64.pack(value.offset)
            + _string(value.metadata)
            + _I64.pack(value.commit_timestamp)
            + _I64.pack(value.expire_timestamp)
        )
    return (
        _I16.pack(3)
        + _I64.pack(value.offset)
        + _I32.pack(value.leader_epoch)
        + _string(value.metadata)
        + _I64.pack(value.commit_timestamp)
    )


def decode_offset_value(data: bytes) -> OffsetAndMetadata:
    reader = _Reader(data)
    version = reader.i16()
    if version < 0 or version > 4:
        raise RecordFormatError(f"unknown OffsetCommitValue version {version}")
    offset = reader.i64()
    leader_epoch = reader.i32() if version >= 3 else -1
    metadata = reader.compact_string() if version >= 4 else reader.string()
    commit_timestamp = reader.i64()
    expire = reader.i64() if version == 1 else None
    if version >= 4:
        reader.tagged_fields()
    return OffsetAndMetadata(offset, leader_epoch, metadata or "", commit_timestamp, expire)


# ---------------------------------------------------------------------- group values


def encode_group_value(value: GroupMetadataValue) -> bytes:
    parts = [
        _I16.pack(GROUP_METADATA_VALUE_VERSION),
        _string(value.protocol_type),
        _I32.pack(value.generation),
        _string(value.protocol),
        _string(value.leader),
        _I64.pack(value.current_state_timestamp),
        _I32.pack(len(value.members)),
    ]
    for m in value.members:
        parts += [
            _string(m.member_id),
            _string(m.group_instance_id),
            _string(m.client_id),
            _string(m.client_host),
            _I32.pack(m.rebalance_timeout_ms),
            _I32.pack(m.session_timeout_ms),
            _bytes(m.subscription),
            _bytes(m.assignment),
        ]
    return b"".join(parts)


def decode_group_value(data: bytes) -> GroupMetadataValue:
    reader = _Reader(data)
    version = reader.i16()
    if version < 0 or version > 3:
        raise RecordFormatError(f"unknown GroupMetadataValue version {version}")
    protocol_type = reader.string() or ""
    generation = reader.i32()
    protocol = reader.string()
    leader = reader.string()
    timestamp = reader.i64() if version >= 2 else -1
    members = []
    for _ in range(reader.i32()):
        member_id = reader.string() or ""
        instance_id = reader.string() if version >= 3 else None
        client_id = reader.string() or ""
        client_host = reader.string() or ""
        rebalance_timeout = reader.i32() if version >= 1 else None
        session_timeout = reader.i32()
        if rebalance_timeout is None:
            # v0 had no rebalance timeout; Kafka used the session timeout for both.
            rebalance_timeout = session_timeout
        members.append(
            MemberMetadata(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                reader.bytes_(),
                reader.bytes_(),
            )
        )
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, timestamp, tuple(members)
    )


# ---------------------------------------------------------------------- placement


def java_string_hash(text: str) -> int:
    """``String.hashCode`` of the JVM (over UTF-16 code units, 32-bit wrap-around)."""
    h = 0
    units = text.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % partitions``: a group lands where Kafka puts it."""
    h = java_string_hash(group_id)
    return (0 if h == -(2**31) else abs(h)) % num_partitions


# ---------------------------------------------------------------------- consumer protocol


def subscribed_topics(metadata: bytes) -> set[str] | None:
    """Topics of a ConsumerProtocolSubscription (any version: v0 is the prefix of all)."""
    try:
        reader = _Reader(metadata)
        reader.i16()
        count = reader.i32()
        if count < 0:
            return set()
        return {reader.string() or "" for _ in range(count)}
    except (RecordFormatError, UnicodeDecodeError, struct.error):
        return None


# ---------------------------------------------------------------------- replay


@dataclass
class Replay:
    """Folds the records of one ``__consumer_offsets`` partition, in log order, into the
    groups and offsets they leave behind."""

    groups: dict[str, GroupMetadataValue] = field(default_factory=dict)
    offsets: dict[str, dict[TopicPartition, tuple[OffsetAndMetadata, int]]] = field(
        default_factory=dict
    )
    skipped: int = 0

    def apply(
        self, key: bytes | None, value: bytes | None, log_offset: int, newer_only: bool = False
    ) -> None:
        """Fold one record in; ``newer_only`` (a committed transaction's offsets, applied at
        its marker) leaves a partition a later record of the log already set."""
        if key is None:
            self.skipped += 1
            return
        try:
            parsed = decode_key(key)
            if isinstance(parsed, OffsetKey):
                tp = (parsed.topic, parsed.partition)
                if value is None:
                    group_offsets = self.offsets.get(parsed.group)
                    if group_offsets is not None:
                        group_offsets.pop(tp, None)
                        if not group_offsets:
                            del self.offsets[parsed.group]
                else:
                    group_offsets = self.offsets.setdefault(parsed.group, {})
                    current = group_offsets.get(tp)
                    if newer_only and current is not None and current[1] > log_offset:
                        return
                    group_offsets[tp] = (decode_offset_value(value), log_offset)
            elif isinstance(parsed, GroupKey):
                if value is None:
                    self.groups.pop(parsed.group, None)
                else:
                    self.groups[parsed.group] = decode_group_value(value)
            else:
                self.skipped += 1
        except (RecordFormatError, UnicodeDecodeError, struct.error):
            self.skipped += 1

    def apply_all(self, records: Iterable[tuple[bytes | None, bytes | None, int]]) -> Replay:
        for key, value, offset in records:
            self.apply(key, value, offset)
        return self

    def open_txn_offsets(
        self, records: Iterable[Any]
    ) -> dict[str, dict[TopicPartition, tuple[OffsetAndMetadata, int]]]:
        """The offsets, by group, among the records of a transaction still open at the end of
        the log (they wait for its marker)."""
        out: dict[str, dict[TopicPartition, tuple[OffsetAndMetadata, int]]] = {}
        for record in records:
            try:
                parsed = decode_key(record.key) if record.key is not None else None
                if isinstance(parsed, OffsetKey) and record.value is not None:
                    tp = (parsed.topic, parsed.partition)
                    offsets = out.setdefault(parsed.group, {})
                    offsets[tp] = (decode_offset_value(record.value), record.offset)
            except (RecordFormatError, UnicodeDecodeError, struct.error):
                self.skipped += 1
        return out

    def group_ids(
        self, open_txns: Iterable[Mapping[str, Mapping[TopicPartition, Any]]] = ()
    ) -> set[str]:
        """The groups to load: those with metadata or offsets, and, as in Kafka, those whose
        only offsets are held by open transactions (``open_txn_offsets`` of each): the
        transaction's marker must find the group to apply them."""
        ids = set(self.groups) | set(self.offsets)
        for by_group in open_txns:
            ids.update(by_group)
        return ids


def offset_records(
    group: str, offsets: Mapping[TopicPartition, OffsetAndMetadata | None]
) -> list[tuple[bytes, bytes | None]]:
    """Key/value pairs for commits (a None value writes a tombstone)."""
    return [
        (offset_key(group, topic, partition), None if v is None else encode_offset_value(v))
        for (topic, partition), v in offsets.items()
    ]


__all__ = [
    "OFFSETS_TOPIC",
    "GroupKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetAndMetadata",
    "OffsetKey",
    "RecordFormatError",
    "Replay",
    "decode_group_value",
    "decode_key",
    "decode_offset_value",
    "encode_group_value",
    "encode_offset_value",
    "group_key",
    "offset_key",
    "offset_records",
    "partition_for",
    "subscribed_topics",
]
