"""A message's bytes walked along its kio schema before kio reads them.

kio's native reader reserves room for an array as soon as it reads the array's count: a
50-byte JoinGroup body whose count says 2^33 makes it ask for 64 GiB, the allocation fails
and the process aborts. Nothing in the bytes a peer sends may end the process, so every body
is walked here first, field by field, and refused (``MalformedMessage``) when a declared
length or count cannot fit in the bytes that remain, as Kafka's generated readers refuse it
("Tried to allocate a collection of size N, but there are only M bytes remaining"). The walk
also refuses a null where the schema has none (kio would hand ``None`` to a handler that
iterates it, where Kafka refuses "non-nullable field X was serialized as null") and notes the
tagged fields the schema does not know, which kio refuses and Kafka skips
(``unknown_tags.py`` drops them).

The walk knows every wire form the schemas use: fixed-size numbers and UUIDs; strings
(int16 length, or compact uvarint length + 1 in flexible versions), bytes and records (int32
length, or compact); arrays (int32 count, or compact uvarint count + 1), with -1 as null
where the field is nullable; nested structs, nullable ones behind an int8 marker; and the
tagged-field section that ends every struct of a flexible version, whose known fields are
walked too, each within the size it declares. Bytes after the message are left alone, as
Kafka leaves them.

Every request the broker reads and every response the client reads comes this way, Produce
and Fetch included, so the walk is compiled: each schema version becomes one generated Python
function with every field's check in line, nested structs included (consecutive fixed-size
fields merged into one step), built the first time that version is read. It costs a few
hundred nanoseconds per struct whatever the record bytes weigh: records are one length,
checked and skipped.
"""

from __future__ import annotations

import array
import dataclasses
import os
import struct
import types
import typing
from collections.abc import Callable
from functools import cache
from typing import Any

try:
    if os.environ.get("BROOK_NO_SPEEDUPS"):
        raise ImportError("speedups turned off by BROOK_NO_SPEEDUPS")
    from . import _cwalk
except ImportError:  # no C compiler at install time: the Python walk does it all
    _cwalk = None  # type: ignore[assignment]

__all__ = ["MalformedMessage", "TagEdit", "apply_edits", "walk_message"]

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")

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
_MAX_STRING = 0x7FFF  # Kafka refuses a longer string, int16-sized or compact

# Field kinds.
_FIXED_KIND = 0
_STRING = 1
_BYTES = 2
_ARRAY = 3
_STRUCT = 4
_NULLABLE_STRUCT = 5

# (data, pos, end, edits) -> where the value ends
Walker = Callable[[Any, int, int, list["TagEdit"]], int]


class MalformedMessage(ValueError):
    """The bytes do not follow the message's schema: the message cannot be read."""


@dataclasses.dataclass(frozen=True, slots=True)
class TagEdit:
    """A tagged-field section that carries tags its schema does not know: ``data[start:stop]``
    is to be replaced by ``kept`` (the section's new count and the known tags only)."""

    start: int
    stop: int
    kept: bytes


@dataclasses.dataclass(frozen=True, slots=True, eq=False)
class _Field:
    where: str  # "Struct.field", for error messages
    kind: int
    size: int  # _FIXED_KIND: its bytes; otherwise the fewest bytes the field can take
    nullable: bool
    flexible: bool
    item: _Field | None = None  # _ARRAY: one element
    shape: _Shape | None = None  # _STRUCT, _NULLABLE_STRUCT


@dataclasses.dataclass(eq=False)
class _Shape:
    name: str
    flexible: bool
    fields: tuple[_Field, ...]  # wire order, tagged fields excluded, fixed runs merged
    tags: dict[int, _Field]  # the tagged fields this struct knows
    min_size: int
    walk: Walker | None = None  # compiled on first use
    tag_walkers: dict[int, tuple[_Field, Walker]] | None = None
    program: bytes | None = None  # for the C fast path, built on first use


# ------------------------------------------------------------------ schema -> description


def _unwrap(kind: Any) -> tuple[Any, bool]:
    if typing.get_origin(kind) in (types.UnionType, typing.Union):
        args = [a for a in typing.get_args(kind) if a is not type(None)]
        return args[0], True
    return kind, False


def _field(where: str, kind: Any, kafka_type: str | None, flexible: bool) -> _Field:
    kind, nullable = _unwrap(kind)
    if typing.get_origin(kind) is tuple:
        element, element_nullable = _unwrap(typing.get_args(kind)[0])
        item = _describe(where, element, kafka_type, flexible, element_nullable)
        return _Field(where, _ARRAY, 1 if flexible else 4, nullable, flexible, item=item)
    return _describe(where, kind, kafka_type, flexible, nullable)


def _describe(
    where: str, kind: Any, kafka_type: str | None, flexible: bool, nullable: bool
) -> _Field:
    if kafka_type is None:
        if not dataclasses.is_dataclass(kind):
            raise TypeError(f"{where}: no kafka_type and not a struct")
        shape = _shape(kind)  # type: ignore[arg-type]
        if nullable:
            return _Field(where, _NULLABLE_STRUCT, 1, True, flexible, shape=shape)
        return _Field(where, _STRUCT, shape.min_size, False, flexible, shape=shape)
    size = _FIXED.get(kafka_type)
    if size is not None:
        return _Field(where, _FIXED_KIND, size, False, flexible)
    if kafka_type == "string":
        return _Field(where, _STRING, 1 if flexible else 2, nullable, flexible)
    if kafka_type in ("bytes", "records"):
        return _Field(where, _BYTES, 1 if flexible else 4, nullable, flexible)
    raise TypeError(f"{where}: unexpected kafka_type {kafka_type!r}")


@cache
def _shape(cls: type) -> _Shape:
    flexible = bool(getattr(cls, "__flexible__", False))
    fields: list[_Field] = []
    tags: dict[int, _Field] = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        where = f"{cls.__name__}.{f.name}"
        described = _field(where, f.type, f.metadata.get("kafka_type"), flexible)
        if "tag" in f.metadata:
            tags[int(f.metadata["tag"])] = described
            continue
        last = fields[-1] if fields else None
        if described.kind == _FIXED_KIND and last is not None and last.kind == _FIXED_KIND:
            merged = f"{last.where.split('..')[0]}..{f.name}"
            fields[-1] = _Field(merged, _FIXED_KIND, last.size + described.size, False, flexible)
        else:
            fields.append(described)
    min_size = sum(f.size for f in fields) + (1 if flexible else 0)
    return _Shape(cls.__name__, flexible, tuple(fields), tags, min_size)


# ------------------------------------------------------------------ description -> code


class _Emitter:
    """Writes the body of one generated walker; the objects it refers to go in ``ns``."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "_INT16": _INT16,
            "_INT32": _INT32,
            "_uvarint": _uvarint,
            "_tags": _tags,
            "_ends": _ends,
            "_negative": _negative,
            "_too_long": _too_long,
            "_too_many": _too_many,
            "_long_string": _long_string,
        }

    def const(self, value: Any) -> str:
        name = f"_k{len(self.ns)}"
        self.ns[name] = value
        return name

    def add(self, indent: int, *lines: str) -> None:
        self.lines.extend("    " * indent + line for line in lines)

    def value(self, f: _Field, indent: int, depth: int) -> None:
        """Code that walks one value of ``f`` at ``pos`` and leaves ``pos`` after it."""
        where = self.const(f.where)
        kind = f.kind
        if kind == _FIXED_KIND:
            self.add(indent, f"pos += {f.size}", "if pos > end:", f"    _ends({where})")
        elif kind in (_STRING, _BYTES, _ARRAY):
            n = f"n{depth}"
            self.length(f, n, where, indent)
            if f.nullable:
                self.add(
                    indent, f"if {n} < 0:", f"    if {n} != -1:", f"        _negative({where}, {n})"
                )
            else:
                self.add(indent, f"if {n} < 0:", f"    _negative({where}, {n})")
            if kind == _ARRAY:
                self.elements(f, n, where, indent, depth)
            else:
                self.add(
                    indent, f"elif {n} > end - pos:", f"    _too_long({where}, {n}, end - pos)"
                )
                if kind == _STRING:
                    limit = _MAX_STRING
                    self.add(indent, f"elif {n} > {limit}:", f"    _long_string({where}, {n})")
                self.add(indent, "else:", f"    pos += {n}")
        elif kind == _STRUCT:  # in line: no call per element
            assert f.shape is not None
            self.struct(f.shape, indent, depth)
        else:  # _NULLABLE_STRUCT: an int8 marker, -1 for null (kio reads any other as present)
            assert f.shape is not None
            self.add(
                indent,
                "if pos >= end:",
                f"    _ends({where})",
                "if data[pos] == 0xFF:",
                "    pos += 1",
                "else:",
                "    pos += 1",
            )
            self.struct(f.shape, indent + 1, depth)

    def struct(self, shape: _Shape, indent: int, depth: int) -> None:
        """Code that walks a struct at ``pos``: its fields, then its tagged fields."""
        for f in shape.fields:
            self.value(f, indent, depth)
        if shape.flexible:
            me = self.const(shape)
            self.add(
                indent,
                "if pos < end and data[pos] == 0:",  # no tagged fields: the usual case
                "    pos += 1",
                "else:",
                f"    pos = _tags({me}, data, pos, end, edits)",
            )

    def length(self, f: _Field, n: str, where: str, indent: int) -> None:
        """Code that reads the length or count of ``f`` into ``n`` (-1 for null)."""
        if f.flexible:  # uvarints of up to 3 bytes in line (lengths below 2 MiB)
            self.add(
                indent,
                "if pos < end and data[pos] < 0x80:",
                f"    {n} = data[pos] - 1",
                "    pos += 1",
                "elif pos + 1 < end and data[pos + 1] < 0x80:",
                f"    {n} = ((data[pos] & 0x7F) | (data[pos + 1] << 7)) - 1",
                "    pos += 2",
                "elif pos + 2 < end and data[pos + 2] < 0x80:",
                f"    {n} = (data[pos] & 0x7F) | ((data[pos + 1] & 0x7F) << 7)",
                f"    {n} = ({n} | (data[pos + 2] << 14)) - 1",
                "    pos += 3",
                "else:",
                f"    {n}, pos = _uvarint({where}, data, pos, end)",
                f"    {n} -= 1",
            )
            return
        size, reader = (2, "_INT16") if f.kind == _STRING else (4, "_INT32")
        self.add(
            indent,
            f"if pos + {size} > end:",
            f"    _ends({where})",
            f"{n} = {reader}.unpack_from(data, pos)[0]",
            f"pos += {size}",
        )

    def elements(self, f: _Field, n: str, where: str, indent: int, depth: int) -> None:
        """After the count: checked against the bytes that remain before any element is read
        (kio reserves room for ``n`` elements as soon as it reads the count)."""
        item = f.item
        assert item is not None
        # Every element takes at least a byte (Kafka's own rule is count <= remaining bytes).
        least = max(item.size, 1)
        self.add(
            indent, f"elif {n} * {least} > end - pos:", f"    _too_many({where}, {n}, end - pos)"
        )
        if item.kind == _FIXED_KIND:
            self.add(indent, "else:", f"    pos += {n} * {item.size}")
            return
        self.add(indent, "else:", f"    for _ in range({n}):")
        self.value(item, indent + 2, depth + 1)


def _compiled(shape: _Shape) -> Walker:
    """The generated walker of ``shape`` (a struct: its fields, then its tagged fields)."""
    if shape.walk is not None:
        return shape.walk
    emit = _Emitter()
    emit.add(0, "def walk(data, pos, end, edits):")
    emit.struct(shape, 1, 0)
    emit.add(1, "return pos")
    shape.walk = _build(emit, f"<walk {shape.name}>")
    return shape.walk


def _value_walker(f: _Field) -> Walker:
    """A generated walker of one value of ``f`` (a known tagged field)."""
    emit = _Emitter()
    emit.add(0, "def walk(data, pos, end, edits):")
    emit.value(f, 1, 0)
    emit.add(1, "return pos")
    return _build(emit, f"<walk {f.where}>")


def _build(emit: _Emitter, filename: str) -> Walker:
    # The source is generated above from the schema alone: no byte of a message is in it.
    exec(compile("\n".join(emit.lines), filename, "exec"), emit.ns)
    return emit.ns["walk"]  # type: ignore[no-any-return]


# ------------------------------------------------------------------ the walk


def walk_message(cls: type, data: bytes | memoryview, offset: int = 0) -> list[TagEdit]:
    """Check that the message of schema ``cls`` at ``data[offset:]`` can be read: every
    length and count fits in the bytes that remain, no null where the schema has none.

    Returns the tagged-field sections to rewrite (empty unless the message carries tags its
    schema does not know). Raises MalformedMessage naming the field that is wrong.
    """
    shape = _shape(cls)
    if _cwalk is not None:
        # The C walk answers True only for a message that passes every check and carries no
        # tagged field; anything else is decided (and explained) by the Python walk.
        program = shape.program or _program(shape)
        if _cwalk.walk(program, data, offset):
            return []
    return _python_walk(shape, data, offset)


def _python_walk(shape: _Shape, data: bytes | memoryview, offset: int) -> list[TagEdit]:
    walk = shape.walk or _compiled(shape)
    edits: list[TagEdit] = []
    walk(data, offset, len(data), edits)
    return edits


# Opcodes and flags of the C walk's program (see _cwalk.c).
_OP_END, _OP_FIXED, _OP_STRING, _OP_BYTES, _OP_ARRAY, _OP_STRUCT, _OP_NSTRUCT, _OP_TAGS = range(8)
_F_FLEXIBLE, _F_NULLABLE = 1, 2


def _program(shape: _Shape) -> bytes:
    """``shape`` as the C walk's program: four int32 per op, the message's struct first, each
    struct's ops contiguous up to its END, array elements and nested structs after."""
    ops: list[tuple[int, int, int, int]] = []
    starts: dict[int, int] = {}

    def struct_ops(s: _Shape) -> int:
        if id(s) in starts:
            return starts[id(s)]
        start = starts[id(s)] = len(ops)
        ops.extend([(_OP_END, 0, 0, 0)] * len(s.fields))  # placeholders, filled below
        if s.flexible:
            ops.append((_OP_TAGS, 0, 0, 0))
        ops.append((_OP_END, 0, 0, 0))
        for i, f in enumerate(s.fields):
            ops[start + i] = op(f)
        return start

    def op(f: _Field) -> tuple[int, int, int, int]:
        flags = (_F_FLEXIBLE if f.flexible else 0) | (_F_NULLABLE if f.nullable else 0)
        if f.kind == _FIXED_KIND:
            return (_OP_FIXED, f.size, 0, 0)
        if f.kind in (_STRING, _BYTES):
            return (_OP_STRING if f.kind == _STRING else _OP_BYTES, flags, 0, 0)
        if f.kind == _ARRAY:
            assert f.item is not None
            index = len(ops)
            ops.append((_OP_END, 0, 0, 0))
            ops[index] = op(f.item)
            return (_OP_ARRAY, flags, max(f.item.size, 1), index)
        assert f.shape is not None
        code = _OP_STRUCT if f.kind == _STRUCT else _OP_NSTRUCT
        return (code, struct_ops(f.shape), 0, 0)

    struct_ops(shape)
    shape.program = array.array("i", [v for o in ops for v in o]).tobytes()
    return shape.program


def _tags(shape: _Shape, data: Any, pos: int, end: int, edits: list[TagEdit]) -> int:
    """A tagged-field section: known fields walked within the size each declares, unknown
    ones noted in ``edits`` to be dropped."""
    walkers = shape.tag_walkers
    if walkers is None:
        walkers = shape.tag_walkers = {t: (f, _value_walker(f)) for t, f in shape.tags.items()}
    start = pos
    count, pos = _uvarint(shape.name, data, pos, end)
    if count * 2 > end - pos:  # a tag and a size: two bytes at least
        raise MalformedMessage(
            f"{shape.name}: {count} tagged fields but only {end - pos} bytes remain"
        )
    kept: list[bytes] = []
    changed = False
    for _ in range(count):
        field_start = pos
        tag, pos = _uvarint(shape.name, data, pos, end)
        size, pos = _uvarint(shape.name, data, pos, end)
        if size > end - pos:
            raise MalformedMessage(
                f"{shape.name}: tagged field {tag} of {size} bytes but only {end - pos} remain"
            )
        stop = pos + size
        known = walkers.get(tag)
        if known is None:
            changed = True
        else:
            f, walk = known
            outer = len(edits)
            value_end = walk(data, pos, stop, edits)
            if value_end != stop:
                raise MalformedMessage(
                    f"{f.where}: tagged field {tag} declares {size} bytes "
                    f"but its value takes {value_end - pos}"
                )
            if len(edits) == outer:
                kept.append(bytes(data[field_start:stop]))
            else:
                # The value (a struct) carries unknown tags of its own: it is kept stripped,
                # under its new size, and its edits are folded into this section's.
                value = apply_edits(data, pos, stop, edits[outer:])
                del edits[outer:]
                kept.append(_uvarint_bytes(tag) + _uvarint_bytes(len(value)) + value)
                changed = True
        pos = stop
    if changed:
        edits.append(TagEdit(start, pos, _uvarint_bytes(len(kept)) + b"".join(kept)))
    return pos


def apply_edits(data: Any, start: int, stop: int, edits: list[TagEdit]) -> bytes:
    """``data[start:stop]`` with ``edits`` (in order, within that span) applied."""
    view = memoryview(data)
    pieces: list[bytes | memoryview] = []
    copied_to = start
    for edit in edits:
        pieces.append(view[copied_to : edit.start])
        pieces.append(edit.kept)
        copied_to = edit.stop
    pieces.append(view[copied_to:stop])
    return b"".join(pieces)


def _uvarint(where: str, data: Any, pos: int, end: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's and kio's limit)."""
    result = 0
    for shift in (0, 7, 14, 21, 28):
        if pos >= end:
            raise MalformedMessage(f"{where}: message ends inside a varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
    raise MalformedMessage(f"{where}: varint is longer than 5 bytes")


def _uvarint_bytes(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


# The generated code raises through these, so that it stays short.


def _ends(where: str) -> None:
    raise MalformedMessage(f"{where}: message ends inside the field")


def _negative(where: str, value: int) -> None:
    if value == -1:
        raise MalformedMessage(f"{where}: non-nullable field was serialized as null")
    raise MalformedMessage(f"{where}: negative length {value}")


def _too_long(where: str, length: int, remaining: int) -> None:
    raise MalformedMessage(f"{where}: length {length} but only {remaining} bytes remain")


def _too_many(where: str, count: int, remaining: int) -> None:
    raise MalformedMessage(
        f"{where}: tried to allocate a collection of size {count}, "
        f"but there are only {remaining} bytes remaining"
    )


def _long_string(where: str, length: int) -> None:
    raise MalformedMessage(f"{where}: string field had invalid length {length}")
