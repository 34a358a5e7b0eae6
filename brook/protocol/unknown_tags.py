"""Dropping the tagged fields a request's schema does not know, as Kafka's broker skips them.

kio, which decodes request bodies, refuses a tag its schema lacks (a newer client may send
one in a version Brook serves). When it does, the body is walked here along the schema of
that version (flexible versions only: compact strings, bytes and arrays) and copied without
the unknown tags, then decoded again. Well-formed requests never come this way, so this walk
costs nothing on the normal path.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import cache
from typing import Any

from .primitives import read_uvarint, uvarint

__all__ = ["UNKNOWN_TAG_ERROR", "strip_unknown_tags"]

# What kio's reader says for a tag its schema lacks.
UNKNOWN_TAG_ERROR = "Unknown tagged field"

_FIXED = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}
_COMPACT_BYTES = {"string", "bytes", "records"}


@dataclasses.dataclass(frozen=True)
class _Field:
    kafka_type: str | None  # a primitive's type; None for a nested struct
    struct: type | None  # the nested struct's class
    is_array: bool
    nullable_struct: bool  # a struct that may be null: an int8 marker (-1 = null) first


@dataclasses.dataclass(frozen=True)
class _Schema:
    fields: tuple[_Field, ...]  # in wire order, tagged fields excluded
    tags: frozenset[int]  # the tags this struct knows


@cache
def _schema(cls: type) -> _Schema:
    fields: list[_Field] = []
    tags: set[int] = set()
    for f in dataclasses.fields(cls):
        if "tag" in f.metadata:
            tags.add(int(f.metadata["tag"]))
            continue
        kind: Any = f.type
        nullable = typing.get_origin(kind) in (types.UnionType, typing.Union)
        if nullable:
            kind = next(a for a in typing.get_args(kind) if a is not type(None))
        is_array = typing.get_origin(kind) is tuple
        if is_array:
            kind = typing.get_args(kind)[0]
        kafka_type = f.metadata.get("kafka_type")
        if kafka_type is None and not dataclasses.is_dataclass(kind):
            raise TypeError(f"{cls.__name__}.{f.name}: no kafka_type and not a struct")
        struct = None if kafka_type else kind
        fields.append(
            _Field(kafka_type, struct, is_array, nullable and struct is not None and not is_array)
        )
    return _Schema(tuple(fields), frozenset(tags))


class _Walk:
    def __init__(self, data: bytes | memoryview) -> None:
        self.data = data
        self.pieces: list[bytes | memoryview] = []
        self.copied_to = 0  # data before this offset is in pieces already

    def struct(self, cls: type, pos: int) -> int:
        schema = _schema(cls)
        for field in schema.fields:
            if field.is_array:
                count, pos = read_uvarint(self.data, pos)
                for _ in range(count - 1):  # 0 is null, n is n - 1 elements
                    pos = self.value(field, pos)
            else:
                pos = self.value(field, pos)
        return self.tagged(schema.tags, pos)

    def value(self, field: _Field, pos: int) -> int:
        if field.nullable_struct:
            marker = self.data[self._advance(pos, 1) - 1]
            pos += 1
            if marker == 0xFF:  # -1: null
                return pos
        if field.struct is not None:
            return self.struct(field.struct, pos)
        assert field.kafka_type is not None
        size = _FIXED.get(field.kafka_type)
        if size is None:
            if field.kafka_type not in _COMPACT_BYTES:
                raise TypeError(f"unexpected kafka_type {field.kafka_type!r}")
            length, pos = read_uvarint(self.data, pos)
            size = max(length - 1, 0)
        return self._advance(pos, size)

    def tagged(self, known: frozenset[int], pos: int) -> int:
        """Rewrite the tagged-field section at ``pos`` with only the ``known`` tags."""
        start = pos
        count, pos = read_uvarint(self.data, pos)
        kept: list[bytes | memoryview] = []
        kept_count = 0
        for _ in range(count):
            field_start = pos
            tag, pos = read_uvarint(self.data, pos)
            size, pos = read_uvarint(self.data, pos)
            pos = self._advance(pos, size)
            if tag in known:
                kept.append(self.data[field_start:pos])
                kept_count += 1
        if kept_count != count:
            self.pieces.append(self.data[self.copied_to : start])
            self.pieces.append(uvarint(kept_count))
            self.pieces.extend(kept)
            self.copied_to = pos
        return pos

    def _advance(self, pos: int, size: int) -> int:
        end = pos + size
        if end > len(self.data):
            raise ValueError("request body ends inside a field")
        return end


def strip_unknown_tags(cls: type, data: bytes | memoryview, offset: int = 0) -> bytes:
    """The request body at ``data[offset:]`` (of flexible version ``cls``) without the tagged
    fields its schema does not know; ValueError if the body does not follow the schema."""
    view = memoryview(data)[offset:]
    walk = _Walk(view)
    end = walk.struct(cls, 0)
    if end != len(view):
        raise ValueError("bytes left after the request body")
    walk.pieces.append(view[walk.copied_to :])
    return b"".join(walk.pieces)
