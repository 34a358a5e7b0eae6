"""KIP-794's experiment on one command: a 3-node cluster with one node slow by 20 ms, and
``brook producer-perf-test`` run with each partitioner configuration of the KIP's Test Series 1
(2048 records/s) and 2 (4096 records/s).

    python -m bench.kip794_experiment [--records 122880] [--series 1,2] [--configs ...]

The KIP's set-up was three Kafka brokers on one machine, topic foo with 3 partitions (RF 1,
one per broker) and a 20 ms sleep injected in Kafka-0's produce responses. Here one Brook
broker plays the three nodes behind tests/multinode_proxy.py, which names them 0, 1 and 2
with partition 1 led by node 0 (as in the KIP), and holds node 0's Produce responses 20 ms
each, serially: a Kafka broker reads a connection's next request only once it has answered
the previous one, so a 20 ms sleep in its handler spaces that connection's answers at least
20 ms apart. Each configuration gets a fresh broker and runs the tool as a subprocess with
the KIP's arguments; the final line and the per-node ``outgoing-byte-total`` are parsed from
its real output. The producer runs with Kafka's defaults of the KIP's time (3.3:
``linger.ms=0``; Brook's own default is Kafka 4.0's 5 ms). ``--switch-rule kip-2022`` runs
the tool with the partition-switch rule the KIP measured instead of the one Brook ships
(bench/kip794_switch_rule.py), for diagnosis. Results go to
bench/results/kip794_experiment*.json; docs/experiments.md reads them beside the KIP's.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brook.client.admin import Admin, NewTopic
from brook.client.consumer import Consumer

from .common import ROOT, MultiNodeProxy, brook_broker, machine, save
from .kip794_switch_rule import RULES

TOPIC = "foo"
PARTITIONS = 3
RECORD_SIZE = 512
KIP_RECORDS = 122880
SLOW_NODE = 0
DELAY_MS = 20.0
# Partition 0 -> node 1, partition 1 -> node 0 (the slow one), partition 2 -> node 2.
NODE_IDS = (1, 0, 2)
# The KIP ran Kafka 3.3's producer defaults; Brook's linger.ms default follows Kafka 4.0.
BASE_PROPERTIES = {"linger.ms": "0"}
RUN_TIMEOUT_S = 1800.0


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


def run_configuration(
    series: int, key: str, records: int, delay_ms: float, serial: bool, switch_rule: str = "current"
) -> dict[str, Any]:
    throughput = SERIES[series][0]
    config = CONFIGURATIONS[key]
    print(f"series {series}, {config.label}:", flush=True)
    load_before = os.getloadavg()
    with brook_broker() as bootstrap:
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        with MultiNodeProxy(
            bootstrap, 3, {SLOW_NODE: delay_ms}, serial=serial, node_ids=NODE_IDS
        ) as proxy:
            lines = run_tool(proxy.bootstrap, records, throughput, config.properties, switch_rule)
            produce_requests = proxy.produce_requests
            leaders = {p: proxy.leader_of(p) for p in range(PARTITIONS)}
        partitions = records_per_partition(bootstrap)
    parsed = parse_output(lines)
    return {
        "series": series,
        "configuration": key,
        "label": config.label,
        "throughput": throughput,
        "switch_rule": switch_rule,
        "properties": {**BASE_PROPERTIES, **config.properties},
        **parsed,
        "produce_requests_at_proxy": produce_requests,
        "records_per_partition": partitions,
        "leaders": leaders,
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "output": lines,
    }


def _node_bytes(row: dict[str, Any]) -> dict[int, float]:
    nodes = row.get("node_bytes")
    if nodes is not None:
        return {int(n): float(v) for n, v in nodes.items()}
    return {int(n): m.get("outgoing-byte-total", 0.0) for n, m in row["nodes"].items()}


def report(rows: list[dict[str, Any]], with_kip: bool = True) -> str:
    """The KIP's summary table, with the node bytes beside it; the KIP's rows follow ours."""
    lines = [
        "| series | partitioner config | run | throughput | avg latency | p99 | p99.9 "
        "| node-0 bytes | node-1 bytes | node-2 bytes | node-0 share |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        who = "Brook" if row["switch_rule"] == "current" else "Brook, 2022 rule"
        entries = [(who, row)]
        kip = KIP_FIGURES.get((row["series"], row["configuration"]))
        if with_kip and kip is not None:
            entries.append(("KIP", kip))
        for who, figures in entries:
            nodes = _node_bytes(figures)
            total = sum(nodes.values()) or 1.0
            lines.append(
                f"| {row['series']} | {row['label']} | {who} | {figures['mb_per_s']:.2f} MB/s "
                f"| {figures['avg_ms']:.2f} ms | {figures['p99_ms']:.0f} ms "
                f"| {figures['p999_ms']:.0f} ms | "
                + " | ".join(f"{nodes.get(n, 0.0):,.0f}" for n in (0, 1, 2))
                + f" | {nodes.get(0, 0.0) / total:.0%} |"
            )
    return "\n".join(lines)


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
        "--delay-ms", type=float, default=DELAY_MS, help="delay of node 0's Produce responses"
    )
    parser.add_argument(
        "--delay-mode",
        choices=("serial", "pipelined"),
        default="serial",
        help="serial: a Kafka broker sleeping in its handler (the KIP's); "
        "pipelined: each response held from its own arrival",
    )
    parser.add_argument(
        "--switch-rule",
        choices=RULES,
        default="current",
        help="current: Brook's partitioner as shipped (Kafka's rule since "
        "KAFKA-14156); kip-2022: the rule the KIP measured, patched in "
        "for diagnosis (bench/kip794_switch_rule.py)",
    )
    args = parser.parse_args()
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
    rows = [
        run_configuration(
            series, key, args.records, args.delay_ms, args.delay_mode == "serial", args.switch_rule
        )
        for series, key in plan
    ]
    print()
    print(report(rows, with_kip=args.records == KIP_RECORDS))
    name = "kip794_experiment"
    if args.switch_rule != "current":
        name += f"-{args.switch_rule}-rule"
    if args.records != KIP_RECORDS:
        name += "-quick"
    path = save(
        name, {"machine": machine(), "args": vars(args), "delay_node": SLOW_NODE, "results": rows}
    )
    print(f"\nmachine: {machine()}\nsaved {path}")


if __name__ == "__main__":
    main()
