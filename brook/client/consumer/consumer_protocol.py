"""The consumer protocol carried inside JoinGroup and SyncGroup: ConsumerProtocolSubscription
v0-3 (topics, user data, owned partitions, generation, rack) and ConsumerProtocolAssignment
v0-3. Fields are only ever appended, so a newer version is read with the fields known here
and an older one leaves the later fields at their defaults, as Java's ConsumerProtocol does.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass

from ..cluster import TopicPartition

__all__ = [
    "SUBSCRIPTION_VERSION",
    "Assignment",
    "ConsumerProtocolError",
    "Subscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


class ConsumerProtocolError(ValueError):
    """Subscription or assignment bytes that do not parse."""


@dataclass(frozen=True)
class Subscription:
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[TopicPartition, ...] = ()
    generation_id: int = -1
    rack_id: str | None = None
    version: int = SUBSCRIPTION_VERSION


@dataclass(frozen=True)
class Assignment:
    partitions: tuple[TopicPartition, ...] = ()
    user_data: bytes | None = None
    version: int = ASSIGNMENT_VERSION


# ---------------------------------------------------------------------- writing


def _string(value: str | None) -> bytes:
    if value is None:
        return _I16.pack(-1)
    data = value.encode("utf-8")
    return _I16.pack(len(data)) + data


def _bytes(value: bytes | None) -> bytes:
    return _I32.pack(-1) if value is None else _I32.pack(len(value)) + value


def _partitions(tps: Iterable[TopicPartition]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp[0], []).append(tp[1])
    out = [_I32.pack(len(by_topic))]
    for topic, parts in by_topic.items():
        out.append(_string(topic))
        out.append(_I32.pack(len(parts)))
        out.extend(_I32.pack(p) for p in parts)
    return b"".join(out)


def encode_subscription(sub: Subscription) -> bytes:
    version = sub.version
    out = [_I16.pack(version), _I32.pack(len(sub.topics))]
    out.extend(_string(t) for t in sub.topics)
    out.append(_bytes(sub.user_data))
    if version >= 1:
        out.append(_partitions(sub.owned_partitions))
    if version >= 2:
        out.append(_I32.pack(sub.generation_id))
    if version >= 3:
        out.append(_string(sub.rack_id))
    return b"".join(out)


def encode_assignment(assignment: Assignment) -> bytes:
    return (
        _I16.pack(assignment.version)
        + _partitions(assignment.partitions)
        + _bytes(assignment.user_data)
    )


# ---------------------------------------------------------------------- reading


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data = memoryview(data)
        self.pos = 0

    @property
    def remaining(self) -> int:
        return len(self.data) - self.pos

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise ConsumerProtocolError("ends early")
        out = bytes(self.data[self.pos : self.pos + n])
        self.pos += n
        return out

    def i16(self) -> int:
        return int(_I16.unpack(self._take(2))[0])

    def i32(self) -> int:
        return int(_I32.unpack(self._take(4))[0])

    def string(self) -> str | None:
        size = self.i16()
        if size < 0:
            return None
        try:
            return self._take(size).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConsumerProtocolError(f"bad string: {exc}") from None

    def bytes_(self) -> bytes | None:
        size = self.i32()
        return None if size < 0 else self._take(size)

    def count(self) -> int:
        n = self.i32()
        if n > self.remaining:
            raise ConsumerProtocolError(f"array of {n} items in {self.remaining} bytes")
        return max(n, 0)

    def partitions(self) -> tuple[TopicPartition, ...]:
        out: list[TopicPartition] = []
        for _ in range(self.count()):
            topic = self.string() or ""
            out.extend(TopicPartition(topic, self.i32()) for _ in range(self.count()))
        return tuple(out)


def decode_subscription(data: bytes) -> Subscription:
    reader = _Reader(data)
    version = reader.i16()
    if version < 0:
        raise ConsumerProtocolError(f"subscription version {version}")
    topics = tuple(reader.string() or "" for _ in range(reader.count()))
    user_data = reader.bytes_()
    owned: tuple[TopicPartition, ...] = ()
    generation = -1
    rack = None
    # A v0 subscription may end right after the user data; later fields are optional.
    if version >= 1 and reader.remaining:
        owned = reader.partitions()
    if version >= 2 and reader.remaining:
        generation = reader.i32()
    if version >= 3 and reader.remaining:
        rack = reader.string()
    return Subscription(topics, user_data, owned, generation, rack, version)


def decode_assignment(data: bytes) -> Assignment:
    """An empty byte string is an empty assignment (what SyncGroup gives a member the leader
    assigned nothing)."""
    if not data:
        return Assignment(version=0)
    reader = _Reader(data)
    version = reader.i16()
    if version < 0:
        raise ConsumerProtocolError(f"assignment version {version}")
    partitions = reader.partitions()
    user_data = reader.bytes_() if reader.remaining else None
    return Assignment(partitions, user_data, version)
