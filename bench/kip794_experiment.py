"""KIP-794's experiment on one command: a 3-node cluster with one node slow by 20 ms, and
``brook producer-perf-test`` run with each partitioner configuration of the KIP's Test Series 1
(2048 records/s) and 2 (4096 records/s).

    python -m bench.kip794_experiment [--records 122880] [--series 1,2] [--configs ...] [--plot]

The KIP's set-up was three Kafka brokers on one machine, topic foo with 3 partitions (RF 1,
one per broker, partition 1 led by Kafka-0) and a 20 ms sleep injected in Kafka-0's produce
responses. Here each configuration gets a fresh 3-node ``brook cluster`` (LocalCluster: three
``brook server`` processes, each controller and broker) and ``foo`` is created with that
layout: partition 1 on node 1, which plays Kafka-0 and is made slow with ``cluster.slow(1,
produce_delay_ms=20)`` (``brook cluster slow``: the dynamic ``brook.fault.produce.delay.ms``),
partition 0 on node 2 and partition 2 on node 3. The broker sleeps in the produce handler
after the append, and a connection's next request is handled only once the previous one is
answered (brook/broker/network.py), as in a Kafka broker, so the slow node's service time is
its own processing plus 20 ms, request after request. The tool runs as a subprocess with the
KIP's arguments; the final line and the per-node ``outgoing-byte-total`` are parsed from its
real output. The producer runs with Kafka's defaults of the KIP's time (3.3: ``linger.ms=0``;
Brook's own default is Kafka 4.0's 5 ms). ``--switch-rule kip-2022`` runs the tool with the
partition-switch rule the KIP measured instead of the one Brook ships
(bench/kip794_switch_rule.py), for diagnosis. Results go to
bench/results/kip794_experiment*.json, the plot to docs/images/kip794_partitioner.png (with
``--plot``); docs/experiments.md reads them beside the KIP's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic
from brook.client.consumer import Consumer
from brook.client.producer import Producer

from .common import ROOT, Claim, machine, save
from .kip794_switch_rule import RULES

TOPIC = "foo"
PARTITIONS = 3
RECORD_SIZE = 512
KIP_RECORDS = 122880
NODES = 3
DELAY_MS = 20
# The KIP's layout in its own node numbering: partition 0 on node 1, partition 1 on node 0
# (Kafka-0, the slow one), partition 2 on node 2. A brook cluster numbers its nodes from 1.
KIP_LEADERS = {0: 1, 1: 0, 2: 2}
SLOW_PARTITION = 1
# The KIP ran Kafka 3.3's producer defaults; Brook's linger.ms default follows Kafka 4.0.
BASE_PROPERTIES = {"linger.ms": "0"}
RUN_TIMEOUT_S = 1800.0
WAIT_S = 60.0
PROBE_TOPIC = "slow-probe"
DEFAULT_PLOT = ROOT / "docs" / "images" / "kip794_partitioner.png"


@dataclass(frozen=True)
class Configuration:
    label: str  # as the KIP's summary table names it
    properties: dict[str, str]


CONFIGURATIONS = {
    "old": Configuration(
        "Old DefaultPartitioner",
        {"partitioner.class": "org.apache.kafka.clients.producer.internals.DefaultPartitioner"},
    ),
    "uniform": Configuration(
        "partitioner.adaptive.partitioning.enable=false",
        {"partitioner.adaptive.partitioning.enable": "false"},
    ),
    "default": Configuration("New logic with all default settings", {}),
    "timeout5": Configuration(
        "partitioner.availability.timeout.ms=5", {"partitioner.availability.timeout.ms": "5"}
    ),
}

# Series -> (--throughput, the configurations the KIP ran in it).
SERIES = {1: (2048, ("old", "uniform", "default", "timeout5")), 2: (4096, ("uniform", "default"))}

# The KIP's published figures: (series, configuration) -> final line and outgoing-byte-total.
KIP_FIGURES: dict[tuple[int, str], dict[str, Any]] = {
    (1, "old"): {
        "records_per_s": 1724.873666,
        "mb_per_s": 0.84,
        "avg_ms": 4072.74,
        "max_ms": 11246,
        "p50_ms": 3870,
        "p95_ms": 10221,
        "p99_ms": 10992,
        "p999_ms": 11214,
        "node_bytes": {0: 46826262, 1: 9207276, 2: 9004193},
    },
    (1, "uniform"): {
        "records_per_s": 2043.198484,
        "mb_per_s": 1.00,
        "avg_ms": 49.92,
        "max_ms": 795,
        "p50_ms": 8,
        "p95_ms": 150,
        "p99_ms": 214,
        "p999_ms": 422,
        "node_bytes": {0: 22237614, 1: 21606034, 2: 22152273},
    },
    (1, "default"): {
        "records_per_s": 2045.477245,
        "mb_per_s": 1.00,
        "avg_ms": 40.06,
        "max_ms": 817,
        "p50_ms": 7,
        "p95_ms": 141,
        "p99_ms": 154,
        "p999_ms": 220,
        "node_bytes": {0: 19244362, 1: 23589010, 2: 23321818},
    },
    (1, "timeout5"): {
        "records_per_s": 2044.218196,
        "mb_per_s": 1.00,
        "avg_ms": 36.29,
        "max_ms": 809,
        "p50_ms": 6,
        "p95_ms": 138,
        "p99_ms": 150,
        "p999_ms": 184,
        "node_bytes": {0: 17431944, 1: 25781879, 2: 22977244},
    },
    (2, "uniform"): {
        "records_per_s": 3789.317873,
        "mb_per_s": 1.85,
        "avg_ms": 426.24,
        "max_ms": 2506,
        "p50_ms": 8,
        "p95_ms": 2065,
        "p99_ms": 2408,
        "p999_ms": 2468,
        "node_bytes": {0: 22396882, 1: 21652393, 2: 21355134},
    },
    (2, "default"): {
        "records_per_s": 4078.327249,
        "mb_per_s": 1.99,
        "avg_ms": 34.66,
        "max_ms": 785,
        "p50_ms": 4,
        "p95_ms": 143,
        "p99_ms": 167,
        "p999_ms": 297,
        "node_bytes": {0: 14866064, 1: 25176418, 2: 25581116},
    },
}

_FINAL_LINE = re.compile(
    r"^(?P<records>\d+) records sent, (?P<records_per_s>[\d.]+) records/sec "
    r"\((?P<mb_per_s>[\d.]+) MB/sec\), (?P<avg_ms>[\d.]+) ms avg latency, "
    r"(?P<max_ms>[\d.]+) ms max latency, (?P<p50_ms>\d+) ms 50th, (?P<p95_ms>\d+) ms 95th, "
    r"(?P<p99_ms>\d+) ms 99th, (?P<p999_ms>\d+) ms 99\.9th\.$"
)
_NODE_METRIC = re.compile(
    r"^producer-node-metrics:(?P<name>[\w-]+):\{[^}]*node-id=node-(?P<node>-?\d+)\}\s*:\s*"
    r"(?P<value>\S+)$"
)
_NODE_METRICS = ("outgoing-byte-total", "request-total", "request-latency-avg")


def parse_output(lines: list[str]) -> dict[str, Any]:
    """The final summary line and the per-node metrics of producer-perf-test's output."""
    result: dict[str, Any] = {"nodes": {}}
    for line in lines:
        line = line.strip()
        final = _FINAL_LINE.match(line)
        if final is not None:
            result.update({k: float(v) for k, v in final.groupdict().items()})
            continue
        metric = _NODE_METRIC.match(line)
        if metric is not None and metric["name"] in _NODE_METRICS:
            node = result["nodes"].setdefault(int(metric["node"]), {})
            node[metric["name"]] = float(metric["value"])
    if "records_per_s" not in result:
        raise RuntimeError("producer-perf-test printed no summary line:\n" + "\n".join(lines))
    return result


def run_tool(
    bootstrap: str,
    records: int,
    throughput: int,
    properties: dict[str, str],
    switch_rule: str = "current",
) -> list[str]:
    """Run ``brook producer-perf-test`` as the KIP ran kafka-producer-perf-test.sh."""
    with tempfile.TemporaryDirectory(prefix="kip794-") as tmp:
        config = Path(tmp) / "producer.properties"
        props = {"bootstrap.servers": bootstrap, **BASE_PROPERTIES, **properties}
        config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        tool = ["-m", "brook.cli.main", "producer-perf-test"]
        if switch_rule != "current":
            tool = ["-m", "bench.kip794_switch_rule", "tool"]
        args = [
            "--topic",
            TOPIC,
            "--num-records",
            str(records),
            "--print-metrics",
            "--record-size",
            str(RECORD_SIZE),
            "--throughput",
            str(throughput),
            "--producer.config",
            str(config),
        ]
        print(f"  $ {' '.join(tool[1:])} " + " ".join(args), flush=True)
        print(
            "    producer.properties: " + ", ".join(f"{k}={v}" for k, v in props.items()),
            flush=True,
        )
        lines: list[str] = []
        with subprocess.Popen(
            [sys.executable, *tool, *args], stdout=subprocess.PIPE, text=True, cwd=ROOT
        ) as proc:
            assert proc.stdout is not None
            try:
                for line in proc.stdout:
                    lines.append(line.rstrip("\n"))
                    if "records sent" in line or line.startswith("Error"):
                        print("    " + line.rstrip(), flush=True)
                code = proc.wait(RUN_TIMEOUT_S)
            except BaseException:
                proc.kill()
                raise
        if code != 0:
            raise RuntimeError(f"producer-perf-test exited with {code}:\n" + "\n".join(lines))
        return lines


def records_per_partition(bootstrap: str) -> dict[int, int]:
    with Consumer({"bootstrap.servers": bootstrap}) as consumer:
        ends = consumer.end_offsets([(TOPIC, p) for p in range(PARTITIONS)])
    return {tp.partition: offset for tp, offset in ends.items()}


# -- the cluster ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Layout:
    """Which node of the brook cluster plays which node of the KIP."""

    leaders: dict[int, int]  # partition -> brook node id
    slow_node: int

    @classmethod
    def of(cls, brokers: list[int]) -> Layout:
        ordered = sorted(brokers)
        leaders = {p: ordered[kip] for p, kip in KIP_LEADERS.items()}
        return cls(leaders, leaders[SLOW_PARTITION])

    @property
    def kip_node(self) -> dict[int, int]:
        """brook node id -> the KIP's node id (the slow one is the KIP's node 0)."""
        return {self.leaders[p]: KIP_LEADERS[p] for p in self.leaders}


def partition_leaders(admin: Admin, topic: str) -> dict[int, int]:
    try:
        desc = admin.describe_topics([topic])[topic]
    except Exception:  # the topic is still being created
        return {}
    return {p.partition: p.leader for p in desc.partitions}


def create_topic(admin: Admin, topic: str, assignment: dict[int, list[int]]) -> None:
    """Create ``topic`` with explicit replicas and wait until every partition has its
    assigned leader."""
    admin.create_topics([NewTopic(topic, replica_assignment=assignment)])
    wanted = {p: replicas[0] for p, replicas in assignment.items()}
    deadline = time.monotonic() + WAIT_S
    while (found := partition_leaders(admin, topic)) != wanted:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: leaders {found}, wanted {wanted}")
        time.sleep(0.1)


def make_slow(cluster: LocalCluster, admin: Admin, node: int, delay_ms: int) -> float:
    """``brook cluster slow NODE --produce-delay-ms delay_ms``, then wait until the node
    applies it: a produce to a partition it leads (a probe topic, not ``foo``) takes at least
    the delay. Returns that probe's time in ms."""
    cluster.slow(node, produce_delay_ms=delay_ms)
    create_topic(admin, PROBE_TOPIC, {0: [node]})
    config = {"bootstrap.servers": cluster.bootstrap_servers, "acks": 1, "linger.ms": 0}
    deadline = time.monotonic() + WAIT_S
    with Producer(config) as producer:
        # The first send also waits for metadata and a connection: only later ones tell.
        producer.send(PROBE_TOPIC, b"warm-up", partition=0).result(WAIT_S)
        while True:
            started = time.monotonic()
            producer.send(PROBE_TOPIC, b"probe", partition=0).result(WAIT_S)
            took_ms = (time.monotonic() - started) * 1000
            if took_ms >= delay_ms or not delay_ms:
                return took_ms
            if time.monotonic() > deadline:
                raise TimeoutError(f"node {node}'s produce delay not in force in {WAIT_S:.0f} s")
            time.sleep(0.1)


def run_configuration(
    series: int,
    key: str,
    records: int,
    workdir: Path,
    delay_ms: int = DELAY_MS,
    switch_rule: str = "current",
) -> dict[str, Any]:
    """One run of the tool on a fresh 3-node cluster laid out and slowed as in the KIP."""
    throughput = SERIES[series][0]
    config = CONFIGURATIONS[key]
    print(f"series {series}, {config.label}:", flush=True)
    directory = Path(tempfile.mkdtemp(prefix=f"s{series}-{key}-", dir=workdir))
    cluster = LocalCluster.create(directory / "cluster", nodes=NODES)
    try:
        with cluster, Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            layout = Layout.of([n.node_id for n in cluster.brokers])
            create_topic(admin, TOPIC, {p: [node] for p, node in layout.leaders.items()})
            probe_ms = make_slow(cluster, admin, layout.slow_node, delay_ms)
            print(
                f"  node {layout.slow_node} (partition {SLOW_PARTITION}) slowed by {delay_ms} ms "
                f"(probe answered in {probe_ms:.0f} ms); leaders {layout.leaders}",
                flush=True,
            )
            load_before = os.getloadavg()
            lines = run_tool(
                cluster.bootstrap_servers, records, throughput, config.properties, switch_rule
            )
            load_after = os.getloadavg()
            partitions = records_per_partition(cluster.bootstrap_servers)
            leaders = partition_leaders(admin, TOPIC)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if leaders != layout.leaders:
        raise RuntimeError(f"the leaders moved during the run: {leaders} != {layout.leaders}")
    parsed = parse_output(lines)
    kip_node = layout.kip_node
    return {
        "series": series,
        "configuration": key,
        "label": config.label,
        "throughput": throughput,
        "switch_rule": switch_rule,
        "properties": {**BASE_PROPERTIES, **config.properties},
        **parsed,
        # outgoing-byte-total of the three brokers, in the KIP's node numbering
        "node_bytes": {
            kip_node[n]: m.get("outgoing-byte-total", 0.0)
            for n, m in parsed["nodes"].items()
            if n in kip_node
        },
        "records_per_partition": partitions,
        "leaders": leaders,
        "slow_node": layout.slow_node,
        "kip_node": kip_node,
        "delay_ms": delay_ms,
        "probe_ms": probe_ms,
        "load_average": {"before": load_before, "after": load_after},
        "output": lines,
    }


# -- the table and the plot -------------------------------------------------------------------


def _node_bytes(figures: dict[str, Any]) -> dict[int, float]:
    """outgoing-byte-total by the KIP's node numbering (node 0 is the slow one)."""
    return {int(n): float(v) for n, v in figures["node_bytes"].items()}


def slow_share(figures: dict[str, Any]) -> float:
    nodes = _node_bytes(figures)
    return nodes.get(0, 0.0) / (sum(nodes.values()) or 1.0)


def who(row: dict[str, Any]) -> str:
    return "Brook" if row["switch_rule"] == "current" else "Brook, 2022 rule"


def report(rows: list[dict[str, Any]], with_kip: bool = True) -> str:
    """The KIP's summary table, with the node bytes beside it; the KIP's rows follow ours."""
    lines = [
        "| series | partitioner config | run | throughput | avg latency | p99 | p99.9 "
        "| node-0 bytes (slow) | node-1 bytes | node-2 bytes | node-0 share |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        entries = [(who(row), row)]
        kip = KIP_FIGURES.get((row["series"], row["configuration"]))
        if with_kip and kip is not None:
            entries.append(("KIP", kip))
        for name, figures in entries:
            nodes = _node_bytes(figures)
            lines.append(
                f"| {row['series']} | {row['label']} | {name} | {figures['mb_per_s']:.2f} MB/s "
                f"| {figures['avg_ms']:.2f} ms | {figures['p99_ms']:.0f} ms "
                f"| {figures['p999_ms']:.0f} ms | "
                + " | ".join(f"{nodes.get(n, 0.0):,.0f}" for n in (0, 1, 2))
                + f" | {slow_share(figures):.0%} |"
            )
    return "\n".join(lines)


def claims(saved: dict[str, Any]) -> list[Claim]:
    """The KIP's claims, judged on a saved run of Brook's partitioner as shipped."""
    rows = {
        (r["series"], r["configuration"]): r
        for r in saved["results"]
        if r["switch_rule"] == "current"
    }
    found = []
    old = rows.get((1, "old"))
    if old is not None:
        share = slow_share(old)
        found.append(
            Claim(
                "KIP-794",
                "the old partitioner sends the slow broker most of the bytes (72%)",
                f"{share:.0%} of the bytes to the slow broker",
                share > 0.5,
            )
        )
    adaptive = rows.get((1, "default"))
    if adaptive is not None:
        share = slow_share(adaptive)
        found.append(
            Claim(
                "KIP-794",
                "adaptive partitioning sends the slow broker less than a third of the bytes "
                "(29%; uniform 33%)",
                f"{share:.0%} (uniform "
                + (f"{slow_share(rows[(1, 'uniform')]):.0%})" if (1, "uniform") in rows else "-)"),
                share < 1 / 3,
            )
        )
    uniform2, adaptive2 = rows.get((2, "uniform")), rows.get((2, "default"))
    if uniform2 is not None and adaptive2 is not None:
        found.append(
            Claim(
                "KIP-794",
                "at 2 MB/s adaptive partitioning keeps latency stable where uniform overloads "
                "the slow broker (p99 167 ms against 2.4 s)",
                f"p99 {adaptive2['p99_ms']:,.0f} ms against {uniform2['p99_ms']:,.0f} ms",
                5 * adaptive2["p99_ms"] <= uniform2["p99_ms"],
            )
        )
    return found


SHORT_LABELS = {"old": "old", "uniform": "uniform", "default": "adaptive", "timeout5": "timeout 5"}


def plot(rows: list[dict[str, Any]], path: Path, setup: str) -> None:
    """Per configuration, Brook beside the KIP: the slow node's share of the bytes sent, the
    p99 latency and the throughput against the throttle."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = [(row, KIP_FIGURES.get((row["series"], row["configuration"]))) for row in rows]
    labels = [f"S{row['series']} {SHORT_LABELS[row['configuration']]}" for row in rows]
    x = list(range(len(rows)))
    width = 0.38
    brook_x = [i - width / 2 for i in x]
    kip_x = [i + width / 2 for i in x]
    fig, (share, p99, rate) = plt.subplots(1, 3, figsize=(15, 4.8))

    def bars(
        ax: Any, values: list[float | None], offsets: list[float], fmt: str, **kw: Any
    ) -> None:
        shown = [(o, v) for o, v in zip(offsets, values, strict=True) if v is not None]
        drawn = ax.bar([o for o, _ in shown], [v for _, v in shown], width, **kw)
        ax.bar_label(drawn, fmt=fmt, fontsize=7)

    names = sorted({who(row) for row in rows})
    brook_label = names[0] if len(names) == 1 else "Brook"
    panels = (
        (share, lambda f: 100 * slow_share(f), "%.0f%%"),
        (p99, lambda f: f["p99_ms"], "%.0f"),
        (rate, lambda f: f["mb_per_s"], "%.2f"),
    )
    for ax, value, fmt in panels:
        bars(ax, [value(r) for r, _ in pairs], brook_x, fmt, color="tab:blue", label=brook_label)
        kip = [value(k) if k else None for _, k in pairs]
        bars(ax, kip, kip_x, fmt, color="tab:orange", label="KIP")
    share.axhline(100 / 3, color="k", ls="--", lw=1, label="a third")
    share.set_ylabel("slow node's share of the bytes sent (%)")
    share.set_ylim(0, 100)
    p99.set_yscale("log")
    p99.set_ylabel("p99 produce latency (ms)")
    for i, (row, _) in enumerate(pairs):
        target = row["throughput"] * RECORD_SIZE / 1024 / 1024
        rate.plot([i - 0.45, i + 0.45], [target, target], color="k", lw=1)
    rate.set_ylabel("throughput (MB/s); black: the throttle")

    for ax in (share, p99, rate):
        ax.set_xticks(x, labels, rotation=30, ha="right", fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"KIP-794: a slow broker and the partitioner\n{setup}", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_path(switch_rule: str) -> Path:
    if switch_rule == "current":
        return DEFAULT_PLOT
    return DEFAULT_PLOT.with_name(f"{DEFAULT_PLOT.stem}-{switch_rule}-rule.png")


def setup_text(records: int, delay_ms: int, switch_rule: str) -> str:
    rule = "" if switch_rule == "current" else f", switch rule {switch_rule}"
    return (
        f"3-node brook cluster on one machine, foo: 3 partitions RF 1 one per node, node of "
        f"partition 1 slowed by {delay_ms} ms (brook cluster slow), {records} records of "
        f"{RECORD_SIZE} B, linger.ms=0{rule}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--records",
        type=int,
        default=KIP_RECORDS,
        help=f"--num-records per run (the KIP's: {KIP_RECORDS}); fewer for a quick look",
    )
    parser.add_argument("--series", default="1,2", help="which test series (1, 2 or 1,2)")
    parser.add_argument(
        "--configs",
        default=",".join(CONFIGURATIONS),
        help="configurations to run, of: " + ", ".join(CONFIGURATIONS),
    )
    parser.add_argument(
        "--delay-ms",
        type=int,
        default=DELAY_MS,
        help="the slow node's produce delay (brook cluster slow --produce-delay-ms)",
    )
    parser.add_argument(
        "--switch-rule",
        choices=RULES,
        default="current",
        help="current: Brook's partitioner as shipped (Kafka's rule since "
        "KAFKA-14156); kip-2022: the rule the KIP measured, patched in "
        "for diagnosis (bench/kip794_switch_rule.py)",
    )
    parser.add_argument(
        "--plot",
        nargs="?",
        const="",
        default=None,
        help=f"write the PNG (default path: {DEFAULT_PLOT.relative_to(ROOT)}, with the rule's "
        "name for --switch-rule kip-2022)",
    )
    parser.add_argument(
        "--from-results",
        metavar="JSON",
        help="run nothing: print the table (and --plot) from a saved results file",
    )
    args = parser.parse_args()
    if args.from_results:
        saved = json.loads(Path(args.from_results).read_text())
        was = saved["args"]
        print(report(saved["results"], with_kip=was["records"] == KIP_RECORDS))
        if args.plot is not None:
            path = Path(args.plot or plot_path(was["switch_rule"]))
            plot(
                saved["results"],
                path,
                setup_text(was["records"], was["delay_ms"], was["switch_rule"]),
            )
        return
    if args.plot == "":
        args.plot = str(plot_path(args.switch_rule))
    wanted = args.configs.split(",")
    unknown = [c for c in wanted if c not in CONFIGURATIONS]
    if unknown:
        parser.error(f"unknown configuration(s) {', '.join(unknown)}")
    plan = [
        (series, key)
        for series in (int(s) for s in args.series.split(","))
        for key in SERIES[series][1]
        if key in wanted
    ]
    workdir = Path(tempfile.mkdtemp(prefix="kip794-"))
    try:
        rows = [
            run_configuration(series, key, args.records, workdir, args.delay_ms, args.switch_rule)
            for series, key in plan
        ]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(report(rows, with_kip=args.records == KIP_RECORDS))
    if args.plot:
        plot(rows, Path(args.plot), setup_text(args.records, args.delay_ms, args.switch_rule))
        print(f"\nplot: {args.plot}")
    name = "kip794_experiment"
    if args.switch_rule != "current":
        name += f"-{args.switch_rule}-rule"
    if args.records != KIP_RECORDS:
        name += "-quick"
    path = save(name, {"machine": machine(), "args": vars(args), "results": rows})
    print(f"\nmachine: {machine()}\nsaved {path}")


if __name__ == "__main__":
    main()
