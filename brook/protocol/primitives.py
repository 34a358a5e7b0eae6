"""Varints and the few primitive encoders the hand-written codecs share."""

from __future__ import annotations

import struct

INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT32 = struct.Struct(">I")
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def uvarint(value: int) -> bytes:
    """Unsigned LEB128 varint, as Kafka's flexible versions and records use."""
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def varint(value: int) -> bytes:
    """Zig-zag signed varint (int32 or int64 range)."""
    return uvarint((value << 1) ^ (value >> 63))


def read_uvarint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise ValueError("truncated varint")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def read_varint(buf: bytes | memoryview, pos: int) -> tuple[int, int]:
    raw, pos = read_uvarint(buf, pos)
    return (raw >> 1) ^ -(raw & 1), pos


def compact_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    data = value.encode()
    return uvarint(len(data) + 1) + data


def legacy_string(value: str | None) -> bytes:
    if value is None:
        return b"\xff\xff"
    data = value.encode()
    return INT16.pack(len(data)) + data


def skip_tagged_fields(buf: bytes | memoryview, pos: int) -> int:
    count, pos = read_uvarint(buf, pos)
    for _ in range(count):
        _tag, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
    if pos > len(buf):
        raise ValueError("truncated tagged fields")
    return pos
