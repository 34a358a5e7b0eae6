"""KIP-250's experiment on a real ``brook cluster``: acks=all produce latency while one
in-sync follower stalls, with and without quorum acks.

    python -m bench.kip250_experiment [--minutes 10] [--rate 1000] [--configs ...]
                                      [--stall-seconds 4] [--stall-every 60]
                                      [--fault pause|slow] [--plot [PNG]]
                                      [--from-results JSON]

The seed (KIP-250, KAFKA-6477) observed that with acks=-1 a produce completes only once every
in-sync replica has the records, so the p99.9 follows the slowest in-sync follower: one that
lags by seconds stays in the ISR until ``replica.lag.time.max.ms``, and the p99.9 jumps to
that lag without any failure. It proposed ``quorum.required.acks`` (Q: a produce completes
once Q replicas, the leader included, have it) and plotted the p99.9 per minute: acks=-1 in
production (spiky), RF 4 with Q=2 for 24 hours at 4000 records/s of 2 KB (flat; RF 3 "very
similar"), and RF 2 with acks=-1 (the alternative it rejected: "still very spiky").

Here every configuration gets a fresh 3-node ``brook cluster`` (LocalCluster: three
``brook server`` processes, each a controller and a broker) and one topic of 6 partitions
whose replicas are assigned so that one broker, the *slow follower*, follows every partition
and leads none; it is never the active controller either (pausing it must not move the
metadata quorum). ``brook producer-perf-test`` sends ``--rate`` records/s of 2 KB with acks=all
(Kafka's tool defaults otherwise: linger.ms=0, idempotence on) for ``--minutes``, and writes
every record's send time and latency (``--latency-file``). Meanwhile the slow follower stalls
for ``--stall-seconds`` in the middle of every ``--stall-every`` seconds:

- ``pause`` (the default): SIGSTOP then SIGCONT (``brook cluster pause / resume``). The stall
  stays under ``replica.lag.time.max.ms`` (30 s, Kafka's default, set explicitly) and under
  ``broker.session.timeout.ms`` (9 s, Kafka's default, with a heartbeat every 2 s), so the
  follower is neither dropped from the ISR nor fenced: the seed's situation;
- ``slow``: its replica fetches held back by ``brook.fault.follower.fetch.delay.ms`` of the
  stall's length for the stall (``brook cluster slow --fetch-delay-ms``), the node otherwise
  running.

The configurations (``--configs``): ``acks-all`` (RF 3, min.insync.replicas=2), ``quorum-2``
(RF 3, min.insync.replicas=2, quorum.required.acks=2), ``rf2`` (RF 2, acks=all, Kafka's
min.insync.replicas=1) and ``no-fault`` (``quorum-2`` without stalls, the baseline of the
"within 2x of the no-fault run" target).

The experiment checks that the slow follower stayed in the ISR: the topic's ISRs are sampled
every 0.5 s through the other brokers while the producer runs, and once the cluster has
stopped the metadata log is read for every ISR or leader change of the topic committed
during the run, and any fencing of the slow follower.

Results go to bench/results/kip250_experiment*.json (per configuration: the tool's figures,
p50/p99/p99.9/max over the run, per minute and per second of send time, the stall times, the
ISR checks; ``-quick`` in the name for shortened runs), the plot to
docs/images/kip250_p999.png (with ``--plot``), and the markdown tables for
docs/experiments.md are printed at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import textwrap
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata import records as metadata_records
from brook.metadata.offline import METADATA_DIR
from brook.protocol.records import iter_records

from .common import ROOT, machine, perf_test_command, save
from .kip794_experiment import parse_output
from .kip951_experiment import (
    REPORTING_INTERVAL_S,
    SEED_PROPERTIES,
    now_ms,
    percentile,
    read_trace,
    run_producer,
    tool_metrics,
)

NODES = 3
PARTITIONS = 6
RECORD_SIZE = 2048  # the seed's "2KB payload"
LAG_TIME_MS = 30_000  # replica.lag.time.max.ms: Kafka's default, set explicitly
SESSION_TIMEOUT_MS = 9_000  # broker.session.timeout.ms: Kafka's default (brook/config/server.py)
HEARTBEAT_MS = 2_000  # broker.heartbeat.interval.ms: Kafka's default
MINUTE_MS = 60_000
SECOND_MS = 1_000
ISR_SAMPLE_S = 0.5
QUORUM_SAMPLE_EVERY = 10  # one DescribeQuorum per this many ISR samples
WAIT_S = 60.0
DEFAULT_PLOT = ROOT / "docs" / "images" / "kip250_p999.png"


def overrides(lag_time_ms: int) -> dict[str, str]:
    """Each node's settings: Kafka's defaults, written out because the stalls depend on them."""
    return {
        "replica.lag.time.max.ms": str(lag_time_ms),
        "broker.session.timeout.ms": str(SESSION_TIMEOUT_MS),
        "broker.heartbeat.interval.ms": str(HEARTBEAT_MS),
    }


@dataclass(frozen=True)
class Configuration:
    label: str
    replication: int
    topic_configs: dict[str, str]
    stalls: bool
    seed: str  # what the seed published for it


QUORUM_CONFIGS = {"min.insync.replicas": "2", "quorum.required.acks": "2"}

CONFIGURATIONS = {
    "acks-all": Configuration(
        "acks=all, RF 3, min.insync.replicas=2",
        3,
        {"min.insync.replicas": "2"},
        True,
        'p99.9 jumps up to replica.lag.time.max.ms ("order of 10 seconds") with no failure; '
        "a production cluster's day, RF 3, plotted",
    ),
    "quorum-2": Configuration(
        "quorum.required.acks=2, RF 3, min.insync.replicas=2",
        3,
        QUORUM_CONFIGS,
        True,
        "stable p99.9: RF 4 with Q=2, 4000 records/s of 2 KB for 24 h, plotted; RF 3 with Q=2 "
        '"very similar"',
    ),
    "rf2": Configuration(
        "acks=all, RF 2, min.insync.replicas=1",
        2,
        {},
        True,
        'p99.9 "still very spiky": 1000 records/s of 2 KB for 2 h, plotted',
    ),
    "no-fault": Configuration(
        "quorum.required.acks=2, RF 3, no stalls",
        3,
        QUORUM_CONFIGS,
        False,
        "not published",
    ),
}
COLOURS = {"acks-all": "tab:red", "quorum-2": "tab:blue", "rf2": "tab:orange", "no-fault": "k"}


# -- the cluster side -------------------------------------------------------------------------


@dataclass(frozen=True)
class Roles:
    """Which node stalls, which lead, and the active controller when the run started."""

    slow: int
    others: tuple[int, int]
    controller: int
    controller_epoch: int


def choose_roles(cluster: LocalCluster) -> Roles:
    """The slow follower: a broker other than the active controller (pausing a combined node
    pauses its voter too; a paused follower voter leaves the quorum's leader in place)."""
    quorum = cluster.wait_metadata_caught_up(WAIT_S)
    brokers = sorted(n.node_id for n in cluster.brokers)
    slow = max(b for b in brokers if b != quorum.leader_id)
    a, b = (n for n in brokers if n != slow)
    return Roles(slow, (a, b), quorum.leader_id, quorum.leader_epoch)


def assignment(roles: Roles, replication: int) -> dict[int, list[int]]:
    """Leaders alternate between the two other brokers; the slow follower is the last
    replica of every partition, so it is never a preferred (nor the first) leader."""
    a, b = roles.others
    rows = {}
    for p in range(PARTITIONS):
        leader, other = (a, b) if p % 2 == 0 else (b, a)
        rows[p] = [*(leader, other)[: replication - 1], roles.slow]
    return rows


def wait_in_sync(admin: Admin, topic: str, timeout: float = WAIT_S) -> None:
    """Until every partition has its first replica as leader and every replica in the ISR."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = admin.describe_topics([topic])[topic].partitions
        except Exception as exc:  # the topic is still being created
            last = exc
        else:
            if len(last) == PARTITIONS and all(
                p.leader == p.replicas[0] and set(p.isr) == set(p.replicas) for p in last
            ):
                return
        time.sleep(0.2)
    raise TimeoutError(f"{topic} not fully in sync within {timeout:.0f} s: {last}")


class IsrMonitor(threading.Thread):
    """Samples the topic's ISRs (and now and then the metadata quorum's leader) through the
    brokers other than the slow one, so that a paused node never holds a sample up."""

    def __init__(self, bootstrap: str, topic: str, slow: int) -> None:
        super().__init__(daemon=True)
        self.bootstrap = bootstrap
        self.topic = topic
        self.slow = slow
        self.stop = threading.Event()
        self.samples = 0
        self.errors = 0
        self.min_isr = PARTITIONS * NODES
        # (ms since the epoch, partition, isr) of every sample without the slow follower
        self.without_slow: list[tuple[int, int, list[int]]] = []
        self.leaders: set[tuple[int, ...]] = set()
        self.controllers: set[tuple[int, int]] = set()  # (leader id, epoch)

    def run(self) -> None:
        props = {"bootstrap.servers": self.bootstrap, "default.api.timeout.ms": 10_000}
        with Admin(props) as admin:
            while not self.stop.wait(ISR_SAMPLE_S):
                self.sample(admin)

    def sample(self, admin: Admin) -> None:
        try:
            partitions = admin.describe_topics([self.topic])[self.topic].partitions
            if self.samples % QUORUM_SAMPLE_EVERY == 0:
                quorum = admin.describe_metadata_quorum(timeout_ms=10_000)
                self.controllers.add((quorum.leader_id, quorum.leader_epoch))
        except Exception:  # a sample lost is counted, never mistaken for an ISR change
            self.errors += 1
            return
        at = now_ms()
        self.samples += 1
        self.leaders.add(tuple(p.leader for p in sorted(partitions, key=lambda p: p.partition)))
        for p in partitions:
            self.min_isr = min(self.min_isr, len(p.isr))
            if self.slow not in p.isr:
                self.without_slow.append((at, p.partition, list(p.isr)))

    def result(self) -> dict[str, Any]:
        return {
            "samples": self.samples,
            "errors": self.errors,
            "min_isr": self.min_isr,
            "samples_without_slow_follower": len(self.without_slow),
            "first_without_slow_follower": self.without_slow[:10],
            "leader_sets": sorted(self.leaders),
            "controllers": sorted(self.controllers),
        }


def metadata_changes(data_dir: Path, topic: str, slow: int, up_to: int) -> dict[str, Any]:
    """What the metadata log of a stopped node holds below offset ``up_to`` (the quorum's
    high watermark when the producer finished, so that the cluster's own shutdown is left
    out) about the run: every change to the topic's partitions, and the slow follower's
    fencing. ``complete`` is False when the topic's creation is not in the log (a snapshot
    replaced it), so that changes could be missing."""
    plog = PartitionLog.open(
        data_dir / METADATA_DIR, LogConfig.from_topic_config({}), had_clean_shutdown=True
    )
    topic_id = None
    changes: list[dict[str, Any]] = []
    fenced: list[int] = []
    try:
        for _, record in iter_records(plog.read(plog.log_start_offset, 1 << 30).records):
            if record.offset >= up_to or record.value is None:
                continue
            decoded = metadata_records.decode(record.value)
            if isinstance(decoded, metadata_records.TopicRecord) and decoded.name == topic:
                topic_id = decoded.topic_id
            elif (
                isinstance(decoded, metadata_records.PartitionChangeRecord)
                and topic_id is not None
                and decoded.topic_id == topic_id
            ):
                changes.append(
                    {
                        "offset": record.offset,
                        "partition": decoded.partition_id,
                        "isr": list(decoded.isr) if decoded.isr is not None else None,
                        "leader": decoded.leader,
                    }
                )
            elif (
                isinstance(decoded, metadata_records.BrokerRegistrationChangeRecord)
                and topic_id is not None
                and decoded.broker_id == slow
                and decoded.fenced
            ):
                fenced.append(record.offset)
    finally:
        plog.close_files()
    return {
        "complete": topic_id is not None,
        "up_to_offset": up_to,
        "partition_changes": changes,
        "slow_follower_removed": any(
            c["isr"] is not None and slow not in c["isr"] for c in changes
        ),
        "slow_follower_fenced": fenced,
    }


class Stalls:
    """The fault: the slow follower stalled for ``seconds``, by SIGSTOP or a fetch delay."""

    def __init__(self, cluster: LocalCluster, node: int, fault: str, seconds: float) -> None:
        self.cluster = cluster
        self.node = node
        self.fault = fault
        self.seconds = seconds
        self.active = False

    def begin(self) -> None:
        self.active = True
        if self.fault == "pause":
            self.cluster.pause(self.node)
        else:
            self.cluster.slow(self.node, fetch_delay_ms=int(self.seconds * 1000))

    def end(self) -> None:
        if not self.active:
            return
        if self.fault == "pause":
            self.cluster.resume(self.node)
        else:
            self.cluster.slow(self.node, fetch_delay_ms=0)
        self.active = False


def stall(proc: subprocess.Popen[str], fault: Stalls, at: list[float]) -> list[list[int]]:
    """Each stall at its time (``time.monotonic``) while the producer runs; when each began
    and ended, in ms since the epoch (the latency file's clock)."""
    done: list[list[int]] = []
    for when in at:
        while proc.poll() is None and time.monotonic() < when:
            time.sleep(min(0.05, max(0.0, when - time.monotonic())))
        if proc.poll() is not None:
            break
        began = now_ms()
        try:
            fault.begin()
            time.sleep(max(0.0, began / 1000 + fault.seconds - time.time()))
        finally:
            fault.end()
        done.append([began, now_ms()])
        print(f"    stall {len(done)}: {done[-1][1] - began} ms", flush=True)
    return done


def stall_offsets(seconds: float, every: float, stall: float) -> list[float]:
    """When each stall begins, in seconds from the producer's first record: the middle of
    every ``every`` seconds, each stall ending before the run does."""
    offsets = []
    at = every / 2
    while at + stall < seconds:
        offsets.append(at)
        at += every
    return offsets


# -- the producer -----------------------------------------------------------------------------


def producer_command(bootstrap: str, topic: str, rate: int, records: int, trace: Path) -> list[str]:
    props = {"bootstrap.servers": bootstrap, "acks": "all", **SEED_PROPERTIES}
    return perf_test_command(props, topic, rate, records, RECORD_SIZE, trace)


# -- the figures ------------------------------------------------------------------------------


def bucket_stats(latencies: list[int]) -> dict[str, int]:
    ordered = sorted(latencies)
    return {
        "records": len(ordered),
        "p50_ms": percentile(ordered, 0.5),
        "p99_ms": percentile(ordered, 0.99),
        "p999_ms": percentile(ordered, 0.999),
        "max_ms": ordered[-1] if ordered else 0,
    }


def summarise(send: list[int], latency: list[int], stalls: list[list[int]]) -> dict[str, Any]:
    """Percentiles (the tool's rule) over the run, per minute and per second of send time
    from the first record; the stalls and the records sent during them, on the same clock."""
    first = min(send) if send else 0
    ok = [lat for lat in latency if lat >= 0]
    minutes: dict[int, list[int]] = {}
    seconds: dict[int, list[int]] = {}
    during: list[int] = []
    windows = [(s - first, e - first) for s, e in stalls]
    for s, lat in zip(send, latency, strict=True):
        if lat < 0:
            continue
        at = s - first
        minutes.setdefault(at // MINUTE_MS, []).append(lat)
        seconds.setdefault(at // SECOND_MS, []).append(lat)
        if any(start <= at < end for start, end in windows):
            during.append(lat)
    return {
        **bucket_stats(ok),
        "failed": len(latency) - len(ok),
        "duration_ms": max(send) - first if send else 0,
        "per_minute": [{"minute": m} | bucket_stats(v) for m, v in sorted(minutes.items())],
        "per_second": [
            [sec, len(v), max(v), percentile(sorted(v), 0.99)] for sec, v in sorted(seconds.items())
        ],
        "stalls_ms": [list(w) for w in windows],
        "sent_during_stalls": bucket_stats(during),
    }


# -- one configuration ------------------------------------------------------------------------


def run_configuration(name: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    """One configuration on a fresh cluster: the topic, the producer, the stalls, the checks."""
    config = CONFIGURATIONS[name]
    cluster = LocalCluster.create(
        workdir / f"cluster-{name}", nodes=NODES, overrides=overrides(args.lag_time_ms)
    )
    topic = f"kip250-{name}"
    records = int(args.rate * args.minutes * 60)
    trace = workdir / f"{topic}.csv"
    with cluster:
        roles = choose_roles(cluster)
        others = [cluster.node(n).broker_address for n in roles.others]
        bootstrap = ",".join(others)
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics(
                [
                    NewTopic(
                        topic,
                        replica_assignment=assignment(roles, config.replication),
                        configs=config.topic_configs,
                    )
                ]
            )
            wait_in_sync(admin, topic)
        offsets = (
            stall_offsets(args.minutes * 60, args.stall_every, args.stall_seconds)
            if config.stalls
            else []
        )
        stalling = f"{len(offsets)} stall(s) of {args.stall_seconds:g} s ({args.fault})"
        print(
            f"{config.label}: {records} records at {args.rate}/s; node {roles.slow} follows "
            f"every partition, {stalling if config.stalls else 'no stalls'}",
            flush=True,
        )
        monitor = IsrMonitor(bootstrap, topic, roles.slow)
        fault = Stalls(cluster, roles.slow, args.fault, args.stall_seconds)
        load_before = os.getloadavg()
        monitor.start()
        proc, lines = run_producer(producer_command(bootstrap, topic, args.rate, records, trace))
        try:
            # The tool's first 5-second line comes ~5 s after its first record.
            if not proc.first_window.wait(WAIT_S):  # type: ignore[attr-defined]
                raise TimeoutError(f"the producer printed nothing in {WAIT_S:.0f} s")
            started = time.monotonic() - REPORTING_INTERVAL_S
            stalls = stall(proc, fault, [started + offset for offset in offsets])
            code = proc.wait(3 * args.minutes * 60 + 300)
            proc.reader.join(10)  # type: ignore[attr-defined]
            # Committed metadata up to here belongs to the run; what follows is the stop.
            quorum = cluster.describe_quorum(10.0)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            fault.end()
            monitor.stop.set()
            monitor.join(30)
        load_after = os.getloadavg()
    if code != 0:
        raise RuntimeError(f"{name}: the producer exited with {code}:\n" + "\n".join(lines[-20:]))
    if quorum is None:
        raise RuntimeError(f"{name}: no metadata quorum answered after the run")
    changes = metadata_changes(
        cluster.node(roles.others[0]).data_dir, topic, roles.slow, quorum.high_watermark
    )
    if args.keep_traces:
        Path(args.keep_traces).mkdir(parents=True, exist_ok=True)
        shutil.copy(trace, Path(args.keep_traces) / trace.name)
    shutil.rmtree(cluster.directory, ignore_errors=True)
    tool = parse_output(lines)
    send, latency, _ = read_trace(trace)
    summary = summarise(send, latency, stalls)
    isr = monitor.result()
    stayed = (
        isr["samples_without_slow_follower"] == 0
        and changes["complete"]
        and not changes["slow_follower_removed"]
        and not changes["slow_follower_fenced"]
    )
    print(
        f"    p99 {summary['p99_ms']} ms, p99.9 {summary['p999_ms']} ms, max "
        f"{summary['max_ms']} ms; {tool['records_per_s']:.0f} records/s; slow follower "
        f"{'stayed in' if stayed else 'LEFT'} the ISR ({isr['samples']} samples, "
        f"{len(changes['partition_changes'])} partition changes)",
        flush=True,
    )
    return {
        "configuration": name,
        "label": config.label,
        "replication": config.replication,
        "topic_configs": config.topic_configs,
        "topic": topic,
        "records_asked": records,
        "rate_asked": args.rate,
        "roles": {
            "slow_follower": roles.slow,
            "leaders": list(roles.others),
            "active_controller": [roles.controller, roles.controller_epoch],
        },
        "assignment": assignment(roles, config.replication),
        "fault": args.fault if config.stalls else None,
        "stall_seconds": args.stall_seconds if config.stalls else 0,
        "tool": {k: v for k, v in tool.items() if k != "nodes"},
        "metrics": tool_metrics(lines),
        "trace": summary,
        "isr_samples": isr,
        "metadata": changes,
        "slow_follower_stayed_in_isr": stayed,
        "load_average": {"before": load_before, "after": load_after},
        "output_tail": lines[-40:],
    }


# -- the report -------------------------------------------------------------------------------


def _by_name(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["configuration"]: r for r in runs}


def _median(values: list[int]) -> int:
    """The lower median: always one of the minutes' own figures."""
    return statistics.median_low(values) if values else 0


def targets(runs: list[dict[str, Any]]) -> list[str]:
    """The issue's targets, each with the figures it is judged on."""
    by = _by_name(runs)
    lines = []
    acks_all, quorum, base = by.get("acks-all"), by.get("quorum-2"), by.get("no-fault")
    if acks_all is not None and acks_all["stall_seconds"]:
        stall_ms = acks_all["stall_seconds"] * 1000
        stalled = [
            m["p999_ms"]
            for m in acks_all["trace"]["per_minute"]
            if any(
                m["minute"] * MINUTE_MS <= s < (m["minute"] + 1) * MINUTE_MS
                for s, _ in acks_all["trace"]["stalls_ms"]
            )
        ]
        verdict = "met" if stalled and _median(stalled) >= stall_ms / 2 else "not met"
        lines.append(
            f"- acks=all's p99.9 follows the slow follower: {verdict} (median p99.9 of the "
            f"minutes with a stall {_median(stalled)} ms, stalls of {stall_ms:.0f} ms; met when "
            "at least half the stall)"
        )
    if quorum is not None and base is not None:
        q, b = quorum["trace"]["p999_ms"], base["trace"]["p999_ms"]
        verdict = "met" if q <= 2 * b else "not met"
        lines.append(
            f"- Q=2's p99.9 within 2x of the no-fault run: {verdict} ({q} ms against {b} ms, "
            f"{q / b if b else float('inf'):.1f}x)"
        )
    if quorum is not None and acks_all is not None:
        q, a = quorum["trace"]["p999_ms"], acks_all["trace"]["p999_ms"]
        verdict = "met" if 5 * q <= a else "not met"
        lines.append(
            f"- Q=2's p99.9 at most 1/5 of acks=all's: {verdict} ({q} ms against {a} ms, "
            f"1/{a / q if q else float('inf'):.1f})"
        )
    return lines


def report(runs: list[dict[str, Any]], setup: str) -> str:
    """The markdown tables for docs/experiments.md: the run, per minute, the targets."""
    lines = [
        f"Set-up: {setup}.",
        "",
        "| configuration | records | records/s | p50 | p99 | p99.9 | max | p99.9 per minute "
        "(median / worst) | stalls | slow follower in the ISR throughout | seed |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        t = r["trace"]
        minutes = [m["p999_ms"] for m in t["per_minute"]]
        stalls = f"{len(t['stalls_ms'])} x {r['stall_seconds']:g} s ({r['fault']})"
        if not t["stalls_ms"]:
            stalls = "none"
        isr = r["isr_samples"]
        stayed = "yes" if r["slow_follower_stayed_in_isr"] else "**no**"
        lines.append(
            f"| {r['label']} | {t['records']:,} | {r['tool']['records_per_s']:.0f} "
            f"| {t['p50_ms']} ms | {t['p99_ms']} ms | {t['p999_ms']} ms | {t['max_ms']} ms "
            f"| {_median(minutes)} / {max(minutes, default=0)} ms | {stalls} "
            f"| {stayed} ({isr['samples']} samples, "
            f"{len(r['metadata']['partition_changes'])} partition changes) "
            f"| {CONFIGURATIONS[r['configuration']].seed} |"
        )
    width = max((len(r["trace"]["per_minute"]) for r in runs), default=0)
    lines += [
        "",
        "p99.9 per minute of send time (ms):",
        "",
        "| configuration | " + " | ".join(f"min {m + 1}" for m in range(width)) + " |",
        "|---|" + "---|" * width,
    ]
    for r in runs:
        cells = {m["minute"]: str(m["p999_ms"]) for m in r["trace"]["per_minute"]}
        lines.append(
            f"| {r['label']} | " + " | ".join(cells.get(m, "") for m in range(width)) + " |"
        )
    found = targets(runs)
    if found:
        lines += ["", "Targets:", "", *found]
    return "\n".join(lines)


def plot(runs: list[dict[str, Any]], path: Path, setup: str) -> None:
    """Above, the p99.9 of each minute of sends (as the seed plotted), at the minute's middle;
    below, the worst latency of each second of sends. Every run's stalls are shaded (they
    begin within a second of each other from run to run)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, below) = plt.subplots(2, 1, figsize=(10, 8))
    minutes = 1
    for r in runs:
        name = r["configuration"]
        style = {"color": COLOURS.get(name), "ls": "--" if name == "rf2" else "-"}
        t = r["trace"]
        minutes = max(minutes, len(t["per_minute"]))
        top.plot(
            [m["minute"] + 0.5 for m in t["per_minute"]],
            [max(m["p999_ms"], 1) for m in t["per_minute"]],
            marker="s" if name == "rf2" else "o",
            label=r["label"],
            **style,
        )
        below.plot(
            [p[0] for p in t["per_second"]],
            [max(p[2], 1) for p in t["per_second"]],
            lw=1.0,
            label=r["label"],
            **style,
        )
    stalls = [w for r in runs for w in r["trace"]["stalls_ms"]]
    for i, (start, end) in enumerate(stalls):
        label = "slow follower stalled" if i == 0 else None
        top.axvspan(start / MINUTE_MS, end / MINUTE_MS, color="grey", alpha=0.2, label=label)
        below.axvspan(start / SECOND_MS, end / SECOND_MS, color="grey", alpha=0.2)
    for ax in (top, below):
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    top.set_xlim(0, minutes)
    top.set_xticks(range(minutes + 1))
    top.set_xlabel("minute of the run (send time)")
    top.set_ylabel("p99.9 latency per minute (ms)")
    top.legend(fontsize=8, loc="upper left")
    below.set_xlabel("second of the run (send time)")
    below.set_ylabel("max latency per second (ms)")
    title = "KIP-250: acks=all latency with a stalling in-sync follower"
    fig.suptitle(title + "\n" + textwrap.fill(setup, 150), fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


# -- main -------------------------------------------------------------------------------------


def setup_text(args: argparse.Namespace) -> str:
    fault = (
        "SIGSTOP/SIGCONT"
        if args.fault == "pause"
        else "a follower fetch delay of the stall's length"
    )
    return (
        f"3-node brook cluster (combined nodes) on one machine, {PARTITIONS} partitions, one "
        f"broker following every partition and leading none; {args.rate} records/s of "
        f"{RECORD_SIZE} B for {args.minutes:g} min, acks=all, linger.ms=0; that follower "
        f"stalled {args.stall_seconds:g} s every {args.stall_every:g} s ({fault}); "
        f"replica.lag.time.max.ms={args.lag_time_ms}, "
        f"broker.session.timeout.ms={SESSION_TIMEOUT_MS}"
    )


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    unknown = [c for c in args.configs.split(",") if c not in CONFIGURATIONS]
    if unknown:
        parser.error(f"unknown configuration(s) {', '.join(unknown)}")
    # A stall must not take the follower out of the ISR, nor get it fenced: the last
    # heartbeat can be one interval older than the stall's start.
    if args.stall_seconds * 1000 >= args.lag_time_ms:
        parser.error(
            f"--stall-seconds must stay under replica.lag.time.max.ms ({args.lag_time_ms} ms)"
        )
    if args.fault == "pause" and args.stall_seconds * 1000 + HEARTBEAT_MS >= SESSION_TIMEOUT_MS:
        parser.error(
            f"--stall-seconds plus a heartbeat interval ({HEARTBEAT_MS} ms) must stay under "
            f"broker.session.timeout.ms ({SESSION_TIMEOUT_MS} ms), or the paused broker is fenced"
        )
    if args.stall_seconds >= args.stall_every:
        parser.error("--stall-seconds must be shorter than --stall-every")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0, help="length of each run")
    parser.add_argument("--rate", type=int, default=1000, help="records/s (--throughput)")
    parser.add_argument(
        "--configs", default=",".join(CONFIGURATIONS), help="of: " + ", ".join(CONFIGURATIONS)
    )
    parser.add_argument("--stall-seconds", type=float, default=4.0, help="length of a stall")
    parser.add_argument("--stall-every", type=float, default=60.0, help="seconds between stalls")
    parser.add_argument(
        "--fault",
        choices=("pause", "slow"),
        default="pause",
        help="pause: SIGSTOP the slow follower; slow: hold its replica fetches back",
    )
    parser.add_argument(
        "--plot",
        nargs="?",
        const=str(DEFAULT_PLOT),
        default=None,
        help=f"write the p99.9-per-minute PNG (default path: {DEFAULT_PLOT.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--from-results",
        metavar="JSON",
        help="run nothing: print the tables (and --plot) from a saved results file",
    )
    parser.add_argument(
        "--lag-time-ms",
        type=int,
        default=LAG_TIME_MS,
        help="replica.lag.time.max.ms of the nodes (Kafka's default)",
    )
    parser.add_argument("--keep-traces", metavar="DIR", help="keep every record's latency file")
    args = parser.parse_args()
    if args.from_results:
        saved = json.loads(Path(args.from_results).read_text())
        print(report(saved["runs"], saved["setup"]))
        if args.plot:
            plot(saved["runs"], Path(args.plot), saved["setup"])
        return
    check_args(parser, args)
    workdir = Path(tempfile.mkdtemp(prefix="kip250-"))
    try:
        runs = [run_configuration(name, args, workdir) for name in args.configs.split(",")]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    setup = setup_text(args)
    table = report(runs, setup)
    print()
    print(table)
    if args.plot:
        plot(runs, Path(args.plot), setup)
        print(f"\nplot: {args.plot}")
    name = "kip250_experiment"
    if args.fault != "pause":
        name += f"-{args.fault}"
    if (args.minutes, args.rate, args.configs) != (10.0, 1000, ",".join(CONFIGURATIONS)):
        name += "-quick"
    path = save(
        name,
        {"machine": machine(), "args": vars(args), "setup": setup, "table": table, "runs": runs},
    )
    print(f"\nmachine: {machine()}\nsaved {path}")


if __name__ == "__main__":
    main()
