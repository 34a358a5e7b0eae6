"""``brook cluster``: a local multi-process cluster for development, tests, benchmarks and
experiments, and its faults (kill, pause, slow a node).

    brook cluster start --dir DIR [--nodes N] [--controllers C] [--brokers B] \\
        [--override KEY=VALUE ...] [--timeout S]          # prints the bootstrap servers
    brook cluster status --dir DIR [--json]
    brook cluster stop --dir DIR [--timeout S]
    brook cluster kill|pause|resume NODE --dir DIR
    brook cluster restart NODE --dir DIR [--timeout S]
    brook cluster slow NODE --dir DIR [--produce-delay-ms N] [--fetch-delay-ms N]

Each node is a real ``brook server`` process with its own directory ``DIR/node-<id>/``
(``server.properties``, ``server.log``, ``data/``); ``DIR/cluster.json`` remembers the layout,
the ports, the overrides and the pids, so every later command (from any process) finds the
nodes. Tests, benchmarks and experiments use :class:`LocalCluster` directly.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from brook.protocol.errors import KafkaError

from .cluster_config import ClusterError, parse_overrides, plan_roles
from .local_cluster import LocalCluster, NodeNotServing, log

__all__ = ["ClusterError", "LocalCluster", "NodeNotServing", "main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="brook cluster",
        description="A local multi-process cluster for development, tests, benchmarks and "
        "experiments, and its faults (kill, pause, slow a node).",
    )
    sub = parser.add_subparsers(dest="action", required=True)

    def command(name: str, help_: str, node: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_)
        if node:
            p.add_argument("node", type=int, metavar="NODE", help="node id")
        p.add_argument("--dir", required=True, type=Path, help="the cluster's directory")
        return p

    start = command("start", "lay out (first time) and start a cluster; prints bootstrap servers")
    start.add_argument("--nodes", type=int, help="combined broker+controller nodes (default 3)")
    start.add_argument("--controllers", type=int, help="voters: nodes 1..C")
    start.add_argument("--brokers", type=int, help="broker-only nodes after C controllers")
    start.add_argument("--override", action="append", default=[], metavar="KEY=VALUE")
    start.add_argument(
        "--metrics",
        action="store_true",
        help="every node serves Prometheus metrics on a port of its own (see status)",
    )
    start.add_argument(
        "--internal-listener",
        action="store_true",
        help="brokers replicate over a listener of their own, INTERNAL, which --override can "
        "secure (listener.security.protocol.map, ssl.*, listener.name.internal.*)",
    )
    start.add_argument("--timeout", type=float, default=60.0, help="seconds (default 60)")
    status = command("status", "each node's roles, pid, state and ports")
    status.add_argument("--json", action="store_true", help="the status as JSON")
    command("stop", "stop every node (brokers first)").add_argument(
        "--timeout", type=float, default=30.0, help="seconds before SIGKILL (default 30)"
    )
    command("kill", "SIGKILL a node", node=True)
    command("pause", "SIGSTOP a node", node=True)
    command("resume", "SIGCONT a paused node", node=True)
    command("restart", "stop a node if running and start it again", node=True).add_argument(
        "--timeout", type=float, default=60.0, help="seconds (default 60)"
    )
    slow = command("slow", "set a broker's fault-injection delays at run time", node=True)
    slow.add_argument("--produce-delay-ms", type=int, help="delay each produce response")
    slow.add_argument("--fetch-delay-ms", type=int, help="delay each follower fetch")
    return parser


def _start(args: argparse.Namespace) -> int:
    overrides = parse_overrides(args.override)
    layout_given = any(v is not None for v in (args.nodes, args.controllers, args.brokers))
    if LocalCluster.exists(args.dir):
        cluster = LocalCluster.open(args.dir)
        if layout_given and plan_roles(args.nodes, args.controllers, args.brokers) != (
            cluster.layout
        ):
            raise ClusterError(
                f"{cluster.directory} already holds a cluster with another layout "
                f"({_describe(cluster.layout)}); start it without layout flags or use "
                "another --dir"
            )
        if args.metrics and any(n.metrics_url is None for n in cluster.nodes):
            raise ClusterError(
                f"{cluster.directory} already holds a cluster without metrics; use another "
                "--dir to have them"
            )
        if overrides and overrides != cluster.overrides:
            raise ClusterError(
                f"{cluster.directory} already holds a cluster with other overrides "
                f"({_overrides_text(cluster.overrides)}); use another --dir to change them"
            )
    else:
        cluster = LocalCluster.create(
            args.dir,
            nodes=args.nodes,
            controllers=args.controllers,
            brokers=args.brokers,
            overrides=overrides,
            metrics=args.metrics,
            internal_listener=args.internal_listener,
        )
    print(cluster.start(args.timeout), flush=True)
    return 0


def _describe(layout: Sequence[tuple[int, tuple[str, ...]]]) -> str:
    return ", ".join(f"{node_id}:{'+'.join(roles)}" for node_id, roles in layout)


def _overrides_text(overrides: Mapping[str, str]) -> str:
    return " ".join(f"{k}={v}" for k, v in overrides.items()) or "none"


def _status(cluster: LocalCluster, as_json: bool) -> int:
    rows = cluster.status()
    if as_json:
        nodes = []
        for row, node in zip(rows, cluster.nodes, strict=True):
            nodes.append({**node.to_json(), "state": row.state})
        doc = {
            "directory": str(cluster.directory),
            "cluster_id": cluster.cluster_id,
            "bootstrap_servers": cluster.bootstrap_servers,
            "overrides": cluster.overrides,
            "nodes": nodes,
        }
        print(json.dumps(doc, indent=2))
        return 0
    print(f"{'NODE':<6}{'ROLES':<19}{'PID':<9}{'STATE':<9}PORTS")
    for row in rows:
        ports = " ".join(f"{name}={port}" for name, port in row.ports.items())
        pid = "-" if row.pid is None else str(row.pid)
        print(f"{row.node_id:<6}{','.join(row.roles):<19}{pid:<9}{row.state:<9}{ports}")
    print(f"bootstrap servers: {cluster.bootstrap_servers}")
    return 0


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    # Progress goes to stderr: stdout carries only what a script reads (bootstrap, status).
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("brook cluster: %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        return _run(args)
    except ClusterError as exc:
        print(f"brook cluster: {exc}", file=sys.stderr)
        return 1
    except KafkaError as exc:  # the broker refused or did not answer a slow
        print(f"brook cluster: node {args.node}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        log.removeHandler(handler)


def _run(args: argparse.Namespace) -> int:
    if args.action == "start":
        return _start(args)
    cluster = LocalCluster.open(args.dir)
    if args.action == "status":
        return _status(cluster, args.json)
    if args.action == "stop":
        cluster.stop(args.timeout)
    elif args.action == "kill":
        cluster.kill(args.node)
    elif args.action == "pause":
        cluster.pause(args.node)
    elif args.action == "resume":
        cluster.resume(args.node)
    elif args.action == "restart":
        cluster.restart(args.node, args.timeout)
    elif args.action == "slow":
        cluster.slow(args.node, args.produce_delay_ms, args.fetch_delay_ms)
    return 0
