"""The machinery behind every config table: declared keys, parsing, validation.

Each key is declared once (Kafka name, type, default, validator, doc). Parsing accepts the
strings of a .properties file or already-typed values, rejects unknown keys naming them,
and reports a bad value with the key and the expected form.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


class ConfigError(ValueError):
    """A configuration that cannot be used; the message names the key."""


class Type(enum.Enum):
    BOOLEAN = "boolean"
    INT = "int"
    SHORT = "short"
    LONG = "long"
    DOUBLE = "double"
    STRING = "string"
    LIST = "list"
    CLASS = "class"
    PASSWORD = "password"


_INT_BOUNDS = {
    Type.SHORT: (-(2**15), 2**15 - 1),
    Type.INT: (-(2**31), 2**31 - 1),
    Type.LONG: (-(2**63), 2**63 - 1),
}

NO_DEFAULT = object()


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: Type
    default: Any = NO_DEFAULT
    validator: Callable[[str, Any], None] | None = None
    doc: str = ""
    # Accepted for compatibility with Kafka's files but without effect in Brook.
    inert: bool = False

    @property
    def required(self) -> bool:
        return self.default is NO_DEFAULT


def at_least(low: float) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and value < low:
            raise ConfigError(f"Invalid value {value} for configuration {name}: must be >= {low}")

    return check


def between(low: float, high: float) -> Callable[[str, Any], None]:
    def check(name: str, value: Any) -> None:
        if value is not None and not low <= value <= high:
            raise ConfigError(
                f"Invalid value {value} for configuration {name}: must be in [{low}, {high}]"
            )

    return check


def one_of(*choices: str, case_insensitive: bool = False) -> Callable[[str, Any], None]:
    allowed = {c.lower() for c in choices} if case_insensitive else set(choices)

    def check(name: str, value: Any) -> None:
        if value is None:
            return
        values = value if isinstance(value, list) else [value]
        for v in values:
            probe = v.lower() if case_insensitive and isinstance(v, str) else v
            if probe not in allowed:
                raise ConfigError(
                    f"Invalid value {v} for configuration {name}: "
                    f"String must be one of: {', '.join(choices)}"
                )

    return check


def parse_value(key: ConfigKey, raw: Any) -> Any:
    """Convert ``raw`` (a string from a file or a typed value) to the key's type."""
    name, t = key.name, key.type
    if raw is None:
        return None
    try:
        if t is Type.BOOLEAN:
            if isinstance(raw, bool):
                return raw
            text = str(raw).strip().lower()
            if text in ("true", "false"):
                return text == "true"
            raise ValueError
        if t in _INT_BOUNDS:
            if isinstance(raw, bool):
                raise ValueError
            value = raw if isinstance(raw, int) else int(str(raw).strip())
            low, high = _INT_BOUNDS[t]
            if not low <= value <= high:
                raise ValueError
            return value
        if t is Type.DOUBLE:
            if isinstance(raw, bool):
                raise ValueError
            return float(raw)
        if t is Type.LIST:
            if isinstance(raw, (list, tuple)):
                return [str(v).strip() for v in raw]
            text = str(raw).strip()
            return [v.strip() for v in text.split(",") if v.strip()] if text else []
        if t is Type.CLASS:
            return raw if not isinstance(raw, str) else raw.strip()
        return str(raw) if not isinstance(raw, str) else raw.strip()
    except (TypeError, ValueError):
        raise ConfigError(
            f"Invalid value {raw!r} for configuration {name}: expected a value of type {t.value}"
        ) from None


class ConfigDef:
    """An ordered table of ConfigKeys for one component (server, topic, producer, ...)."""

    def __init__(self, component: str, keys: Iterable[ConfigKey]) -> None:
        self.component = component
        self.keys: dict[str, ConfigKey] = {}
        for key in keys:
            if key.name in self.keys:
                raise ValueError(f"{component} config {key.name} declared twice")
            self.keys[key.name] = key

    def __contains__(self, name: object) -> bool:
        return name in self.keys

    def __iter__(self) -> Iterator[ConfigKey]:
        return iter(self.keys.values())

    def key(self, name: str) -> ConfigKey:
        try:
            return self.keys[name]
        except KeyError:
            raise ConfigError(f"Unknown {self.component} configuration '{name}'") from None

    def parse_one(self, name: str, raw: Any) -> Any:
        key = self.key(name)
        value = parse_value(key, raw)
        if key.validator is not None:
            key.validator(name, value)
        return value

    def parse(self, props: Mapping[str, Any], allow_missing_required: bool = False) -> Config:
        unknown = [name for name in props if name not in self.keys]
        if unknown:
            names = ", ".join(f"'{n}'" for n in sorted(unknown))
            raise ConfigError(f"Unknown {self.component} configuration {names}")
        values: dict[str, Any] = {}
        for key in self.keys.values():
            if key.name in props:
                values[key.name] = self.parse_one(key.name, props[key.name])
            elif key.required:
                if not allow_missing_required:
                    raise ConfigError(
                        f"Missing required {self.component} configuration '{key.name}'"
                    )
            else:
                values[key.name] = key.default
        return Config(self, values, frozenset(props))


class Config(Mapping[str, Any]):
    """Parsed values by Kafka name; ``explicit`` tells which ones the user set."""

    def __init__(self, definition: ConfigDef, values: dict[str, Any], explicit: frozenset[str]):
        self.definition = definition
        self._values = values
        self.explicit = explicit
        # Keys whose names embed a variable part (``listener.name.<l>.<key>``), by full name;
        # the table that owns them validates and fills them (see config/server.py).
        self.prefixed: dict[str, Any] = {}

    def __getitem__(self, name: str) -> Any:
        try:
            return self._values[name]
        except KeyError:
            raise ConfigError(
                f"Unknown {self.definition.component} configuration '{name}'"
            ) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"Config({self.definition.component}, {self._values!r})"


def load_properties(text: str) -> dict[str, str]:
    """Parse Java .properties text (comments, ``key=value`` or ``key: value``, continuations)."""
    props: dict[str, str] = {}
    pending = ""
    for raw_line in text.splitlines():
        line = raw_line.strip() if not pending else raw_line.lstrip()
        if not pending and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending += line[:-1]
            continue
        line = pending + line
        pending = ""
        sep = len(line)
        for i, ch in enumerate(line):
            if ch in "=:" or ch.isspace():
                sep = i
                break
        key = line[:sep].strip()
        rest = line[sep:].lstrip()
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip()
        props[key] = rest
    return props
