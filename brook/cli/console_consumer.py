"""``brook console-consumer``: print records to stdout, as kafka-console-consumer.sh.

    brook console-consumer --bootstrap-server 127.0.0.1:9092 --topic t --from-beginning \\
        --property print.key=true --property print.timestamp=true --max-messages 10

Flags, checks and the default formatter's output are Kafka's (ConsoleConsumer,
DefaultMessageFormatter). Without ``--group`` the tool reads every partition of the topics
without joining a group (Kafka would join a throw-away generated group to the same effect);
with ``--group`` it subscribes as a member of that group and commits its offsets.
"""

from __future__ import annotations

import argparse
import re
import signal
import sys
import time
from collections.abc import Callable
from types import FrameType
from typing import Any, BinaryIO

from brook.client.config import resolve_deserializer
from brook.client.consumer import Consumer, ConsumerRecord, TimestampType

from .common import CommandError, ToolParser, client_properties, include_list, load_properties_file
from .common import run as run_tool

DEFAULT_FORMATTERS = (
    "org.apache.kafka.tools.consumer.DefaultMessageFormatter",
    "kafka.tools.DefaultMessageFormatter",
)
NOOP_FORMATTERS = (
    "org.apache.kafka.tools.consumer.NoOpMessageFormatter",
    "kafka.tools.NoOpMessageFormatter",
)
_TIMESTAMP_NAMES = {
    TimestampType.CREATE_TIME: "CreateTime",
    TimestampType.LOG_APPEND_TIME: "LogAppendTime",
}


def build_parser() -> ToolParser:
    p = ToolParser(
        prog="brook console-consumer",
        description="Read records from topics and write them to standard output.",
    )
    p.add_argument("--bootstrap-server", help="REQUIRED: the server(s) to connect to")
    p.add_argument("--topic", help="the topic to consume on")
    p.add_argument("--include", help="regular expression of the topics to consume")
    p.add_argument("--partition", type=int, help="the partition to consume from")
    p.add_argument(
        "--offset",
        default=None,
        help="'earliest', 'latest' (default) or a non-negative offset; needs --partition",
    )
    p.add_argument("--group", help="the consumer group to join")
    p.add_argument(
        "--from-beginning",
        action="store_true",
        help="start with the earliest record when there is no committed offset",
    )
    p.add_argument("--max-messages", type=int, help="exit after this many records")
    p.add_argument("--timeout-ms", type=int, help="exit when no record arrived for this long")
    p.add_argument(
        "--skip-message-on-error",
        action="store_true",
        help="skip a record that cannot be formatted instead of stopping",
    )
    p.add_argument(
        "--formatter",
        default=DEFAULT_FORMATTERS[0],
        help="the formatter class (the default formatter or the no-op one)",
    )
    p.add_argument("--formatter-config", help="properties file for the formatter")
    p.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="formatter property: print.timestamp, print.key, print.offset, "
        "print.partition, print.headers, print.value, key.separator, "
        "line.separator, headers.separator, null.literal, key.deserializer, "
        "value.deserializer, headers.deserializer",
    )
    p.add_argument(
        "--consumer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a consumer property",
    )
    p.add_argument(
        "--consumer.config",
        "--command-config",
        dest="consumer_config",
        metavar="FILE",
        help="consumer properties file",
    )
    p.add_argument("--key-deserializer", help="key deserializer for the formatter")
    p.add_argument("--value-deserializer", help="value deserializer for the formatter")
    p.add_argument(
        "--isolation-level",
        default="read_uncommitted",
        choices=("read_uncommitted", "read_committed"),
        help="read_committed leaves out records of aborted transactions",
    )
    return p


def check_args(p: ToolParser, a: argparse.Namespace) -> None:
    if not a.bootstrap_server:
        p.fail('Missing required argument "[bootstrap-server]"')
    if (a.topic is None) == (a.include is None):
        p.fail("Exactly one of include/topic is required.")
    if a.partition is not None and a.topic is None:
        p.fail("The topic is required when partition is specified.")
    if a.offset is not None and a.partition is None:
        p.fail("The partition is required when offset is specified.")
    if a.offset is not None and a.from_beginning:
        p.fail("Options from-beginning and offset cannot be specified together.")
    if a.group is not None and a.partition is not None:
        p.fail("Options group and partition cannot be specified together.")
    if a.offset is not None and a.offset not in ("earliest", "latest") and not a.offset.isdigit():
        p.fail(
            "The provided offset value is incorrect. Valid values are 'earliest', "
            "'latest', or a non-negative long."
        )


class MessageFormatter:
    """Kafka's DefaultMessageFormatter: the fields asked for, separated, then the line end."""

    def __init__(self, props: dict[str, str]) -> None:
        def flag(name: str, default: bool) -> bool:
            return props[name].strip().lower() == "true" if name in props else default

        self.print_timestamp = flag("print.timestamp", False)
        self.print_partition = flag("print.partition", False)
        self.print_offset = flag("print.offset", False)
        self.print_headers = flag("print.headers", False)
        self.print_key = flag("print.key", False)
        self.print_value = flag("print.value", True)
        self.key_separator = props.get("key.separator", "\t").encode()
        self.line_separator = props.get("line.separator", "\n").encode()
        self.headers_separator = props.get("headers.separator", ",").encode()
        self.null_literal = props.get("null.literal", "null").encode()
        self.key_deserializer = _deserializer(props, "key.deserializer")
        self.value_deserializer = _deserializer(props, "value.deserializer")
        self.headers_deserializer = _deserializer(props, "headers.deserializer")

    def _bytes(self, data: bytes | None, deserializer: Callable[[Any], Any] | None) -> bytes:
        raw = data if data is not None else self.null_literal
        if deserializer is None:
            return bytes(raw)
        value = deserializer(raw)
        return value if isinstance(value, bytes) else str(value).encode()

    def format(self, record: ConsumerRecord) -> bytes:
        fields: list[bytes] = []
        if self.print_timestamp:
            name = _TIMESTAMP_NAMES.get(record.timestamp_type)
            fields.append(f"{name}:{record.timestamp}".encode() if name else b"NO_TIMESTAMP")
        if self.print_partition:
            fields.append(f"Partition:{record.partition}".encode())
        if self.print_offset:
            fields.append(f"Offset:{record.offset}".encode())
        if self.print_headers:
            if record.headers:
                fields.append(
                    self.headers_separator.join(
                        k.encode() + b":" + self._bytes(v, self.headers_deserializer)
                        for k, v in record.headers
                    )
                )
            else:
                fields.append(b"NO_HEADERS")
        if self.print_key:
            fields.append(self._bytes(record.key, self.key_deserializer))
        if self.print_value:
            fields.append(self._bytes(record.value, self.value_deserializer))
        if not fields:
            return b""
        # A line ends after the value; when the value is not printed, the last field is
        # followed by the line separator, as Kafka writes it.
        return self.key_separator.join(fields) + self.line_separator


def _deserializer(props: dict[str, str], name: str) -> Callable[[Any], Any] | None:
    return resolve_deserializer(name, props[name]) if name in props else None


def consumer_config(a: argparse.Namespace) -> dict[str, Any]:
    props = client_properties(a.bootstrap_server, a.consumer_config, extra=a.consumer_property)
    if a.group is not None:
        if "group.id" in props and props["group.id"] != a.group:
            raise CommandError(
                f"Group id from --group ({a.group}) and consumer properties "
                f"({props['group.id']}) conflict"
            )
        props["group.id"] = a.group
    if a.from_beginning:
        props["auto.offset.reset"] = "earliest"
    else:
        props.setdefault("auto.offset.reset", "latest")
    props["isolation.level"] = a.isolation_level
    # Offsets are committed only for a group the user named.
    if "group.id" not in props:
        props["enable.auto.commit"] = False
    return props


class _State:
    """What the signal handler and the final count share."""

    def __init__(self) -> None:
        self.stop_requested = False
        self.processed = 0

    def stop(self, _signum: int, _frame: FrameType | None) -> None:
        self.stop_requested = True


def start(consumer: Consumer, a: argparse.Namespace, grouped: bool, state: _State) -> None:
    if a.partition is not None:
        tp = (a.topic, a.partition)
        consumer.assign([tp])
        if a.from_beginning or a.offset == "earliest":
            consumer.seek_to_beginning([tp])
        elif a.offset is None or a.offset == "latest":
            consumer.seek_to_end([tp])
        else:
            consumer.seek(tp, int(a.offset))
    elif grouped:
        if a.topic is not None:
            consumer.subscribe([a.topic])
        else:
            consumer.subscribe(re.compile(a.include))
    else:
        consumer.assign(_wait_for_partitions(consumer, a, state))


def _wait_for_partitions(
    consumer: Consumer, a: argparse.Namespace, state: _State
) -> list[tuple[str, int]]:
    """Every partition of the topics asked for, waiting for them to be created (as a
    subscribed consumer waits), within --timeout-ms when given."""
    allowed = include_list(a.include) if a.include is not None else (lambda t: t == a.topic)
    began = time.monotonic()
    while True:
        parts = [
            (t, p.partition) for t, ps in consumer.list_topics().items() if allowed(t) for p in ps
        ]
        waited_ms = (time.monotonic() - began) * 1000
        if (
            parts
            or state.stop_requested
            or (a.timeout_ms is not None and waited_ms >= a.timeout_ms)
        ):
            return parts
        time.sleep(0.5)


def consume(
    consumer: Consumer,
    a: argparse.Namespace,
    formatter: MessageFormatter | None,
    out: BinaryIO,
    state: _State,
) -> None:
    last_record = time.monotonic()
    while not state.stop_requested:
        if a.max_messages is not None and state.processed >= a.max_messages:
            break
        wait_ms = 1000 if a.timeout_ms is None else max(0, min(1000, a.timeout_ms))
        records = consumer.poll(timeout_ms=wait_ms)
        if not records:
            if a.timeout_ms is not None and (time.monotonic() - last_record) * 1000 >= a.timeout_ms:
                break
            continue
        last_record = time.monotonic()
        for record in records:
            if a.max_messages is not None and state.processed >= a.max_messages:
                break
            state.processed += 1
            if formatter is None:
                continue
            try:
                line = formatter.format(record)
            except Exception as exc:
                if not a.skip_message_on_error:
                    raise CommandError(
                        f"Error processing message, terminating consumer process: {exc}"
                    ) from exc
                continue
            out.write(line)
        out.flush()


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    check_args(parser, args)
    state = _State()
    previous = {sig: signal.signal(sig, state.stop) for sig in (signal.SIGINT, signal.SIGTERM)}

    def body() -> None:
        formatter_props: dict[str, str] = {}
        if args.formatter_config:
            formatter_props.update(load_properties_file(args.formatter_config))
        for item in args.property:
            key, sep, value = item.partition("=")
            if not sep:
                raise CommandError(f"Invalid property '{item}': expected the format key=value")
            formatter_props[key.strip()] = value
        if args.key_deserializer:
            formatter_props["key.deserializer"] = args.key_deserializer
        if args.value_deserializer:
            formatter_props["value.deserializer"] = args.value_deserializer
        if args.formatter in NOOP_FORMATTERS:
            formatter = None
        elif args.formatter in DEFAULT_FORMATTERS:
            formatter = MessageFormatter(formatter_props)
        else:
            raise CommandError(
                f"Unsupported formatter {args.formatter}: use "
                f"{DEFAULT_FORMATTERS[0]} or {NOOP_FORMATTERS[0]}"
            )
        props = consumer_config(args)
        with Consumer(props) as consumer:
            try:
                start(consumer, args, "group.id" in props and args.partition is None, state)
                consume(consumer, args, formatter, sys.stdout.buffer, state)
            finally:
                print(f"Processed a total of {state.processed} messages", file=sys.stderr)

    try:
        return run_tool(body, "Error processing message, terminating consumer process: ")
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
