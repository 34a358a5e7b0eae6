"""KIP-951's experiment on one command: produce latency while leadership of every partition
of a 100-partition topic moves, with the producer's leader discovery on and off.

    python -m bench.kip951_experiment [--runs 3] [--seconds 60] [--rate 2000] [--acks all]
                                      [--move reassign|shutdown] [--clients ...]

The seed ran kafka-producer-perf-test.sh against a Kafka 3.7 cluster while "reassigning
leadership of all partitions of a 100 partition topic", three runs each before and after the
change, and reported p99.9 produce latency falling from 1675 ms to 215 ms (-88%). Here each
run gets a fresh 3-node ``brook cluster`` (LocalCluster: three ``brook server`` processes,
each controller and broker) holding a topic of 100 partitions with replication factor 3. A
producer sends ``--rate`` records/s of 1000 bytes (the seed's size: 95.37 MB/s at 100,000
records/s) for ``--seconds``; half-way through, leadership of all 100 partitions moves:

- ``reassign`` (the seed's, the default): AlterPartitionReassignments with each partition's
  replicas in a new order (the same replicas, so it completes at once and no data moves) and
  a preferred-leader election. Every old leader stays up and answers NOT_LEADER_OR_FOLLOWER
  carrying the new leader, which is KIP-951's case;
- ``shutdown``: the topic is laid out with every partition led by one node, and that node is
  stopped (SIGTERM: a controlled shutdown moves its leaderships first), then restarted.

The producers, each in a process of its own, with the seed's producer settings (Kafka 3.7's
defaults: acks=all, linger.ms=0, batch.size=16384, retry.backoff.ms=100,
retry.backoff.max.ms=1000; idempotence on with acks=all):

- ``brook-off`` / ``brook-on``: ``brook producer-perf-test`` with
  ``brook.leader.discovery.enable`` false / true, and ``--latency-file`` for every record's
  send time and latency (its final line gives the percentiles of the table, as the seed's);
- ``librdkafka``: confluent-kafka (librdkafka implements KIP-951) in a small loop at the same
  rate, its latency measured as the tool measures it, from just before ``produce`` to the
  delivery callback, with the tool's own statistics and final line (a cross-check).

Results go to bench/results/kip951_experiment*.json (per-run figures, the move, latency per
100 ms of send time, every record sent around the move; the name says --acks 1, --move
shutdown and shortened runs), the latency-over-time plot to docs/images/kip951_latency.png (with
``--plot``), and the markdown table for docs/experiments.md is printed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic
from brook.client.admin.types import ElectionType

from .common import ROOT, machine, perf_test_command, save
from .kip794_experiment import parse_output

PARTITIONS = 100
REPLICATION = 3
NODES = 3
RECORD_SIZE = 1000  # the seed: 40,000,000 records, 95.37 MB/s at ~100,000 records/s
PAYLOAD_POOL = 1024
BUCKET_MS = 100  # latency over time: one point per 100 ms of send time
SLOW_MS = 100
# "Around the move": records sent from 1 s before the move began to 5 s after.
NEAR_BEFORE_MS = 1000
NEAR_AFTER_MS = 5000
# The plot's zoom: every record sent from 0.5 s before the move to 1.5 s after.
ZOOM_BEFORE_MS = 500
ZOOM_AFTER_MS = 1500
DEFAULT_PLOT = ROOT / "docs" / "images" / "kip951_latency.png"
WAIT_S = 60.0
REPORTING_INTERVAL_S = 5.0  # the tool's (and the worker's) periodic lines

# Kafka 3.7's producer defaults, which the seed ran (its tool, no overrides published).
SEED_PROPERTIES = {
    "linger.ms": "0",
    "batch.size": "16384",
    "retry.backoff.ms": "100",
    "retry.backoff.max.ms": "1000",
}

CLIENTS = {
    "brook-off": "Brook, leader discovery off",
    "brook-on": "Brook, leader discovery on",
    "librdkafka": "librdkafka (confluent-kafka)",
}

# The seed's published figures (tools' final lines; "after" only as the average of 3 runs).
SEED_BASELINE_RUNS = [
    {"p50_ms": 6, "p95_ms": 8, "p99_ms": 12, "p999_ms": 2967, "max_ms": 8087.0, "avg_ms": 12.56},
    {"p50_ms": 6, "p95_ms": 8, "p99_ms": 13, "p999_ms": 859, "max_ms": 11652.0, "avg_ms": 15.51},
    {"p50_ms": 6, "p95_ms": 8, "p99_ms": 14, "p999_ms": 1201, "max_ms": 3224.0, "avg_ms": 8.63},
]
SEED_P999_BEFORE = 1675
SEED_P999_AFTER = 215


@dataclass
class Move:
    """One leadership move: when (ms since the epoch) and the leaders before and after."""

    kind: str
    started_ms: int
    ended_ms: int
    before: dict[int, int]
    after: dict[int, int]
    stopped_node: int | None = None

    @property
    def moved(self) -> int:
        return sum(1 for p, leader in self.before.items() if self.after.get(p) != leader)


def now_ms() -> int:
    return int(time.time() * 1000)


# -- the cluster side -------------------------------------------------------------------------


def leaders(admin: Admin, topic: str) -> dict[int, int]:
    desc = admin.describe_topics([topic])[topic]
    return {p.partition: p.leader for p in desc.partitions}


def wait_leaders(
    admin: Admin,
    topic: str,
    ok: Any,
    what: str,
    timeout: float = WAIT_S,
    partitions: int = PARTITIONS,
) -> dict[int, int]:
    """Poll the topic's leaders until ``ok(leaders)`` holds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            found = leaders(admin, topic)
        except Exception:  # the topic is still being created, a node stopping
            found = {}
        if len(found) == partitions and ok(found):
            return found
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: {what} not reached in {timeout:.0f} s: {found}")
        time.sleep(0.1)


def create_topic(admin: Admin, topic: str, move: str, brokers: list[int]) -> dict[int, int]:
    """The 100-partition topic; for ``shutdown`` every partition is led by ``brokers[0]``."""
    if move == "shutdown":
        first, others = brokers[0], brokers[1:]
        assignment = {
            p: [first, *others[p % len(others) :], *others[: p % len(others)]]
            for p in range(PARTITIONS)
        }
        admin.create_topics([NewTopic(topic, replica_assignment=assignment)])
    else:
        admin.create_topics([NewTopic(topic, PARTITIONS, REPLICATION)])
    return wait_leaders(admin, topic, lambda ls: all(v >= 0 for v in ls.values()), "leaders")


def move_leaders(cluster: LocalCluster, admin: Admin, topic: str, kind: str) -> Move:
    """Move the leadership of every partition of ``topic`` (see the module's docstring)."""
    desc = admin.describe_topics([topic])[topic]
    before = {p.partition: p.leader for p in desc.partitions}
    stopped = None
    started = now_ms()
    if kind == "reassign":
        admin.alter_partition_reassignments(
            {(topic, p.partition): (*p.replicas[1:], p.replicas[0]) for p in desc.partitions}
        )
        admin.elect_leaders(ElectionType.PREFERRED, [(topic, p) for p in before])
    else:
        (stopped,) = set(before.values())
        cluster.stop_node(stopped)
    ended = now_ms()
    after = wait_leaders(
        admin,
        topic,
        lambda ls: all(ls[p] >= 0 and ls[p] != before[p] for p in before),
        "the move",
    )
    return Move(kind, started, ended, before, after, stopped)


def check_acks(admin: Admin, bootstrap: str, acks: str) -> None:
    """acks=all needs the followers to replicate: fail at once, saying so, if they do not."""
    if acks != "all":
        return
    from brook.client.producer import Producer

    topic = "kip951-acks-probe"
    admin.create_topics([NewTopic(topic, 1, REPLICATION)])
    wait_leaders(admin, topic, lambda ls: True, "a leader", partitions=1)
    config = {
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "linger.ms": 0,
        "request.timeout.ms": 10000,
        "delivery.timeout.ms": 15000,
    }
    with Producer(config) as producer:
        try:
            producer.send(topic, b"probe").result(20)
        except Exception as exc:
            raise SystemExit(
                f"acks=all is not acknowledged on this cluster ({exc}): its followers do not "
                "replicate. Run with --acks 1 to measure the client side alone."
            ) from None
    admin.delete_topics([topic])


# -- the producers ----------------------------------------------------------------------------


def producer_properties(bootstrap: str, acks: str) -> dict[str, str]:
    return {"bootstrap.servers": bootstrap, "acks": acks, **SEED_PROPERTIES}


def brook_command(
    bootstrap: str, topic: str, acks: str, discovery: bool, rate: int, records: int, trace: Path
) -> list[str]:
    props = producer_properties(bootstrap, acks)
    props["brook.leader.discovery.enable"] = str(discovery).lower()
    return perf_test_command(props, topic, rate, records, RECORD_SIZE, trace)


def librdkafka_command(
    bootstrap: str, topic: str, acks: str, rate: int, records: int, trace: Path
) -> list[str]:
    worker = {
        "bootstrap": bootstrap,
        "topic": topic,
        "acks": acks,
        "rate": rate,
        "records": records,
        "trace": str(trace),
    }
    return [sys.executable, "-m", "bench.kip951_experiment", "--worker", json.dumps(worker)]


def librdkafka_worker(
    bootstrap: str, topic: str, acks: str, rate: int, records: int, trace: str
) -> None:
    """confluent-kafka at ``rate``: the tool's throttle, latencies, statistics and lines."""
    from confluent_kafka import Producer as KafkaProducer

    from brook.cli.producer_perf_test import Stats, ThroughputThrottler

    config = {
        "bootstrap.servers": bootstrap,
        "client.id": "kip951-librdkafka",
        "acks": acks,
        "enable.idempotence": acks == "all",
        **SEED_PROPERTIES,
    }
    producer = KafkaProducer(config)
    rng = random.Random(0)
    pool = [bytes(rng.choices(range(65, 91), k=RECORD_SIZE)) for _ in range(PAYLOAD_POOL)]
    stats = Stats(records)
    with open(trace, "w", buffering=1 << 20) as out:
        out.write("send_ms,latency_ms,partition\n")

        def callback(start: int) -> Any:
            def on_delivery(error: Any, message: Any) -> None:
                if error is not None:
                    print(f"Error sending record: {error}", file=sys.stderr)
                    out.write(f"{start},-1,{message.partition()}\n")
                    return
                now = now_ms()
                stats.record(now - start, RECORD_SIZE, now)
                out.write(f"{start},{now - start},{message.partition()}\n")

            return on_delivery

        throttler = ThroughputThrottler(rate, now_ms())
        for i in range(records):
            send_start = now_ms()
            while True:
                try:
                    producer.produce(
                        topic, pool[i % PAYLOAD_POOL], on_delivery=callback(send_start)
                    )
                    break
                except BufferError:
                    producer.poll(0.01)
            producer.poll(0)
            if throttler.should_throttle(i, send_start):
                throttler.throttle()
        producer.flush(300)
    print(stats.total_line(), flush=True)


def run_producer(cmd: list[str]) -> tuple[subprocess.Popen[str], list[str]]:
    """Start a producer process; its output lines are collected (and echoed) by a thread,
    which also says when the first 5-second line came (the run is then ~5 s old)."""
    lines: list[str] = []
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    first_window = threading.Event()

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if "records sent" in line:
                first_window.set()
                print("    " + line.rstrip(), flush=True)
        first_window.set()

    thread = threading.Thread(target=read, daemon=True)
    thread.start()
    proc.reader = thread  # type: ignore[attr-defined]
    proc.first_window = first_window  # type: ignore[attr-defined]
    return proc, lines


# -- one run ----------------------------------------------------------------------------------


def read_trace(path: Path) -> tuple[list[int], list[int], list[int]]:
    send, latency, partition = [], [], []
    with open(path) as f:
        next(f)
        for line in f:
            s, lat, p = line.split(",")
            send.append(int(s))
            latency.append(int(lat))
            partition.append(int(p))
    return send, latency, partition


def percentile(ordered: list[int], fraction: float) -> int:
    """The tool's rule (Kafka's): the element at index int(fraction * n) of the sorted list."""
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else 0


def summarise(send: list[int], latency: list[int], move: Move) -> dict[str, Any]:
    """Percentiles over every record, and latency per BUCKET_MS of send time from the move."""
    ok = sorted(lat for lat in latency if lat >= 0)
    buckets: dict[int, list[int]] = {}
    for s, lat in zip(send, latency, strict=True):
        if lat >= 0:
            buckets.setdefault((s - move.started_ms) // BUCKET_MS, []).append(lat)
    slow = [(s, lat) for s, lat in zip(send, latency, strict=True) if lat >= SLOW_MS]
    near = [
        lat
        for s, lat in zip(send, latency, strict=True)
        if lat >= 0 and -NEAR_BEFORE_MS <= s - move.started_ms < NEAR_AFTER_MS
    ]
    return {
        "records": len(latency),
        "failed": len(latency) - len(ok),
        "p50_ms": percentile(ok, 0.5),
        "p99_ms": percentile(ok, 0.99),
        "p999_ms": percentile(ok, 0.999),
        "max_ms": ok[-1] if ok else 0,
        "records_over_100ms": len(slow),
        "near_move": {
            "records": len(near),
            "max_ms": max(near, default=0),
            "over_100ms": sum(1 for lat in near if lat >= SLOW_MS),
        },
        "slow_sent_from_ms": min(s for s, _ in slow) - move.started_ms if slow else None,
        "slow_sent_until_ms": max(s for s, _ in slow) - move.started_ms if slow else None,
        "first_send_ms": min(send) - move.started_ms if send else None,
        "last_send_ms": max(send) - move.started_ms if send else None,
        # Every record sent in the move's first seconds: (send time from the move, latency).
        "records_near_move": [
            [s - move.started_ms, lat]
            for s, lat in zip(send, latency, strict=True)
            if -ZOOM_BEFORE_MS <= s - move.started_ms < ZOOM_AFTER_MS
        ],
        "over_time": [
            [b * BUCKET_MS, len(v), max(v), sorted(v)[len(v) // 2]]
            for b, v in sorted(buckets.items())
        ],
    }


_METRICS = (
    "producer-metrics:record-retry-total:",
    "producer-metrics:record-error-total:",
    "producer-metrics:request-total:",
)


def tool_metrics(lines: list[str]) -> dict[str, float]:
    found = {}
    for line in lines:
        for prefix in _METRICS:
            if line.startswith(prefix):
                found[prefix.split(":")[1]] = float(line.rsplit(":", 1)[1])
    return found


def run_one(
    cluster: LocalCluster,
    admin: Admin,
    client: str,
    run: int,
    args: argparse.Namespace,
    workdir: Path,
) -> dict[str, Any]:
    topic = f"kip951-{client}-{run}"
    brokers = [n.node_id for n in cluster.brokers]
    create_topic(admin, topic, args.move, brokers)
    records = int(args.rate * args.seconds)
    trace = workdir / f"{topic}.csv"
    bootstrap = cluster.bootstrap_servers
    if client == "librdkafka":
        cmd = librdkafka_command(bootstrap, topic, args.acks, args.rate, records, trace)
    else:
        on = client == "brook-on"
        cmd = brook_command(bootstrap, topic, args.acks, on, args.rate, records, trace)
    print(f"{CLIENTS[client]}, run {run}: {records} records at {args.rate}/s", flush=True)
    timeout = 3 * args.seconds + 300
    load_before = os.getloadavg()
    proc, lines = run_producer(cmd)
    try:
        # The broker cannot say when the records started (without replication the high
        # watermark of an RF-3 partition stays at 0): the producer's first 5-second line can.
        if not proc.first_window.wait(WAIT_S):  # type: ignore[attr-defined]
            raise TimeoutError(f"{client} printed nothing in {WAIT_S:.0f} s")
        started = time.monotonic() - REPORTING_INTERVAL_S
        time.sleep(max(0.0, started + args.seconds / 2 - time.monotonic()))
        move = move_leaders(cluster, admin, topic, args.move)
        print(
            f"    moved {move.moved}/{PARTITIONS} leaders in {move.ended_ms - move.started_ms} ms",
            flush=True,
        )
        code = proc.wait(timeout)
        proc.reader.join(10)  # type: ignore[attr-defined]
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        if args.move == "shutdown":
            for node in brokers:
                if cluster.state(node) == "dead":
                    cluster.restart(node)
    if code != 0:
        raise RuntimeError(f"{client} exited with {code}:\n" + "\n".join(lines[-20:]))
    tool = parse_output(lines)
    send, latency, partitions = read_trace(trace)
    summary = summarise(send, latency, move)
    print(
        f"    p99 {tool['p99_ms']:.0f} ms, p99.9 {tool['p999_ms']:.0f} ms, "
        f"max {tool['max_ms']:.0f} ms; {summary['records_over_100ms']} records over 100 ms",
        flush=True,
    )
    return {
        "client": client,
        "run": run,
        "topic": topic,
        "records_asked": records,
        "tool": {k: v for k, v in tool.items() if k != "nodes"},
        "metrics": tool_metrics(lines),
        "trace": summary,
        "partitions_used": len(set(partitions)),
        "move": asdict(move) | {"moved": move.moved},
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "output_tail": lines[-40:] if client != "librdkafka" else lines,
    }


# -- the report -------------------------------------------------------------------------------


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def report(runs: list[dict[str, Any]], setup: str) -> str:
    """The markdown table for docs/experiments.md: every run, the averages, the seed's."""
    lines = [
        f"Set-up: {setup}.",
        "",
        "| client | run | records | p50 | p99 | p99.9 | max | records over 100 ms "
        "| of which around the move | max around the move | leaders moved |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for client in CLIENTS:
        mine = [r for r in runs if r["client"] == client]
        for r in mine:
            t = r["tool"]
            near = r["trace"].get("near_move")
            around = f"{near['over_100ms']:,} | {near['max_ms']} ms" if near else " | "
            lines.append(
                f"| {CLIENTS[client]} | {r['run']} | {int(t['records']):,} "
                f"| {t['p50_ms']:.0f} ms | {t['p99_ms']:.0f} ms | {t['p999_ms']:.0f} ms "
                f"| {t['max_ms']:.0f} ms | {r['trace']['records_over_100ms']:,} "
                f"| {around} "
                f"| {r['move']['moved']}/{PARTITIONS} |"
            )
    for i, seed in enumerate(SEED_BASELINE_RUNS, 1):
        lines.append(
            f"| seed: Kafka 3.7, before KIP-951 | {i} | 40,000,000 | {seed['p50_ms']} ms "
            f"| {seed['p99_ms']} ms | {seed['p999_ms']} ms | {seed['max_ms']:.0f} ms | | | "
            "| 100/100 |"
        )
    lines += [
        "",
        "| | p99 | p99.9 | p99.9 change | max around the move | records over 100 ms around the "
        "move |",
        "|---|---|---|---|---|---|",
    ]
    averages = {}
    for client in CLIENTS:
        mine = [r for r in runs if r["client"] == client]
        if mine:
            near = [r["trace"].get("near_move") for r in mine]
            averages[client] = (
                mean([r["tool"]["p99_ms"] for r in mine]),
                mean([r["tool"]["p999_ms"] for r in mine]),
                mean([n["max_ms"] for n in near]) if all(near) else None,
                mean([n["over_100ms"] for n in near]) if all(near) else None,
            )
    base = averages.get("brook-off")
    for client, (p99, p999, near_max, near_slow) in averages.items():
        change = ""
        if base is not None and client != "brook-off" and base[1] > 0:
            change = f"{(p999 - base[1]) / base[1]:+.0%} against discovery off"
        around = " | " if near_max is None else f"{near_max:.0f} ms | {near_slow:.0f}"
        lines.append(f"| {CLIENTS[client]} | {p99:.0f} ms | {p999:.0f} ms | {change} | {around} |")
    seed_p99 = mean([s["p99_ms"] for s in SEED_BASELINE_RUNS])
    lines.append(f"| seed: before KIP-951 | {seed_p99:.0f} ms | {SEED_P999_BEFORE} ms | | | |")
    lines.append(f"| seed: with KIP-951 | not published | {SEED_P999_AFTER} ms | -88% | | |")
    lines.append("")
    lines.append(
        "Averages of the runs. Around the move: records sent from 1 s before the move began "
        "to 5 s after."
    )
    return "\n".join(lines)


def plot(runs: list[dict[str, Any]], path: Path, setup: str) -> None:
    """Latency over time, run 1 of each client: above, the worst latency of the records sent
    in each 100 ms of the whole run; below, every record sent around the move."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colours = {"brook-off": "tab:red", "brook-on": "tab:blue", "librdkafka": "tab:green"}
    fig, axes = plt.subplots(2, 1, figsize=(10, 8))
    top, zoom = axes
    for client in CLIENTS:
        mine = [r for r in runs if r["client"] == client]
        if not mine:
            continue
        points = mine[0]["trace"]["over_time"]
        top.plot(
            [p[0] / 1000 for p in points],
            [p[2] for p in points],
            color=colours[client],
            lw=1.0,
            label=f"{CLIENTS[client]}, run 1",
        )
        near = mine[0]["trace"].get("records_near_move", [])
        zoom.scatter(
            [p[0] for p in near],
            [max(p[1], 0) for p in near],
            color=colours[client],
            s=4,
            alpha=0.6,
            label=f"{CLIENTS[client]}, run 1",
        )
    for ax in axes:
        ax.axvline(0, color="k", lw=1, ls="--", label="leadership of all 100 partitions moved")
        ax.set_yscale("symlog", linthresh=10)
        ax.set_ylim(0, ax.get_ylim()[1] * 2)
        ax.grid(True, which="both", alpha=0.3)
    top.set_ylabel("max latency per 100 ms of sends (ms)")
    top.set_xlabel("send time, seconds from the move")
    top.legend(fontsize=8, loc="upper right")
    zoom.set_xlim(-ZOOM_BEFORE_MS, ZOOM_AFTER_MS)
    zoom.set_ylabel("latency of each record (ms)")
    zoom.set_xlabel("send time, milliseconds from the move (every record)")
    fig.suptitle(f"KIP-951: produce latency across a leadership move\n{setup}", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


# -- main -------------------------------------------------------------------------------------


def run_experiment(args: argparse.Namespace, workdir: Path) -> list[dict[str, Any]]:
    """Every run on a fresh cluster, so that runs are alike: what a cluster accumulates (the
    earlier runs' topics, its metadata log, anything periodic) is never in one run only."""
    runs = []
    for run in range(1, args.runs + 1):
        for client in args.clients.split(","):
            cluster = LocalCluster.create(workdir / f"cluster-{client}-{run}", nodes=NODES)
            with cluster, Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
                check_acks(admin, cluster.bootstrap_servers, args.acks)
                runs.append(run_one(cluster, admin, client, run, args, workdir))
            shutil.rmtree(cluster.directory, ignore_errors=True)
    return runs


def setup_text(args: argparse.Namespace) -> str:
    return (
        f"3-node brook cluster on one machine, 100 partitions RF 3, {args.rate} records/s of "
        f"{RECORD_SIZE} B for {args.seconds:.0f} s, acks={args.acks}, linger.ms=0, "
        f"move: {args.move}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per client (the seed's: 3)")
    parser.add_argument("--seconds", type=float, default=60.0, help="length of each run")
    parser.add_argument("--rate", type=int, default=2000, help="records/s (--throughput)")
    parser.add_argument(
        "--acks",
        choices=("all", "1"),
        default="all",
        help="all: the seed's (needs replicating followers); 1: the client side alone",
    )
    parser.add_argument(
        "--move",
        choices=("reassign", "shutdown"),
        default="reassign",
        help="reassign: new replica order + preferred election (the seed's); "
        "shutdown: stop the node leading every partition",
    )
    parser.add_argument("--clients", default=",".join(CLIENTS), help="of: " + ", ".join(CLIENTS))
    parser.add_argument(
        "--plot",
        nargs="?",
        const=str(DEFAULT_PLOT),
        default=None,
        help=f"write the latency-over-time PNG (default path: {DEFAULT_PLOT.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--from-results",
        metavar="JSON",
        help="run nothing: print the table (and --plot) from a saved results file",
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        librdkafka_worker(**json.loads(args.worker))
        return
    if args.from_results:
        saved = json.loads(Path(args.from_results).read_text())
        print(report(saved["runs"], saved["setup"]))
        if args.plot:
            plot(saved["runs"], Path(args.plot), saved["setup"])
        return
    unknown = [c for c in args.clients.split(",") if c not in CLIENTS]
    if unknown:
        parser.error(f"unknown client(s) {', '.join(unknown)}")
    workdir = Path(tempfile.mkdtemp(prefix="kip951-"))
    try:
        runs = run_experiment(args, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    setup = setup_text(args)
    table = report(runs, setup)
    print()
    print(table)
    if args.plot:
        plot(runs, Path(args.plot), setup)
        print(f"\nplot: {args.plot}")
    name = "kip951_experiment"
    if args.acks != "all":
        name += f"-acks{args.acks}"
    if args.move != "reassign":
        name += f"-{args.move}"
    if (args.runs, args.seconds, args.rate) != (3, 60.0, 2000):
        name += "-quick"
    path = save(
        name,
        {"machine": machine(), "args": vars(args), "setup": setup, "table": table, "runs": runs},
    )
    print(f"\nmachine: {machine()}\nsaved {path}")


if __name__ == "__main__":
    main()
