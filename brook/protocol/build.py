"""Build a kio message of any version from plain Python data.

Handlers describe a response once, as nested dicts holding every field of the newest
version; ``build(cls, data)`` keeps the fields that ``cls`` (one version's class) has, drops
the rest, converts nested dicts and lists into that version's nested classes, and turns
plain ints into the types kio's writers expect (error codes, millisecond timedeltas and
timestamps). Fields a version lacks simply disappear, so a handler never branches on
version for a field's presence.
"""

from __future__ import annotations

import dataclasses
import datetime
import types
import typing
from collections.abc import Mapping
from functools import cache
from typing import Any

from kio.schema.errors import ErrorCode

_UTC = datetime.UTC
_SCALAR, _ENTITY, _ENTITY_SEQ, _ERROR, _TD, _DT = range(6)


def _entity_type(tp: Any) -> type | None:
    """The dataclass inside ``tp`` (``X``, ``X | None``), if any."""
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return tp
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        for arg in typing.get_args(tp):
            if dataclasses.is_dataclass(arg) and isinstance(arg, type):
                return arg
    return None


def _tuple_item(tp: Any) -> Any | None:
    """The item type of ``tuple[X, ...]`` or ``tuple[X, ...] | None``, else None."""
    if typing.get_origin(tp) is tuple:
        return typing.get_args(tp)[0]
    if isinstance(tp, types.UnionType) or typing.get_origin(tp) is typing.Union:
        for arg in typing.get_args(tp):
            if typing.get_origin(arg) is tuple:
                return typing.get_args(arg)[0]
    return None


@cache
def _plan(cls: type) -> tuple[tuple[str, int, Any], ...]:
    hints = typing.get_type_hints(cls)
    plan = []
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        kafka_type = f.metadata.get("kafka_type")
        if kafka_type == "error_code":
            plan.append((f.name, _ERROR, None))
        elif kafka_type in ("timedelta_i32", "timedelta_i64"):
            plan.append((f.name, _TD, None))
        elif kafka_type == "datetime_i64":
            plan.append((f.name, _DT, None))
        elif _tuple_item(tp) is not None:
            inner = _entity_type(_tuple_item(tp))
            plan.append((f.name, _ENTITY_SEQ if inner else _SCALAR, inner))
        else:
            inner = _entity_type(tp)
            plan.append((f.name, _ENTITY if inner else _SCALAR, inner))
    return tuple(plan)


def build(cls: type, data: Mapping[str, Any] | Any) -> Any:
    """An instance of ``cls`` from ``data`` (a mapping, or already an instance)."""
    if not isinstance(data, Mapping):
        return data
    kwargs: dict[str, Any] = {}
    for name, kind, inner in _plan(cls):
        if name not in data:
            continue
        value = data[name]
        if kind == _SCALAR:
            pass
        elif kind == _ERROR:
            value = ErrorCode(value)
        elif kind == _TD:
            if isinstance(value, int):
                value = datetime.timedelta(milliseconds=value)
        elif kind == _DT:
            if isinstance(value, int):
                value = from_ms(value)
        elif kind == _ENTITY:
            value = None if value is None else build(inner, value)
        elif value is not None:
            value = tuple(build(inner, item) for item in value)
        kwargs[name] = value
    return cls(**kwargs)


def from_ms(ms: int) -> datetime.datetime:
    return datetime.datetime.fromtimestamp(ms / 1000, _UTC)


def to_ms(value: datetime.datetime | datetime.timedelta | int | None, default: int = -1) -> int:
    """Milliseconds from a kio datetime / timedelta field (None -> ``default``)."""
    if value is None:
        return default
    if isinstance(value, datetime.datetime):
        return round(value.timestamp() * 1000)
    if isinstance(value, datetime.timedelta):
        return round(value.total_seconds() * 1000)
    return int(value)
