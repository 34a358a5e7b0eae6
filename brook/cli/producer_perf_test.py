"""``brook producer-perf-test``: produce a fixed number of records as fast as allowed and
report throughput and latency, as kafka-producer-perf-test.sh.

    brook producer-perf-test --topic foo --num-records 122880 --record-size 512 \\
        --throughput 2048 --producer-props bootstrap.servers=127.0.0.1:9092 --print-metrics

Latency is measured as Kafka's tool measures it: per record, from just before ``send`` to the
delivery callback, in whole milliseconds; the periodic lines (every 5 s) and the final line
have Kafka's wording and number formats. Payloads for --record-size are random upper-case
letters, as Kafka's; they are drawn once into a pool of 1024 payloads that records cycle
through, so that making them does not cost the producer its throughput.

``--latency-file PATH`` (Brook's own option, not Kafka's) also writes every record's outcome,
one CSV line each in the order the callbacks ran: its send time (ms since the epoch), its
latency (ms; -1 when it failed) and its partition. The 5-second lines are too coarse to show
what one event (a leader moving, a broker stopping) does to latency, and the final line's
percentiles say nothing about when; this file says both, at the cost of a buffered write per
callback.
"""

from __future__ import annotations

import argparse
import contextlib
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from brook.client.metrics import format_metrics
from brook.client.producer import Producer

from .common import CommandError, ToolParser, client_properties, run

PAYLOAD_POOL = 1024
REPORTING_INTERVAL_MS = 5000


def build_parser() -> ToolParser:
    p = ToolParser(
        prog="brook producer-perf-test",
        description="This tool is used to verify the producer performance.",
    )
    p.add_argument("--topic", required=True, help="produce messages to this topic")
    p.add_argument("--num-records", type=int, required=True, help="number of messages to produce")
    payload = p.add_mutually_exclusive_group(required=True)
    payload.add_argument("--record-size", type=int, help="message size in bytes")
    payload.add_argument(
        "--payload-file", help="file of UTF-8 payloads, one picked at random per message"
    )
    payload.add_argument(
        "--payload-monotonic", action="store_true", help="payloads are increasing integers"
    )
    p.add_argument(
        "--payload-delimiter",
        default="\\n",
        help="delimiter of the payloads in --payload-file (default: new line)",
    )
    p.add_argument(
        "--throughput",
        type=float,
        required=True,
        help="throttle to about THROUGHPUT messages/sec; -1 disables throttling",
    )
    p.add_argument(
        "--producer-props",
        nargs="+",
        default=None,
        metavar="PROP-NAME=PROP-VALUE",
        help="producer properties; they take precedence over --producer.config",
    )
    p.add_argument(
        "--producer.config",
        "--command-config",
        dest="producer_config",
        metavar="CONFIG-FILE",
        help="producer config properties file",
    )
    p.add_argument("--print-metrics", action="store_true", help="print metrics at the end")
    p.add_argument(
        "--warmup-records",
        type=int,
        default=0,
        help="records left out of the steady-state statistics (default: 0)",
    )
    p.add_argument(
        "--latency-file",
        metavar="PATH",
        help="Brook only: write send_ms,latency_ms,partition for every record to PATH "
        "(latency -1: the record failed)",
    )
    p.add_argument(
        "--transactional-id",
        help="the transactional id of the producer; turns transactions on "
        f"(default when --transaction-duration-ms is given: {DEFAULT_TRANSACTIONAL_ID})",
    )
    p.add_argument(
        "--transaction-duration-ms",
        type=int,
        help="commit a transaction once it is this old; turns transactions on "
        f"(default when --transactional-id is given: {DEFAULT_TRANSACTION_DURATION_MS})",
    )
    return p


DEFAULT_TRANSACTIONAL_ID = "performance-producer-default-transactional-id"
DEFAULT_TRANSACTION_DURATION_MS = 3000


def transaction_duration_ms(a: argparse.Namespace) -> int | None:
    """How old a transaction may get before it is committed; None: no transactions. As
    Kafka's tool, either flag turns them on and the other takes its default."""
    if a.transactional_id is None and a.transaction_duration_ms is None:
        return None
    if a.transaction_duration_ms is None:
        return DEFAULT_TRANSACTION_DURATION_MS
    return int(a.transaction_duration_ms)


class ThroughputThrottler:
    """Kafka's ThroughputThrottler: sleep off the deficit in steps of at least 2 ms."""

    MIN_SLEEP_NS = 2_000_000

    def __init__(self, target: float, start_ms: float) -> None:
        self.target = target
        self.start_ms = start_ms
        self.sleep_time_ns = int(1e9 / target) if target > 0 else None
        self.deficit_ns = 0

    def should_throttle(self, amount_so_far: int, send_start_ms: float) -> bool:
        if self.target < 0:
            return False
        elapsed_s = (send_start_ms - self.start_ms) / 1000
        return elapsed_s > 0 and amount_so_far / elapsed_s > self.target

    def throttle(self) -> None:
        if self.sleep_time_ns is None:  # a target of 0: send nothing more
            while True:
                time.sleep(3600)
        self.deficit_ns += self.sleep_time_ns
        if self.deficit_ns >= self.MIN_SLEEP_NS:
            time.sleep(self.deficit_ns / 1e9)
            self.deficit_ns = 0


class Stats:
    """Kafka's ProducerPerformance.Stats: totals, 5-second windows, sampled latencies."""

    def __init__(self, num_records: int, steady_state: bool = False) -> None:
        self.start = self.window_start = _now_ms()
        self.sampling = max(1, num_records // min(num_records, 500_000))
        self.latencies: list[int] = []
        self.iteration = self.count = self.bytes = self.total_latency = 0
        self.max_latency = 0
        self.steady_state = steady_state
        self.suppress = False
        self._new_window()

    def _new_window(self) -> None:
        self.window_start = _now_ms()
        self.window_count = self.window_bytes = self.window_total_latency = 0
        self.window_max_latency = 0

    def record(self, latency: int, size: int, now: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency
        self.max_latency = max(self.max_latency, latency)
        self.window_count += 1
        self.window_bytes += size
        self.window_total_latency += latency
        self.window_max_latency = max(self.window_max_latency, latency)
        if self.iteration % self.sampling == 0:
            self.latencies.append(latency)
        if now - self.window_start >= REPORTING_INTERVAL_MS:
            if self.steady_state and self.count == self.window_count:
                print("In steady state.", flush=True)
            if not self.suppress:
                self.print_window()
            self._new_window()
        self.iteration += 1

    def print_window(self) -> None:
        elapsed = max(1, _now_ms() - self.window_start)
        print(
            f"{self.window_count} records sent, "
            f"{1000 * self.window_count / elapsed:.1f} records/sec "
            f"({1000 * self.window_bytes / elapsed / (1024 * 1024):.2f} MB/sec), "
            f"{self.window_total_latency / max(1, self.window_count):.1f} ms avg latency, "
            f"{float(self.window_max_latency):.1f} ms max latency.",
            flush=True,
        )

    def total_line(self) -> str:
        elapsed = max(1, _now_ms() - self.start)
        percentiles = _percentiles(self.latencies, 0.5, 0.95, 0.99, 0.999)
        return (
            f"{self.count}{' steady state' if self.steady_state else ''} records sent, "
            f"{1000 * self.count / elapsed:f} records/sec "
            f"({1000 * self.bytes / elapsed / (1024 * 1024):.2f} MB/sec), "
            f"{self.total_latency / max(1, self.count):.2f} ms avg latency, "
            f"{float(self.max_latency):.2f} ms max latency, "
            f"{percentiles[0]} ms 50th, {percentiles[1]} ms 95th, {percentiles[2]} ms 99th, "
            f"{percentiles[3]} ms 99.9th."
        )


def _percentiles(latencies: list[int], *fractions: float) -> list[int]:
    ordered = sorted(latencies)
    if not ordered:
        return [0 for _ in fractions]
    return [ordered[min(len(ordered) - 1, int(f * len(ordered)))] for f in fractions]


def _now_ms() -> int:
    return int(time.time() * 1000)


def payloads(a: argparse.Namespace) -> Callable[[int], bytes]:
    """i -> the payload of record i."""
    if a.record_size is not None:
        rng = random.Random(0)
        pool = [bytes(rng.choices(range(65, 91), k=a.record_size)) for _ in range(PAYLOAD_POOL)]
        return lambda i: pool[i % PAYLOAD_POOL]
    if a.payload_monotonic:
        return lambda i: str(i).encode()
    path = Path(a.payload_file)
    print(f"Reading payloads from: {path.resolve()}")
    if not path.is_file() or path.stat().st_size == 0:
        raise CommandError("File does not exist or empty file provided.")
    delimiter = "\n" if a.payload_delimiter == "\\n" else a.payload_delimiter
    items = [p.encode() for p in path.read_text(encoding="utf-8").split(delimiter) if p]
    print(f"Number of messages read: {len(items)}")
    rng = random.Random(0)
    return lambda _i: items[rng.randrange(len(items))]


def producer_config(a: argparse.Namespace) -> dict[str, Any]:
    if a.producer_props is None and a.producer_config is None:
        raise CommandError("Either --producer-props or --producer.config must be specified.")
    for prop in a.producer_props or ():
        if prop.count("=") != 1:
            raise CommandError(f"Invalid property: {prop}")
    props = client_properties(None, a.producer_config, extra=a.producer_props or ())
    props.setdefault("client.id", "perf-producer-client")
    if transaction_duration_ms(a) is not None:
        props["transactional.id"] = a.transactional_id or DEFAULT_TRANSACTIONAL_ID
    return props


def check_args(a: argparse.Namespace) -> None:
    if a.num_records <= 0:
        raise CommandError("--num-records should be greater than zero")
    if a.warmup_records >= a.num_records:
        raise CommandError(
            "The value for --warmup-records must be strictly fewer than the "
            "number of records in the test, --num-records."
        )
    if a.record_size is not None and a.record_size <= 0:
        raise CommandError("--record-size should be greater than zero")
    if a.transaction_duration_ms is not None and a.transaction_duration_ms <= 0:
        raise CommandError("--transaction-duration-ms should be greater than zero")


def run_test(a: argparse.Namespace) -> None:
    check_args(a)
    payload_for = payloads(a)
    with contextlib.ExitStack() as stack:
        trace = None
        if a.latency_file is not None:
            trace = stack.enter_context(open(a.latency_file, "w", buffering=1 << 20))
            trace.write("send_ms,latency_ms,partition\n")
        producer = stack.enter_context(Producer(producer_config(a)))
        _produce(a, producer, payload_for, trace)


def _produce(
    a: argparse.Namespace,
    producer: Producer,
    payload_for: Callable[[int], bytes],
    trace: TextIO | None,
) -> None:
    if a.warmup_records > 0:
        print(
            f"Warmup first {a.warmup_records} records. Steady state results will print "
            "after the complete test summary."
        )
    stats = Stats(a.num_records)
    steady: Stats | None = None
    start_ms = _now_ms()
    throttler = ThroughputThrottler(a.throughput, start_ms)
    send = producer.send
    topic = a.topic
    txn_ms = transaction_duration_ms(a)
    txn_start: int | None = None
    if txn_ms is not None:
        producer.init_transactions()
    for i in range(a.num_records):
        payload = payload_for(i)
        send_start = _now_ms()
        if txn_ms is not None and txn_start is None:
            producer.begin_transaction()
            txn_start = send_start
        if a.warmup_records > 0 and i == a.warmup_records:
            steady = Stats(a.num_records - a.warmup_records, steady_state=True)
            stats.suppress = True
        # As Kafka's tool: a record sent during the warm-up counts in the totals only.
        callback = _callback(send_start, len(payload), stats, steady, trace)
        send(topic, payload, on_delivery=callback)
        if txn_ms is not None and txn_start is not None and _now_ms() - txn_start >= txn_ms:
            producer.commit_transaction()
            txn_start = None
        if throttler.should_throttle(i, send_start):
            throttler.throttle()
    if txn_start is not None:
        producer.commit_transaction()
    producer.flush()
    print(stats.total_line())
    if steady is not None:
        print(steady.total_line())
    if a.print_metrics:
        print(format_metrics(producer.metrics()))


def _callback(
    start: int, size: int, stats: Stats, steady: Stats | None, trace: TextIO | None
) -> Callable[[Any, BaseException | None], None]:
    def on_delivery(metadata: Any, error: BaseException | None) -> None:
        if error is not None:
            print(f"Error sending record: {error}", file=sys.stderr)
            if trace is not None:
                partition = -1 if metadata is None else metadata.partition
                trace.write(f"{start},-1,{partition}\n")
            return
        now = _now_ms()
        latency = now - start
        stats.record(latency, size, now)
        if steady is not None:
            steady.record(latency, size, now)
        if trace is not None:
            trace.write(f"{start},{latency},{metadata.partition}\n")

    return on_delivery


def main(argv: list[str]) -> int:
    parser = build_parser()
    if not argv:
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    return run(lambda: run_test(args), "Error: ")
