"""``brook console-producer``: send lines of standard input as records, as
kafka-console-producer.sh.

    printf 'k1\\tv1\\nk2\\tv2\\n' | brook console-producer --bootstrap-server 127.0.0.1:9092 \\
        --topic t --property parse.key=true

Flags, their producer settings and defaults, and the line reader's properties (parse.key,
key.separator, parse.headers, headers.delimiter, headers.separator, headers.key.separator,
ignore.error, null.marker) are Kafka's (ConsoleProducer, LineMessageReader).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from brook.client.producer import Producer, RecordMetadata

from .common import CommandError, ToolParser, client_properties, load_properties_file, run

LINE_READERS = ("org.apache.kafka.tools.LineMessageReader", "kafka.tools.LineMessageReader")
Record = tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]]]


def build_parser() -> ToolParser:
    p = ToolParser(
        prog="brook console-producer",
        description="Read lines from standard input and send them as records.",
    )
    p.add_argument("--bootstrap-server", help="REQUIRED: the server(s) to connect to")
    p.add_argument("--topic", help="REQUIRED: the topic to produce records to")
    p.add_argument("--sync", action="store_true", help="send each record and wait for it")
    p.add_argument(
        "--compression-codec",
        nargs="?",
        const="gzip",
        help="none, gzip (when given without a value), snappy, lz4 or zstd",
    )
    p.add_argument("--batch-size", type=int, help="batch.size (default 16384)")
    p.add_argument("--message-send-max-retries", type=int, help="retries (default 3)")
    p.add_argument("--retry-backoff-ms", type=int, help="retry.backoff.ms (default 100)")
    p.add_argument("--timeout", type=int, help="linger.ms (default 1000)")
    p.add_argument("--request-required-acks", help="acks (default -1)")
    p.add_argument("--request-timeout-ms", type=int, help="request.timeout.ms (default 1500)")
    p.add_argument("--max-block-ms", type=int, help="max.block.ms (default 60000)")
    p.add_argument("--max-memory-bytes", type=int, help="buffer.memory (default 33554432)")
    p.add_argument("--metadata-expiry-ms", type=int, help="metadata.max.age.ms (default 300000)")
    p.add_argument("--socket-buffer-size", type=int, help="send.buffer.bytes (default 102400)")
    p.add_argument("--line-reader", default=LINE_READERS[0], help="the record reader class")
    p.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a line reader property",
    )
    p.add_argument("--reader-config", help="properties file for the line reader")
    p.add_argument(
        "--producer-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a producer property",
    )
    p.add_argument(
        "--producer.config",
        "--command-config",
        dest="producer_config",
        metavar="FILE",
        help="producer properties file",
    )
    return p


# flag -> (producer property, the tool's default); an explicit flag wins over the config
# files, the default applies only when neither sets the property.
FLAG_SETTINGS: dict[str, tuple[str, Any]] = {
    "compression_codec": ("compression.type", "none"),
    "batch_size": ("batch.size", 16384),
    "message_send_max_retries": ("retries", 3),
    "retry_backoff_ms": ("retry.backoff.ms", 100),
    "timeout": ("linger.ms", 1000),
    "request_required_acks": ("acks", "-1"),
    "request_timeout_ms": ("request.timeout.ms", 1500),
    "max_block_ms": ("max.block.ms", 60000),
    "max_memory_bytes": ("buffer.memory", 33554432),
    "metadata_expiry_ms": ("metadata.max.age.ms", 300000),
    "socket_buffer_size": ("send.buffer.bytes", 102400),
}


def producer_config(a: argparse.Namespace) -> dict[str, Any]:
    props = client_properties(a.bootstrap_server, a.producer_config, extra=a.producer_property)
    for flag, (key, default) in FLAG_SETTINGS.items():
        value = getattr(a, flag)
        if value is not None:
            props[key] = value
        else:
            props.setdefault(key, default)
    props.setdefault("client.id", "console-producer")
    return props


class LineReader:
    """Kafka's LineMessageReader: optional headers, then an optional key, then the value."""

    def __init__(self, props: dict[str, str]) -> None:
        def flag(name: str) -> bool:
            return props.get(name, "false").strip().lower() == "true"

        self.parse_key = flag("parse.key")
        self.parse_headers = flag("parse.headers")
        self.ignore_error = flag("ignore.error")
        self.key_separator = props.get("key.separator", "\t")
        self.headers_delimiter = props.get("headers.delimiter", "\t")
        self.headers_separator = props.get("headers.separator", ",")
        self.headers_key_separator = props.get("headers.key.separator", ":")
        self.null_marker = props.get("null.marker")
        pairs = [
            (
                "headers.delimiter",
                self.headers_delimiter,
                "headers.separator",
                self.headers_separator,
            ),
            (
                "headers.delimiter",
                self.headers_delimiter,
                "headers.key.separator",
                self.headers_key_separator,
            ),
            (
                "headers.separator",
                self.headers_separator,
                "headers.key.separator",
                self.headers_key_separator,
            ),
            ("null.marker", self.null_marker, "key.separator", self.key_separator),
            ("null.marker", self.null_marker, "headers.separator", self.headers_separator),
            ("null.marker", self.null_marker, "headers.delimiter", self.headers_delimiter),
            ("null.marker", self.null_marker, "headers.key.separator", self.headers_key_separator),
        ]
        for name_a, value_a, name_b, value_b in pairs:
            if value_a == value_b:
                raise CommandError(f"{name_a} and {name_b} may not be equal")
        # Kafka splits headers on headers.separator as a regular expression.
        self.headers_pattern = re.compile(self.headers_separator)
        self.line_number = 0

    def _cut(self, enabled: bool, line: str, start: int, separator: str, what: str) -> str | None:
        if not enabled:
            return None
        index = line.find(separator, start)
        if index == -1:
            if self.ignore_error:
                return None
            raise CommandError(f"No {what} found on line number {self.line_number}: '{line}'")
        return line[start:index]

    def _bytes(self, text: str | None) -> bytes | None:
        return None if text is None or text == self.null_marker else text.encode()

    def parse(self, line: str) -> Record:
        self.line_number += 1
        headers_text = self._cut(
            self.parse_headers, line, 0, self.headers_delimiter, "headers delimiter"
        )
        at = 0 if headers_text is None else len(headers_text) + len(self.headers_delimiter)
        key = self._cut(self.parse_key, line, at, self.key_separator, "key separator")
        at += 0 if key is None else len(key) + len(self.key_separator)
        headers: list[tuple[str, bytes | None]] = []
        if headers_text is not None and headers_text != self.null_marker:
            for pair in self.headers_pattern.split(headers_text):
                i = pair.find(self.headers_key_separator)
                if i == -1:
                    if not self.ignore_error:
                        raise CommandError(
                            f"No header key separator found in pair '{pair}' on "
                            f"line number {self.line_number}"
                        )
                    headers.append((pair, None))
                    continue
                name = pair[:i]
                if name == self.null_marker:
                    raise CommandError(
                        "Header keys should not be equal to the null marker "
                        f"'{self.null_marker}' as they can't be null"
                    )
                headers.append((name, self._bytes(pair[i + len(self.headers_key_separator) :])))
        return self._bytes(key), self._bytes(line[at:]), headers

    def records(self, stream: TextIO) -> Iterator[Record]:
        for raw in stream:
            yield self.parse(raw[:-1] if raw.endswith("\n") else raw)


def _report_failure(topic: str, key: bytes | None, value: bytes | None) -> Any:
    def on_delivery(_metadata: RecordMetadata | None, error: BaseException | None) -> None:
        if error is not None:
            key_size = -1 if key is None else len(key)
            value_size = -1 if value is None else len(value)
            print(
                f"Error when sending message to topic {topic} with key: {key_size} bytes, "
                f"value: {value_size} bytes with error: {error}",
                file=sys.stderr,
            )

    return on_delivery


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.bootstrap_server:
        parser.fail('Missing required argument "[bootstrap-server]"')
    if not args.topic:
        parser.fail('Missing required argument "[topic]"')

    def body() -> None:
        if args.line_reader not in LINE_READERS:
            raise CommandError(f"Unsupported line reader {args.line_reader}: use {LINE_READERS[0]}")
        reader_props = load_properties_file(args.reader_config) if args.reader_config else {}
        for item in args.property:
            name, sep, value = item.partition("=")
            if not sep:
                raise CommandError(f"Invalid property '{item}': expected the format key=value")
            reader_props[name.strip()] = value
        reader = LineReader(reader_props)
        with Producer(producer_config(args)) as producer:
            for key, value, headers in reader.records(sys.stdin):
                future = producer.send(
                    args.topic,
                    value,
                    key,
                    headers=headers or None,
                    on_delivery=_report_failure(args.topic, key, value),
                )
                if args.sync:
                    future.result()

    return run(body, "Error when sending messages: ")
