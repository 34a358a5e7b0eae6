"""The layout of a local cluster (``brook cluster``): which node has which roles, the free
loopback ports, and the ``server.properties`` each node gets, with Kafka's names.

Pure but for :func:`free_ports`; what it produces is written and run by
:mod:`brook.cli.local_cluster`.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"
BROKER_LISTENER = "PLAINTEXT"
CONTROLLER_LISTENER = "CONTROLLER"
# Not a Kafka listener: the port of the node's Prometheus endpoint (metrics.prometheus.listener)
METRICS_PORT = "METRICS"
INTERNAL_LISTENER = "INTERNAL"
BROKER = "broker"
CONTROLLER = "controller"
# What the launcher writes for each node; an override of one would break the layout.
MANAGED_KEYS = frozenset(
    {
        "node.id",
        "broker.id",
        "process.roles",
        "controller.quorum.voters",
        "controller.quorum.bootstrap.servers",
        "controller.listener.names",
        "listeners",
        "advertised.listeners",
        "inter.broker.listener.name",
        "log.dirs",
        "log.dir",
        "metrics.prometheus.listener",
    }
)


class ClusterError(Exception):
    """Something the user must fix or know: the message names the node and what is wrong."""


def plan_roles(
    nodes: int | None = None, controllers: int | None = None, brokers: int | None = None
) -> list[tuple[int, tuple[str, ...]]]:
    """The (node id, roles) of a layout, ids from 1.

    ``nodes`` alone: that many combined voters; with ``controllers`` C < N: nodes 1..C combined,
    the rest broker-only; ``controllers`` with ``brokers`` (no ``nodes``): C controller-only
    voters, then B broker-only nodes. Nothing given: three combined nodes."""
    if nodes is None and controllers is None and brokers is None:
        nodes = 3
    if nodes is not None:
        if brokers is not None:
            raise ClusterError("--brokers goes with --controllers, not with --nodes")
        if nodes < 1:
            raise ClusterError(f"--nodes must be at least 1, not {nodes}")
        voters = nodes if controllers is None else controllers
        if not 1 <= voters <= nodes:
            raise ClusterError(
                f"--controllers must be between 1 and --nodes ({nodes}), not {voters}"
            )
        return [
            (i, (BROKER, CONTROLLER) if i <= voters else (BROKER,)) for i in range(1, nodes + 1)
        ]
    if controllers is None or brokers is None:
        raise ClusterError("--controllers and --brokers go together (or give --nodes)")
    if controllers < 1 or brokers < 1:
        raise ClusterError("--controllers and --brokers must each be at least 1")
    return [(i, (CONTROLLER,)) for i in range(1, controllers + 1)] + [
        (i, (BROKER,)) for i in range(controllers + 1, controllers + brokers + 1)
    ]


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports: every socket stays bound until all are picked,
    so the kernel cannot hand out the same port twice."""
    with contextlib.ExitStack() as stack:
        socks = []
        for _ in range(count):
            s = stack.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            s.bind((HOST, 0))
            socks.append(s)
        return [int(s.getsockname()[1]) for s in socks]


def parse_overrides(items: Sequence[str]) -> dict[str, str]:
    """``KEY=VALUE`` flags -> a dict; keys the launcher sets itself are refused by name."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ClusterError(f"--override expects KEY=VALUE, got '{item}'")
        if "\n" in item:
            raise ClusterError(f"--override {key}: the value must fit on one line")
        if key in MANAGED_KEYS:
            raise ClusterError(f"--override {key}: brook cluster sets {key} for each node itself")
        out[key] = value
    return out


@dataclass
class Node:
    """One node of the cluster as the state file records it."""

    node_id: int
    roles: tuple[str, ...]
    ports: dict[str, int]  # listener name -> loopback port
    directory: Path
    pid: int | None = None
    # the process's start time (/proc/<pid>/stat, clock ticks since boot): with the pid, it
    # names one process for good, even once the pid is reused
    started: int | None = None

    @property
    def is_broker(self) -> bool:
        return BROKER in self.roles

    @property
    def is_controller(self) -> bool:
        return CONTROLLER in self.roles

    @property
    def config_path(self) -> Path:
        return self.directory / "server.properties"

    @property
    def data_dir(self) -> Path:
        return self.directory / "data"

    @property
    def log_path(self) -> Path:
        return self.directory / "server.log"

    @property
    def metrics_url(self) -> str | None:
        """The node's Prometheus endpoint, when the cluster was made with one."""
        port = self.ports.get(METRICS_PORT)
        return None if port is None else f"http://{HOST}:{port}/metrics"

    @property
    def broker_address(self) -> str:
        return f"{HOST}:{self.ports[BROKER_LISTENER]}"

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.node_id,
            "roles": list(self.roles),
            "ports": self.ports,
            "dir": str(self.directory),
            "config": str(self.config_path),
            "data_dir": str(self.data_dir),
            "log": str(self.log_path),
            "pid": self.pid,
            "started": self.started,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Node:
        return cls(
            int(data["id"]),
            tuple(data["roles"]),
            {str(k): int(v) for k, v in data["ports"].items()},
            Path(data["dir"]),
            None if data.get("pid") is None else int(data["pid"]),
            None if data.get("started") is None else int(data["started"]),
        )


OFFSETS_TOPIC_REPLICAS = 3


def server_properties(
    node: Node, nodes: Sequence[Node], overrides: Mapping[str, str]
) -> dict[str, str]:
    """The ``server.properties`` of ``node`` in a cluster of ``nodes``: Kafka's names, the
    listeners its roles need, every voter's controller endpoint, then the overrides."""
    voters = ",".join(
        f"{n.node_id}@{HOST}:{n.ports[CONTROLLER_LISTENER]}" for n in nodes if n.is_controller
    )
    listeners = [
        f"{name}://{HOST}:{port}" for name, port in node.ports.items() if name != METRICS_PORT
    ]
    props = {
        "node.id": str(node.node_id),
        "process.roles": ",".join(node.roles),
        "controller.quorum.voters": voters,
        "controller.listener.names": CONTROLLER_LISTENER,
        "listeners": ",".join(listeners),
    }
    if node.is_broker:
        # brokers replicate over INTERNAL when the cluster has one (--internal-listener),
        # whose security protocol and settings come from the overrides
        internal = INTERNAL_LISTENER in node.ports
        props["inter.broker.listener.name"] = INTERNAL_LISTENER if internal else BROKER_LISTENER
    props["log.dirs"] = str(node.data_dir)
    if METRICS_PORT in node.ports:
        props["metrics.prometheus.listener"] = f"http://{HOST}:{node.ports[METRICS_PORT]}"
    # Kafka's default of 3 replicas for __consumer_offsets, or every broker of a smaller
    # cluster (groups would otherwise wait for brokers that never come)
    brokers = sum(1 for n in nodes if n.is_broker)
    props["offsets.topic.replication.factor"] = str(min(OFFSETS_TOPIC_REPLICAS, brokers))
    props.update(overrides)
    return props


def render_properties(props: Mapping[str, str]) -> str:
    lines = ["# Written by 'brook cluster start'; the cluster's layout is in ../cluster.json"]
    lines += [f"{key}={value}" for key, value in props.items()]
    return "\n".join(lines) + "\n"
