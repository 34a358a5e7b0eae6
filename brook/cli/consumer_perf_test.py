"""``brook consumer-perf-test``: consume a number of records as a group member and report
throughput, as kafka-consumer-perf-test.sh.

    brook consumer-perf-test --bootstrap-server 127.0.0.1:9092 --topic foo --messages 100000

The header, the result line (and --show-detailed-stats lines) and the rebalance-time
accounting are Kafka's (ConsumerPerformance): time spent waiting for partitions to be
assigned is reported as rebalance.time.ms and left out of the fetch rates.
"""

from __future__ import annotations

import argparse
import random
import re
import time
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from brook.client.consumer import Consumer
from brook.client.metrics import format_metrics

from .common import CommandError, ToolParser, client_properties, run

MB = 1024 * 1024


def build_parser() -> ToolParser:
    p = ToolParser(
        prog="brook consumer-perf-test",
        description="This tool is used to verify the consumer performance.",
    )
    p.add_argument("--bootstrap-server", help="REQUIRED: the server(s) to connect to")
    p.add_argument("--topic", help="the topic to consume from")
    p.add_argument("--include", help="regular expression of the topics to consume")
    p.add_argument(
        "--group",
        default=f"perf-consumer-{random.randrange(100_000)}",
        help="the group id to consume on",
    )
    p.add_argument("--messages", type=int, help="REQUIRED: the number of messages to consume")
    p.add_argument(
        "--fetch-size",
        type=int,
        default=1024 * 1024,
        help="max.partition.fetch.bytes (default 1048576)",
    )
    p.add_argument(
        "--from-latest",
        action="store_true",
        help="without a committed offset, start at the latest record",
    )
    p.add_argument(
        "--socket-buffer-size",
        type=int,
        default=2 * 1024 * 1024,
        help="receive.buffer.bytes (default 2097152)",
    )
    p.add_argument(
        "--consumer.config",
        "--command-config",
        dest="consumer_config",
        metavar="FILE",
        help="consumer config properties file",
    )
    p.add_argument("--print-metrics", action="store_true", help="print the metrics")
    p.add_argument(
        "--show-detailed-stats", action="store_true", help="report stats every --reporting-interval"
    )
    p.add_argument(
        "--timeout",
        type=int,
        default=10_000,
        help="most ms allowed between returned records (default 10000)",
    )
    p.add_argument(
        "--reporting-interval",
        type=int,
        default=5000,
        help="ms between detailed stats (default 5000)",
    )
    p.add_argument(
        "--date-format",
        default="%Y-%m-%d %H:%M:%S:%f",
        help="strftime format of the reported times",
    )
    p.add_argument("--hide-header", action="store_true", help="leave out the header line")
    return p


class RebalanceTimer:
    """The rebalance listener of Kafka's tool: time from losing every partition (or from the
    start) to getting some back counts as rebalance time."""

    def __init__(self, start: float) -> None:
        self.join_start = start
        self.total_ms = 0
        self.round_ms = 0
        self.assigned: set[Any] = set()

    def on_partitions_revoked(self, partitions: Iterable[Any]) -> None:
        self.assigned -= set(partitions)
        if not self.assigned:
            self.join_start = time.time()

    def on_partitions_assigned(self, partitions: Iterable[Any]) -> None:
        if not self.assigned:
            elapsed = int((time.time() - self.join_start) * 1000)
            self.total_ms += elapsed
            self.round_ms += elapsed
        self.assigned |= set(partitions)

    def on_partitions_lost(self, partitions: Iterable[Any]) -> None:
        self.on_partitions_revoked(partitions)


def header(detailed: bool) -> str:
    first = "time, threadId" if detailed else "start.time, end.time"
    return (
        f"{first}, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
        "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
    )


def _date(fmt: str, seconds: float) -> str:
    text = datetime.fromtimestamp(seconds).strftime(fmt)
    # Java's default pattern ends in milliseconds (SSS); strftime's %f is microseconds.
    return text[:-3] if fmt.endswith("%f") else text


def consumer_config(a: argparse.Namespace) -> dict[str, Any]:
    props = client_properties(a.bootstrap_server, a.consumer_config)
    props.update(
        {
            "group.id": a.group,
            "receive.buffer.bytes": a.socket_buffer_size,
            "max.partition.fetch.bytes": a.fetch_size,
            "auto.offset.reset": "latest" if a.from_latest else "earliest",
            "check.crcs": False,
        }
    )
    props.setdefault("client.id", "perf-consumer-client")
    return props


def run_test(a: argparse.Namespace) -> None:
    if not a.bootstrap_server:
        raise CommandError('Missing required argument "[bootstrap-server]"')
    if a.messages is None:
        raise CommandError('Missing required argument "[messages]"')
    if (a.topic is None) == (a.include is None):
        raise CommandError("Exactly one of the options topic or include must be specified.")
    if not a.hide_header:
        print(header(a.show_detailed_stats), flush=True)
    with Consumer(consumer_config(a)) as consumer:
        start = time.time()
        timer = RebalanceTimer(start)
        consumer.subscribe([a.topic] if a.topic else re.compile(a.include), listener=timer)
        messages = read_bytes = 0
        last_messages = last_bytes = 0
        now = last_report = last_consumed = time.time()
        while messages < a.messages and (now - last_consumed) * 1000 <= a.timeout:
            records = consumer.poll(timeout_ms=100)
            now = time.time()
            if records:
                last_consumed = now
            for record in records:
                messages += 1
                read_bytes += max(0, record.serialized_key_size) + max(
                    0, record.serialized_value_size
                )
                if (now - last_report) * 1000 >= a.reporting_interval:
                    if a.show_detailed_stats:
                        print(
                            progress_line(
                                a,
                                read_bytes,
                                last_bytes,
                                messages,
                                last_messages,
                                last_report,
                                now,
                                timer.round_ms,
                            ),
                            flush=True,
                        )
                    timer.round_ms = 0
                    last_report, last_messages, last_bytes = now, messages, read_bytes
        if messages < a.messages:
            print(
                f"WARNING: Exiting before consuming the expected number of messages: timeout "
                f"({a.timeout} ms) exceeded. You can use the --timeout option to increase the "
                "timeout."
            )
        end = time.time()
        metrics = consumer.metrics() if a.print_metrics else None
    elapsed = max(end - start, 1e-3)
    fetch_ms = int((end - start) * 1000) - timer.total_ms
    mb = read_bytes / MB
    fetch_s = fetch_ms / 1000
    if not a.show_detailed_stats:
        print(
            f"{_date(a.date_format, start)}, {_date(a.date_format, end)}, {mb:.4f}, "
            f"{mb / elapsed:.4f}, {messages}, {messages / elapsed:.4f}, {timer.total_ms}, "
            f"{fetch_ms}, {_ratio(mb, fetch_s)}, {_ratio(messages, fetch_s)}"
        )
    if metrics:
        print(format_metrics(metrics))


def progress_line(
    a: argparse.Namespace,
    read_bytes: int,
    last_bytes: int,
    messages: int,
    last_messages: int,
    start: float,
    end: float,
    join_ms: int,
) -> str:
    elapsed_ms = max((end - start) * 1000, 1e-3)
    interval_mb = (read_bytes - last_bytes) / MB
    fetch_ms = int(elapsed_ms) - join_ms
    fetch_mb_s = 0.0 if fetch_ms <= 0 else 1000 * interval_mb / fetch_ms
    fetch_msg_s = 0.0 if fetch_ms <= 0 else 1000 * (messages - last_messages) / fetch_ms
    return (
        f"{_date(a.date_format, end)}, 0, {read_bytes / MB:.4f}, "
        f"{1000 * interval_mb / elapsed_ms:.4f}, {messages}, "
        f"{1000 * (messages - last_messages) / elapsed_ms:.4f}, {join_ms}, {fetch_ms}, "
        f"{fetch_mb_s:.4f}, {fetch_msg_s:.4f}"
    )


def _ratio(amount: float, seconds: float) -> str:
    # Java prints a double division by zero as Infinity / NaN.
    if seconds <= 0:
        return "NaN" if amount == 0 else "Infinity"
    return f"{amount / seconds:.4f}"


def main(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    return run(lambda: run_test(args), "Error: ")
