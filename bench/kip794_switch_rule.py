"""The partition-switch rule behind KIP-794's figures, for diagnosis (docs/experiments.md).

Brook switches as Kafka has since KAFKA-14156 (apache/kafka#12570, September 2022): once
batch.size bytes were counted for the sticky partition, the switch waits until that
partition's last batch is full, or until 2 x batch.size were counted. The implementation the
KIP measured (apache/kafka#12049, April 2022) switched as soon as batch.size bytes were
counted. Two ways to compare the rules:

    python -m bench.kip794_switch_rule tool <producer-perf-test arguments>
    python -m bench.kip794_switch_rule model [--records 122880]

``tool`` runs ``brook producer-perf-test`` with the earlier rule patched into Brook's
partitioner (``bench.kip794_experiment --switch-rule kip-2022`` runs it that way). ``model``
replays the experiment in simulated time with both rules: Brook's partitioner (Java's
decision logic, no I/O) over an idealised accumulator and sender that react at once, fast
nodes answering in 0.5 ms and node 0 serially in 20 ms; no client timing enters it.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from brook.client.partitioner import (
    BuiltInPartitioner,
    ClusterView,
    LoadStatsCollector,
    NodeLatencyTracker,
    StickyPartitionInfo,
)

RULES = ("current", "kip-2022")


def use_kip_2022_rule() -> None:
    """Make every BuiltInPartitioner switch as soon as batch.size bytes were counted, as
    apache/kafka#12049 did.

    The producer's accumulator counts the sticky partition's bytes itself and calls
    ``update_partition_info`` only when the shipped rule could switch: at batch.size bytes
    once the open batch is full, at twice batch.size while it is not. So the patched
    partitioner shows the accumulator half the batch size (the call then comes by batch.size
    bytes, full batch or not), and switches at the real batch size whatever the batch."""
    shipped_init = BuiltInPartitioner.__init__

    def __init__(
        self: BuiltInPartitioner,
        topic: str,
        sticky_batch_size: int,
        rng: random.Random | None = None,
    ) -> None:
        shipped_init(self, topic, sticky_batch_size, rng)
        self.kip_2022_switch_bytes = sticky_batch_size  # type: ignore[attr-defined]
        self.sticky_batch_size = max(1, sticky_batch_size // 2)

    def update_partition_info(
        self: BuiltInPartitioner,
        info: StickyPartitionInfo | None,
        appended_bytes: int,
        cluster: ClusterView,
        enable_switch: bool = True,
    ) -> None:
        if info is None:
            return
        with self._lock:
            if self.current is not info:
                return
            info.produced_bytes += appended_bytes
            if info.produced_bytes >= self.kip_2022_switch_bytes:  # type: ignore[attr-defined]
                self.current = StickyPartitionInfo(self.next_partition(cluster))

    BuiltInPartitioner.__init__ = __init__  # type: ignore[method-assign]
    BuiltInPartitioner.update_partition_info = update_partition_info  # type: ignore[method-assign]


# -- the model --------------------------------------------------------------------------------

RECORD_BYTES = 522  # a 512-byte value without key as a v2 record, length prefix included
BATCH_HEADER = 61
BATCH_SIZE = 16384
MAX_IN_FLIGHT = 5
FAST_MS = 0.5
SLOW_MS = 20.0
LEADERS = {0: 1, 1: 0, 2: 2}  # partition -> node; node 0 is slow, as in the experiment
BURST_MS = 2.0  # the perf tool's throttle sleeps in steps of at least 2 ms


class _Cluster:
    def partitions_for(self, topic: str) -> list[int]:
        return [0, 1, 2]

    def available_partitions_for(self, topic: str) -> list[int]:
        return [0, 1, 2]


@dataclass
class _Batch:
    size: int
    appended_ms: list[float]
    closed: bool = False

    def full(self) -> bool:
        return self.closed or self.size + RECORD_BYTES > BATCH_SIZE


@dataclass
class _Model:
    rule: str
    adaptive: bool
    availability_timeout_ms: int
    seed: int
    deques: dict[int, list[_Batch]] = field(default_factory=lambda: {p: [] for p in LEADERS})
    in_flight: dict[int, int] = field(default_factory=lambda: dict.fromkeys(LEADERS.values(), 0))
    slow_release_ms: float = 0.0
    records: dict[int, int] = field(default_factory=lambda: dict.fromkeys(LEADERS, 0))
    requests: dict[int, int] = field(default_factory=lambda: dict.fromkeys(LEADERS.values(), 0))
    latencies: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.cluster = _Cluster()
        self.partitioner = BuiltInPartitioner("foo", BATCH_SIZE, random.Random(self.seed))
        self.tracker = NodeLatencyTracker(self.availability_timeout_ms)

    def _deferring(self) -> bool:
        return self.rule == "current"

    def append(self, now: float) -> None:
        """RecordAccumulator.append for one unkeyed record (see brook.client.partitioner)."""
        bip = self.partitioner
        while True:
            info = bip.peek_current_partition(self.cluster)
            dq = self.deques[info.partition]
            all_full = not dq or dq[-1].full()
            if self._deferring() and all_full:
                if bip.partition_changed(info, True, self.cluster):
                    continue
            elif bip.is_partition_changed(info):
                continue
            if dq and not dq[-1].full():
                batch, appended = dq[-1], RECORD_BYTES
                batch.size += appended
            else:
                if dq:
                    dq[-1].closed = True
                batch = _Batch(BATCH_HEADER + RECORD_BYTES, [])
                appended = batch.size
                dq.append(batch)
            batch.appended_ms.append(now)
            bip.update_partition_info(
                info, appended, self.cluster, batch.full() or not self._deferring()
            )
            self.records[info.partition] += 1
            return

    def send(self, now: float) -> Iterator[tuple[float, int, _Batch]]:
        """One sender pass: load stats, node latency, one batch per ready node."""
        if self.adaptive:
            collector = LoadStatsCollector(len(self.deques), len(LEADERS))
            for p, dq in self.deques.items():
                collector.add(p, True, len(dq), node_excluded=self.tracker.excludes(LEADERS[p]))
            collector.publish(self.partitioner)
        for p, dq in self.deques.items():
            node = LEADERS[p]
            if not dq:
                continue
            can_send = self.in_flight[node] < MAX_IN_FLIGHT
            self.tracker.record(node, int(now), can_send)
            if not can_send:
                continue
            batch = dq.pop(0)
            batch.closed = True
            self.in_flight[node] += 1
            self.requests[node] += 1
            if node == 0:
                # Serial: the slow node starts on a request once the previous answer left.
                self.slow_release_ms = max(self.slow_release_ms, now) + SLOW_MS
                yield self.slow_release_ms, node, batch
            else:
                yield now + FAST_MS, node, batch


def run_model(
    rule: str,
    adaptive: bool,
    availability_timeout_ms: int,
    throughput: int,
    records: int,
    seed: int = 1,
) -> dict[str, Any]:
    model = _Model(rule, adaptive, availability_timeout_ms, seed)
    order = itertools.count()
    events: list[tuple[float, int, str, Any]] = []
    per_burst = throughput * BURST_MS / 1000
    scheduled = 0
    for burst in itertools.count():
        if scheduled >= records:
            break
        count = min(records, int((burst + 1) * per_burst)) - scheduled
        for _ in range(count):
            heapq.heappush(events, (burst * BURST_MS, next(order), "record", None))
        scheduled += count
    sender_due = False
    now = 0.0
    while events:
        now, _, kind, payload = heapq.heappop(events)
        if kind == "record":
            model.append(now)
        elif kind == "response":
            node, batch = payload
            model.in_flight[node] -= 1
            model.latencies.extend(now - t for t in batch.appended_ms)
        else:
            sender_due = False
            for at, node, batch in model.send(now):
                heapq.heappush(events, (at, next(order), "response", (node, batch)))
            continue
        if not sender_due:
            sender_due = True
            heapq.heappush(events, (now, next(order), "send", None))
    latencies = sorted(model.latencies)
    total = sum(model.records.values())
    return {
        "rule": rule,
        "adaptive": adaptive,
        "availability_timeout_ms": availability_timeout_ms,
        "throughput": throughput,
        "seconds": now / 1000,
        "record_share": {p: n / total for p, n in model.records.items()},
        "requests": model.requests,
        "avg_ms": sum(latencies) / len(latencies),
        "p99_ms": latencies[int(0.99 * len(latencies))],
    }


MODEL_CONFIGS = {"uniform": (False, 0), "default": (True, 0), "timeout5": (True, 5)}
MODEL_PLAN = [
    (2048, "uniform"),
    (2048, "default"),
    (2048, "timeout5"),
    (4096, "uniform"),
    (4096, "default"),
]


def model_report(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| throughput | partitioner config | switch rule | node 0's share of records "
        "| requests to node 0 | avg latency | p99 |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['throughput']} | {row['config']} | {row['rule']} "
            f"| {row['record_share'][1]:.1%} | {row['requests'][0]} | {row['avg_ms']:.1f} ms "
            f"| {row['p99_ms']:.0f} ms |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser(
        "tool", help="brook producer-perf-test with the KIP's switch rule", add_help=False
    )
    model = sub.add_parser("model", help="both switch rules in simulated time")
    model.add_argument("--records", type=int, default=122880)
    args, rest = parser.parse_known_args(argv)
    if args.command == "tool":
        from brook.cli.main import main as brook_main

        use_kip_2022_rule()
        raise SystemExit(brook_main(["producer-perf-test", *rest]))
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    rows = []
    for throughput, config in MODEL_PLAN:
        adaptive, timeout = MODEL_CONFIGS[config]
        for rule in RULES:
            row = run_model(rule, adaptive, timeout, throughput, args.records)
            rows.append({**row, "config": config})
    print(model_report(rows))


if __name__ == "__main__":
    main()
