"""Field codecs for metadata records, in the encoding of Kafka's flexible message versions.

A metadata record is stored as Kafka frames it (``MetadataRecordSerde``): an unsigned varint
frame version (1), the record's api key and version as unsigned varints, then the record's
fields in schema order (int8/16/32/64 big-endian, uuid as 16 bytes, compact strings and arrays
whose length is stored plus one, 0 meaning null) and a tagged-field section. A record class
declares its schema as a tuple of ``Field`` entries; ``encode_fields`` / ``decode_fields`` walk
it. Every declared length is checked against the bytes that remain, so a damaged record is a
``RecordFormatError``, never an oversized allocation.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from brook.protocol.primitives import read_uvarint, uvarint

__all__ = [
    "BOOL",
    "BYTES",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "NULLABLE_STRING",
    "STRING",
    "UINT16",
    "UUID",
    "Field",
    "Kind",
    "RecordFormatError",
    "array",
    "decode_fields",
    "encode_fields",
    "mapped",
    "nullable_array",
    "struct_of",
]


class RecordFormatError(ValueError):
    """Bytes that are not a record of the schema they claim."""


@dataclass(frozen=True, slots=True)
class Kind:
    """How one value is written and read."""

    name: str
    write: Callable[[bytearray, Any], None]
    read: Callable[[memoryview, int], tuple[Any, int]]


def _fixed(name: str, fmt: str) -> Kind:
    packer = struct.Struct(fmt)

    def write(out: bytearray, value: Any) -> None:
        out += packer.pack(value)

    def read(data: memoryview, pos: int) -> tuple[Any, int]:
        end = pos + packer.size
        if end > len(data):
            raise RecordFormatError(f"record ends inside a {name}")
        return packer.unpack_from(data, pos)[0], end

    return Kind(name, write, read)


INT8 = _fixed("int8", ">b")
INT16 = _fixed("int16", ">h")
UINT16 = _fixed("uint16", ">H")
INT32 = _fixed("int32", ">i")
INT64 = _fixed("int64", ">q")


def _write_bool(out: bytearray, value: Any) -> None:
    out.append(1 if value else 0)


def _read_bool(data: memoryview, pos: int) -> tuple[Any, int]:
    if pos >= len(data):
        raise RecordFormatError("record ends inside a bool")
    return data[pos] != 0, pos + 1


BOOL = Kind("bool", _write_bool, _read_bool)


def _write_uuid(out: bytearray, value: Any) -> None:
    out += value.bytes


def _read_uuid(data: memoryview, pos: int) -> tuple[Any, int]:
    if pos + 16 > len(data):
        raise RecordFormatError("record ends inside a uuid")
    return uuid.UUID(bytes=bytes(data[pos : pos + 16])), pos + 16


UUID = Kind("uuid", _write_uuid, _read_uuid)


def _read_length(data: memoryview, pos: int) -> tuple[int, int]:
    """A compact length: -1 for null, else the count; never beyond the bytes left."""
    try:
        raw, pos = read_uvarint(data, pos)
    except ValueError as exc:
        raise RecordFormatError(str(exc)) from None
    length = raw - 1
    if length > len(data) - pos:
        raise RecordFormatError(f"declared length {length} exceeds the {len(data) - pos} left")
    return length, pos


def _string(nullable: bool) -> Kind:
    name = "nullable string" if nullable else "string"

    def write(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise ValueError("null in a non-nullable string")
            out.append(0)
            return
        data = value.encode()
        out += uvarint(len(data) + 1)
        out += data

    def read(data: memoryview, pos: int) -> tuple[Any, int]:
        length, pos = _read_length(data, pos)
        if length < 0:
            if not nullable:
                raise RecordFormatError("null in a non-nullable string")
            return None, pos
        try:
            return bytes(data[pos : pos + length]).decode(), pos + length
        except UnicodeDecodeError as exc:
            raise RecordFormatError(f"string is not UTF-8: {exc}") from None

    return Kind(name, write, read)


STRING = _string(False)
NULLABLE_STRING = _string(True)


def _write_bytes(out: bytearray, value: Any) -> None:
    out += uvarint(len(value) + 1)
    out += value


def _read_bytes(data: memoryview, pos: int) -> tuple[Any, int]:
    length, pos = _read_length(data, pos)
    if length < 0:
        raise RecordFormatError("null in non-nullable bytes")
    return bytes(data[pos : pos + length]), pos + length


BYTES = Kind("bytes", _write_bytes, _read_bytes)


def _array(item: Kind, nullable: bool) -> Kind:
    def write(out: bytearray, value: Any) -> None:
        if value is None:
            if not nullable:
                raise ValueError("null in a non-nullable array")
            out.append(0)
            return
        out += uvarint(len(value) + 1)
        for element in value:
            item.write(out, element)

    def read(data: memoryview, pos: int) -> tuple[Any, int]:
        count, pos = _read_length(data, pos)
        if count < 0:
            if not nullable:
                raise RecordFormatError("null in a non-nullable array")
            return None, pos
        values = []
        for _ in range(count):
            value, pos = item.read(data, pos)
            values.append(value)
        return tuple(values), pos

    return Kind(f"[]{item.name}", write, read)


def array(item: Kind) -> Kind:
    return _array(item, nullable=False)


def nullable_array(item: Kind) -> Kind:
    return _array(item, nullable=True)


def mapped(base: Kind, to_wire: Callable[[Any], Any], from_wire: Callable[[Any], Any]) -> Kind:
    """``base`` on the wire, another type in memory (e.g. a protocol name as an int16 id)."""

    def write(out: bytearray, value: Any) -> None:
        base.write(out, to_wire(value))

    def read(data: memoryview, pos: int) -> tuple[Any, int]:
        raw, pos = base.read(data, pos)
        try:
            return from_wire(raw), pos
        except (KeyError, ValueError) as exc:
            raise RecordFormatError(f"bad {base.name} value {raw!r}: {exc}") from None

    return Kind(base.name, write, read)


@dataclass(frozen=True, slots=True)
class Field:
    """One schema entry: the attribute, its kind, the first version that has it, and for a
    tagged field its tag and the default that is left off the wire."""

    attr: str
    kind: Kind
    since: int = 0
    tag: int | None = None
    default: Any = None


def struct_of(cls: type, schema: Sequence[Field]) -> Kind:
    """A nested struct (e.g. a broker endpoint) built as ``cls(**fields)``."""

    def write(out: bytearray, value: Any) -> None:
        encode_fields(out, value, schema, version=0)

    def read(data: memoryview, pos: int) -> tuple[Any, int]:
        values, pos = decode_fields(data, pos, schema, version=0)
        return cls(**values), pos

    return Kind(cls.__name__, write, read)


def encode_fields(out: bytearray, value: Any, schema: Sequence[Field], version: int) -> None:
    tagged: list[tuple[int, bytes]] = []
    for field in schema:
        if field.since > version:
            continue
        attr = getattr(value, field.attr)
        if field.tag is None:
            field.kind.write(out, attr)
        elif attr != field.default:
            body = bytearray()
            field.kind.write(body, attr)
            tagged.append((field.tag, bytes(body)))
    out += uvarint(len(tagged))
    for tag, body in sorted(tagged):
        out += uvarint(tag)
        out += uvarint(len(body))
        out += body


def decode_fields(
    data: memoryview, pos: int, schema: Sequence[Field], version: int
) -> tuple[dict[str, Any], int]:
    values: dict[str, Any] = {}
    by_tag: dict[int, Field] = {}
    for field in schema:
        if field.tag is not None:
            values[field.attr] = field.default
            if field.since <= version:
                by_tag[field.tag] = field
        elif field.since <= version:
            values[field.attr], pos = field.kind.read(data, pos)
        else:
            values[field.attr] = field.default
    try:
        count, pos = read_uvarint(data, pos)
    except ValueError as exc:
        raise RecordFormatError(str(exc)) from None
    for _ in range(count):
        try:
            tag, pos = read_uvarint(data, pos)
            size, pos = read_uvarint(data, pos)
        except ValueError as exc:
            raise RecordFormatError(str(exc)) from None
        end = pos + size
        if end > len(data):
            raise RecordFormatError(f"tagged field {tag} runs past the record")
        field = by_tag.get(tag)
        if field is not None:  # unknown tags are skipped, as Kafka skips them
            values[field.attr], used = field.kind.read(data[:end], pos)
            if used != end:
                raise RecordFormatError(f"tagged field {tag} is {size} bytes, its value is not")
        pos = end
    return values, pos
