"""The records a consumer hands out: ``ConsumerRecord``, a tuple with named fields, built by
the fast decoder in brook.protocol.records without a Python call per record."""

from __future__ import annotations

import enum
from operator import itemgetter
from typing import Any

__all__ = ["ConsumerRecord", "TimestampType"]


class TimestampType(enum.IntEnum):
    """Kafka's timestamp types; a v2 batch's attribute bit 3 selects LOG_APPEND_TIME."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1


class ConsumerRecord(tuple):  # type: ignore[type-arg]
    """One record: topic, partition, offset, timestamp (ms), timestamp_type (0 create time,
    1 log append time), key, value, headers (tuple of (str, bytes | None)), leader_epoch
    (-1 when unknown), serialized_key_size and serialized_value_size (-1 for null)."""

    __slots__ = ()

    _fields = (
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
        "leader_epoch",
        "serialized_key_size",
        "serialized_value_size",
    )

    topic: str = property(itemgetter(0))  # type: ignore[assignment]
    partition: int = property(itemgetter(1))  # type: ignore[assignment]
    offset: int = property(itemgetter(2))  # type: ignore[assignment]
    timestamp: int = property(itemgetter(3))  # type: ignore[assignment]
    timestamp_type: int = property(itemgetter(4))  # type: ignore[assignment]
    key: Any = property(itemgetter(5))  # type: ignore[assignment]
    value: Any = property(itemgetter(6))  # type: ignore[assignment]
    headers: tuple[tuple[str, bytes | None], ...] = property(itemgetter(7))  # type: ignore[assignment]
    leader_epoch: int = property(itemgetter(8))  # type: ignore[assignment]
    serialized_key_size: int = property(itemgetter(9))  # type: ignore[assignment]
    serialized_value_size: int = property(itemgetter(10))  # type: ignore[assignment]

    def __new__(
        cls,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: Any,
        value: Any,
        headers: tuple[tuple[str, bytes | None], ...] = (),
        leader_epoch: int = -1,
        serialized_key_size: int = -1,
        serialized_value_size: int = -1,
    ) -> ConsumerRecord:
        return tuple.__new__(
            cls,
            (
                topic,
                partition,
                offset,
                timestamp,
                timestamp_type,
                key,
                value,
                headers,
                leader_epoch,
                serialized_key_size,
                serialized_value_size,
            ),
        )

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)

    def _replace(self, **changes: Any) -> ConsumerRecord:
        values = dict(zip(self._fields, self, strict=True))
        values.update(changes)
        return ConsumerRecord(**values)

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={v!r}" for n, v in zip(self._fields, self, strict=True))
        return f"ConsumerRecord({fields})"
