"""What Brook's Kafka-style tools share: client properties from ``--bootstrap-server`` and
``--command-config``, Kafka's topic include-list filter, Kafka's text form of topic ids, its
tab-separated tables (ToolsUtils.prettyPrintTable), and the way Kafka's scripts report errors
(a message, exit code 1)."""

from __future__ import annotations

import argparse
import base64
import re
import sys
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from brook.config.defs import ConfigError, load_properties
from brook.protocol.errors import KafkaError, error_info

__all__ = [
    "CommandError",
    "ToolParser",
    "client_properties",
    "format_table",
    "include_list",
    "java_exception_text",
    "kafka_uuid",
    "parse_args",
    "parse_key_values",
    "run",
]


class CommandError(Exception):
    """A mistake in the command line or its files: printed alone, exit code 1."""


class ToolParser(argparse.ArgumentParser):
    """argparse with Kafka's usage-error convention: the message, then the usage, exit 1."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        print(f"{self.prog}: {message}", file=sys.stderr)
        sys.exit(1)

    def fail(self, message: str) -> NoReturn:
        """A usage error found after parsing (missing action, conflicting options)."""
        self.error(message)


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """Parse ``argv``; as Kafka's admin tools, no arguments at all prints the usage, exit 1."""
    if not argv:
        parser.print_help(sys.stderr)
        raise SystemExit(1)
    return parser.parse_args(_join_dash_values(parser, argv))


def _join_dash_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--opt -value`` as ``--opt=-value`` for options that take one value: argparse reads
    a value starting with a dash as an option, and Kafka's topic ids (URL-safe base64) may
    start with one. A value that is itself one of the parser's options is left alone."""
    options: set[str] = set()
    one_value: set[str] = set()
    for action in parser._actions:
        options.update(action.option_strings)
        if action.nargs is None:  # exactly one value
            one_value.update(action.option_strings)
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        following = argv[i + 1] if i + 1 < len(argv) else None
        if (
            arg in one_value
            and following is not None
            and following.startswith("-")
            and (following not in options)
        ):
            out.append(f"{arg}={following}")
            i += 2
        else:
            out.append(arg)
            i += 1
    return out


def add_connection_args(parser: argparse.ArgumentParser, config_help: str) -> None:
    parser.add_argument(
        "--bootstrap-server",
        metavar="HOST1:PORT1,...",
        help="REQUIRED: the Kafka-compatible broker(s) to connect to",
    )
    parser.add_argument("--command-config", metavar="FILE", help=config_help)


def load_properties_file(path: str) -> dict[str, str]:
    try:
        return load_properties(Path(path).read_text())
    except OSError as exc:
        raise CommandError(f"{path} ({exc.strerror})") from None


def client_properties(
    bootstrap: str | None,
    command_config: str | None,
    *,
    extra: Sequence[str] = (),
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Client properties: the --command-config file, then ``key=value`` pairs from
    ``extra`` (e.g. --producer-property), then ``overrides``, then --bootstrap-server."""
    props: dict[str, Any] = {}
    if command_config:
        props.update(load_properties_file(command_config))
    props.update(parse_key_values(extra))
    props.update(overrides or {})
    if bootstrap:
        props["bootstrap.servers"] = bootstrap
    if not props.get("bootstrap.servers"):
        raise CommandError("--bootstrap-server must be specified")
    return props


def parse_key_values(items: Sequence[str]) -> dict[str, str]:
    """``["a=1", "b = 2"]`` -> ``{"a": "1", "b": "2"}``; anything else names the bad item."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise CommandError(f"Invalid property '{item}': expected the format key=value")
        out[key.strip()] = value.strip()
    return out


def include_list(pattern: str | None) -> Callable[[str], bool]:
    """Kafka's topic IncludeList: a regex matched against the whole name; ',' means '|'.
    No pattern matches everything."""
    if pattern is None:
        return lambda _name: True
    text = pattern.strip().replace(",", "|").replace(" ", "")
    text = re.sub(r"""^["']+|["']+$""", "", text)
    try:
        compiled = re.compile(text)
    except re.error as exc:
        raise CommandError(f"{pattern} is an invalid regex: {exc}") from None
    return lambda name: compiled.fullmatch(name) is not None


# Error names whose Java exception is not the name in CamelCase + "Exception".
_JAVA_EXCEPTIONS = {
    "UNKNOWN_SERVER_ERROR": "UnknownServerException",
    "CLUSTER_AUTHORIZATION_FAILED": "ClusterAuthorizationException",
    "TOPIC_AUTHORIZATION_FAILED": "TopicAuthorizationException",
    "REQUEST_TIMED_OUT": "TimeoutException",
}


def java_exception_text(code: int, message: str | None) -> str:
    """An error as a Kafka tool prints the exception a Java client raises for it
    (``Throwable.toString``): ``org.apache.kafka.common.errors.NameException: message``."""
    name = error_info(code).name
    java = _JAVA_EXCEPTIONS.get(name) or "".join(w.capitalize() for w in name.split("_"))
    if not java.endswith("Exception"):
        java += "Exception"
    text = f"org.apache.kafka.common.errors.{java}"
    return f"{text}: {message}" if message else text


def format_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Kafka's ToolsUtils.prettyPrintTable: each column padded to its widest value, every
    value followed by a tab."""
    widths = [len(h) for h in headers]
    for row in rows:
        widths = [max(w, len(v)) for w, v in zip(widths, row, strict=True)]
    lines = [
        "".join(f"{v:<{w}}\t" for v, w in zip(row, widths, strict=True)) for row in [headers, *rows]
    ]
    return "\n".join(lines) + "\n"


def kafka_uuid(value: uuid.UUID | None) -> str:
    """A topic id as Kafka prints it: URL-safe base64 of the 16 bytes, no padding."""
    raw = (value or uuid.UUID(int=0)).bytes
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def run(body: Callable[[], int | None], error_prefix: str = "") -> int:
    """Run a tool body: CommandError / ConfigError -> the message on stderr, exit 1; a Kafka
    error -> ``error_prefix``, its name and message on stderr, exit 1."""
    try:
        return int(body() or 0)
    except (CommandError, ConfigError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KafkaError as exc:
        print(f"{error_prefix}{exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
