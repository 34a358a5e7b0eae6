"""``LocalCluster``: a cluster of ``brook server`` processes on loopback, for tests,
benchmarks, experiments and the ``brook cluster`` command.

``DIR/cluster.json`` records the layout, the ports, the overrides and the pids, so any process
(a later command, a test) finds the nodes; a node's process is its pid together with its start
time in ``/proc``, so a reused pid is never taken for it. Faults are signals (SIGKILL, SIGSTOP,
SIGCONT) and the dynamic ``brook.fault.*`` broker configs.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import brook
from brook.client.admin import Admin, AlterConfigOp, ConfigResource, QuorumInfo
from brook.client.connection import BrokerConnection
from brook.config.defs import ConfigError
from brook.config.server import FOLLOWER_FETCH_DELAY_KEY, PRODUCE_DELAY_KEY, parse_server_config
from brook.log.meta_properties import StorageCheckError, format_storage, new_uuid
from brook.metadata.offline import agreed_log_end, metadata_image
from brook.protocol.api import ApiKey
from brook.protocol.errors import KafkaError

from .cluster_config import (
    BROKER,
    BROKER_LISTENER,
    CONTROLLER,
    CONTROLLER_LISTENER,
    HOST,
    INTERNAL_LISTENER,
    MANAGED_KEYS,
    METRICS_PORT,
    ClusterError,
    Node,
    free_ports,
    plan_roles,
    render_properties,
    server_properties,
)

log = logging.getLogger("brook.cluster")

STATE_FILE = "cluster.json"
POLL_S = 0.1  # how often waits look again at the processes and ports
KILL_WAIT_S = 10.0  # a SIGKILLed process is gone within this (it only has to be reaped)

NodeState = Literal["running", "paused", "dead"]


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state letter: R, S, T, Z, ..., start time) of /proc/<pid>/stat; None: no process.

    Both stay readable while the process exits and as a zombie, unlike its command line."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()
    return fields[0], int(fields[19])  # fields 3 and 22 of proc(5)


def _tail(path: Path, lines: int = 30) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


async def _metadata_brokers(address: tuple[str, int], timeout_s: float) -> set[int]:
    """The broker ids a Metadata request to ``address`` lists."""
    ms = max(100, int(timeout_s * 1000))
    conn = BrokerConnection(*address, request_timeout_ms=ms, connect_timeout_ms=ms)
    try:
        await conn.connect()
        resp = await conn.send(
            ApiKey.METADATA,
            {
                "topics": [],
                "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False,
            },
        )
        return {int(b.node_id) for b in resp.brokers}
    finally:
        conn.close()


def _port_open(port: int, timeout_s: float) -> bool:
    try:
        with socket.create_connection((HOST, port), timeout=timeout_s):
            return True
    except OSError:
        return False


@dataclass(frozen=True)
class NodeStatus:
    """One node as ``status()`` sees it."""

    node_id: int
    roles: tuple[str, ...]
    pid: int | None
    state: NodeState
    ports: dict[str, int]


class NodeNotServing(ClusterError):
    """A node did not come up in time, or exited: the message carries its log's tail."""


@dataclass
class LocalCluster:
    """A cluster of ``brook server`` processes on loopback, described by ``DIR/cluster.json``.

    ``LocalCluster.create(dir, nodes=3)`` lays a new cluster out on disk (configs, formatted
    storage, the state file); ``LocalCluster.open(dir)`` finds an existing one. ``start()``
    runs every node and returns the bootstrap servers once all serve; ``stop()``, ``kill``,
    ``pause``, ``resume``, ``restart`` and ``slow`` act on nodes by id. ``with cluster:``
    starts it and stops it at the end. The methods block (they poll, bounded by their
    timeouts); call them from a thread without a running event loop.
    """

    directory: Path
    cluster_id: str
    nodes: list[Node]
    overrides: dict[str, str] = field(default_factory=dict)
    _children: dict[int, subprocess.Popen[bytes]] = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ creating and finding

    @classmethod
    def create(
        cls,
        directory: str | Path,
        *,
        nodes: int | None = None,
        controllers: int | None = None,
        brokers: int | None = None,
        overrides: Mapping[str, str] | None = None,
        metrics: bool = False,
        internal_listener: bool = False,
    ) -> LocalCluster:
        """Write a new cluster into ``directory``: each node's server.properties (checked as
        the node will check it), free loopback ports, one cluster id, every node's storage
        formatted with it, and the state file. Nothing is started. ``metrics``: every node
        serves Prometheus metrics on a port of its own (``Node.metrics_url``).

        ``internal_listener``: each broker also listens on INTERNAL, the inter-broker
        listener, so that the overrides can secure it (and the controller listener) with
        ``listener.security.protocol.map`` and Kafka's TLS / SASL settings while clients and
        the launcher keep the PLAINTEXT listener."""
        directory = Path(directory).resolve()
        if (directory / STATE_FILE).exists():
            raise ClusterError(f"{directory} already holds a cluster ({STATE_FILE})")
        extra = dict(overrides or {})
        bad = sorted(k for k in extra if k in MANAGED_KEYS)
        if bad:
            raise ClusterError(f"brook cluster sets {', '.join(bad)} for each node itself")
        layout = plan_roles(nodes, controllers, brokers)
        wanted = [
            (
                node_id,
                roles,
                [BROKER_LISTENER] * (BROKER in roles)
                + [INTERNAL_LISTENER] * (BROKER in roles and internal_listener)
                + [CONTROLLER_LISTENER] * (CONTROLLER in roles)
                + [METRICS_PORT] * metrics,
            )
            for node_id, roles in layout
        ]
        ports = iter(free_ports(sum(len(names) for _, _, names in wanted)))
        members = [
            Node(
                node_id, roles, {name: next(ports) for name in names}, directory / f"node-{node_id}"
            )
            for node_id, roles, names in wanted
        ]
        cluster = cls(directory, new_uuid(), members, extra)
        configs = {n.node_id: cluster.node_properties(n) for n in members}
        for node in members:
            try:
                parse_server_config(configs[node.node_id])
            except ConfigError as exc:
                raise ClusterError(f"node {node.node_id}: {exc}") from None
        for node in members:
            if node.directory.exists() and any(node.directory.iterdir()):
                raise ClusterError(f"{node.directory} is not empty: use another --dir")
        for node in members:
            node.directory.mkdir(parents=True, exist_ok=True)
            node.config_path.write_text(render_properties(configs[node.node_id]))
            try:
                format_storage([node.data_dir], cluster.cluster_id, node.node_id, False)
            except StorageCheckError as exc:
                raise ClusterError(f"node {node.node_id}: {exc}") from None
        cluster._save()
        log.info(
            "cluster %s laid out in %s: %s",
            cluster.cluster_id,
            directory,
            ", ".join(f"node {n.node_id} ({','.join(n.roles)})" for n in members),
        )
        return cluster

    @classmethod
    def open(cls, directory: str | Path) -> LocalCluster:
        """The cluster whose state file is in ``directory``."""
        directory = Path(directory).resolve()
        path = directory / STATE_FILE
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise ClusterError(
                f"no cluster in {directory}: {STATE_FILE} is missing (run 'brook cluster "
                f"start --dir {directory}' first)"
            ) from None
        except (OSError, ValueError) as exc:
            raise ClusterError(f"cannot read {path}: {exc}") from None
        return cls(
            directory,
            str(data["cluster_id"]),
            [Node.from_json(n) for n in data["nodes"]],
            {str(k): str(v) for k, v in data.get("overrides", {}).items()},
        )

    @classmethod
    def exists(cls, directory: str | Path) -> bool:
        return (Path(directory) / STATE_FILE).exists()

    def node_properties(self, node: Node) -> dict[str, str]:
        return server_properties(node, self.nodes, self.overrides)

    @property
    def layout(self) -> list[tuple[int, tuple[str, ...]]]:
        return [(n.node_id, n.roles) for n in self.nodes]

    # ------------------------------------------------------------------ state file

    def _state(self) -> dict[str, Any]:
        return {
            "cluster_id": self.cluster_id,
            "host": HOST,
            "bootstrap_servers": self.bootstrap_servers,
            "overrides": self.overrides,
            "nodes": [n.to_json() for n in self.nodes],
        }

    def _save(self) -> None:
        path = self.directory / STATE_FILE
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self._state(), indent=2) + "\n")
        os.replace(tmp, path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialises pid updates of commands run at the same time on one cluster."""
        with open(self.directory / "cluster.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    def _record_pid(self, node: Node, pid: int, started: int | None) -> None:
        with self._locked():
            self._refresh_pids()
            node.pid, node.started = pid, started
            self._save()

    def _refresh_pids(self) -> None:
        """Pick up the processes another command recorded (a restart from the shell)."""
        with contextlib.suppress(ClusterError):
            for n in LocalCluster.open(self.directory).nodes:
                mine = self._by_id(n.node_id)
                if mine is not None and n.pid is not None:
                    mine.pid, mine.started = n.pid, n.started

    # ------------------------------------------------------------------ lookups

    def _by_id(self, node_id: int) -> Node | None:
        return next((n for n in self.nodes if n.node_id == node_id), None)

    def node(self, node_id: int) -> Node:
        node = self._by_id(node_id)
        if node is None:
            ids = ", ".join(str(n.node_id) for n in self.nodes)
            raise ClusterError(f"unknown node id {node_id}: the cluster's nodes are {ids}")
        return node

    @property
    def brokers(self) -> list[Node]:
        return [n for n in self.nodes if n.is_broker]

    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of every broker's PLAINTEXT listener, comma-separated."""
        return ",".join(n.broker_address for n in self.brokers)

    def state(self, node_id: int) -> NodeState:
        """running, paused (stopped by SIGSTOP: state T in /proc/<pid>/stat) or dead."""
        node = self.node(node_id)
        if node.pid is None:
            return "dead"
        child = self._children.get(node.node_id)
        if child is not None and child.pid == node.pid:
            child.poll()  # reaps it if it exited, so it does not linger as a zombie
        stat = _proc_stat(node.pid)
        if stat is None or stat[1] != node.started or stat[0] in "ZXx":
            return "dead"  # gone, another process with the same pid, or exited
        return "paused" if stat[0] in "Tt" else "running"

    def status(self) -> list[NodeStatus]:
        self._refresh_pids()
        return [
            NodeStatus(n.node_id, n.roles, n.pid, self.state(n.node_id), dict(n.ports))
            for n in self.nodes
        ]

    # ------------------------------------------------------------------ starting

    def _launch(self, node: Node) -> None:
        """Run the node's ``brook server`` in a session of its own (a Ctrl-C of whoever
        launched it does not reach it), with this very package on its path."""
        package_root = str(Path(brook.__file__).resolve().parent.parent)
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (package_root, env.get("PYTHONPATH", "")) if p
        )
        cmd = [sys.executable, "-m", "brook.cli.main", "server", "--config", str(node.config_path)]
        with open(node.log_path, "ab") as out:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=node.directory,
                start_new_session=True,
            )
        self._children[node.node_id] = proc
        stat = _proc_stat(proc.pid)  # the child exists from fork on, exec or not
        self._record_pid(node, proc.pid, None if stat is None else stat[1])
        log.info("node %d started (pid %d), log %s", node.node_id, proc.pid, node.log_path)

    def start(self, timeout: float = 60.0) -> str:
        """Run every node that is not running and wait (up to ``timeout`` s) until every
        broker answers and lists every broker in its Metadata. Returns the bootstrap servers.
        On failure the nodes started here are stopped and :class:`NodeNotServing` says which
        node is not up, with the tail of its log."""
        self._refresh_pids()
        started = []
        try:
            for node in self.nodes:
                if self.state(node.node_id) == "dead":
                    self._launch(node)
                    started.append(node)
            self._wait_serving(self.nodes, timeout)
        except BaseException:
            self._terminate(started, KILL_WAIT_S)
            raise
        return self.bootstrap_servers

    def _not_serving(self, node: Node, everyone: Sequence[Node], probe_s: float) -> str | None:
        """Why ``node`` does not serve yet (None: it does)."""
        if node.is_broker:
            address = (HOST, node.ports[BROKER_LISTENER])
            try:
                listed = asyncio.run(_metadata_brokers(address, probe_s))
            except (KafkaError, OSError, TimeoutError) as exc:  # not up yet: refused, closed
                return f"no Metadata answer on {node.broker_address} ({exc})"
            missing = sorted({n.node_id for n in everyone if n.is_broker} - listed)
            if missing:
                return (
                    f"its Metadata lists brokers {sorted(listed)}, not yet "
                    f"{', '.join(map(str, missing))}"
                )
            return None
        port = node.ports[CONTROLLER_LISTENER]
        if not _port_open(port, probe_s):
            return f"nothing listening on {HOST}:{port} (controller listener)"
        return None

    def wait_until_serving(
        self, node_ids: Sequence[int] | None = None, timeout: float = 60.0
    ) -> None:
        """Poll until each node (all by default) serves: a broker answers Metadata on its
        listener and lists every broker among those nodes; a controller-only node accepts
        connections on its controller listener. A node whose process is gone fails at once
        (:class:`NodeNotServing`, with the tail of its log), as does one still not serving
        after ``timeout`` seconds."""
        ids = [n.node_id for n in self.nodes] if node_ids is None else list(node_ids)
        self._wait_serving([self.node(i) for i in ids], timeout)

    def _wait_serving(self, nodes: Sequence[Node], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        waiting = list(nodes)
        while True:
            for node in waiting:
                if self.state(node.node_id) == "dead":
                    raise NodeNotServing(self._failure(node, "its process exited"))
            for node in list(waiting):
                remaining = deadline - time.monotonic()
                reason = self._not_serving(node, nodes, max(0.2, min(2.0, remaining)))
                if reason is None:
                    waiting.remove(node)
                    continue
                if time.monotonic() >= deadline:
                    raise NodeNotServing(
                        self._failure(node, f"not up after {timeout:g} s: {reason}")
                    )
                break
            if not waiting:
                return
            time.sleep(POLL_S)

    def _failure(self, node: Node, what: str) -> str:
        return (
            f"node {node.node_id} ({','.join(node.roles)}) {what}\n"
            f"--- last lines of {node.log_path} ---\n{_tail(node.log_path)}"
        )

    # ------------------------------------------------------------------ stopping

    def _signal(self, node: Node, sig: signal.Signals) -> None:
        assert node.pid is not None
        with contextlib.suppress(ProcessLookupError):
            os.kill(node.pid, sig)

    def _wait_state(
        self, nodes: Sequence[Node], done: set[NodeState], timeout: float
    ) -> list[Node]:
        """Poll until every node's state is in ``done``; the nodes that are not by then."""
        deadline = time.monotonic() + timeout
        while True:
            left = [n for n in nodes if self.state(n.node_id) not in done]
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(POLL_S)

    def _terminate(self, nodes: Sequence[Node], timeout: float) -> None:
        """SIGTERM (a paused node is resumed to take it), wait, SIGKILL what remains."""
        live = [n for n in nodes if self.state(n.node_id) != "dead"]
        for node in live:
            paused = self.state(node.node_id) == "paused"
            self._signal(node, signal.SIGTERM)
            if paused:
                self._signal(node, signal.SIGCONT)
        for node in self._wait_state(live, {"dead"}, timeout):
            log.warning("node %d did not stop within %g s: killing it", node.node_id, timeout)
            self._signal(node, signal.SIGKILL)
        stuck = self._wait_state(live, {"dead"}, KILL_WAIT_S)
        if stuck:
            raise ClusterError(
                f"node(s) {', '.join(str(n.node_id) for n in stuck)} still running after SIGKILL"
            )

    def stop(self, timeout: float = 30.0) -> None:
        """Stop every node as an operator would: brokers first (broker-only, then combined
        nodes), then controller-only nodes; each group gets SIGTERM and ``timeout`` seconds
        to shut down cleanly before SIGKILL."""
        self._refresh_pids()
        groups = [
            [n for n in self.nodes if n.roles == (BROKER,)],
            [n for n in self.nodes if n.is_broker and n.is_controller],
            [n for n in self.nodes if n.roles == (CONTROLLER,)],
        ]
        for group in groups:
            self._terminate(group, timeout)
        log.info("cluster in %s stopped", self.directory)

    # ------------------------------------------------------------------ faults

    def _live(self, node_id: int) -> Node:
        self._refresh_pids()
        node = self.node(node_id)
        if self.state(node_id) == "dead":
            raise ClusterError(f"node {node_id} is not running")
        return node

    def kill(self, node_id: int) -> None:
        """SIGKILL the node (a crash: no checkpoints, no clean-shutdown marker)."""
        node = self._live(node_id)
        self._signal(node, signal.SIGKILL)
        if self._wait_state([node], {"dead"}, KILL_WAIT_S):
            raise ClusterError(f"node {node_id} is still running after SIGKILL")
        log.info("node %d killed", node_id)

    def pause(self, node_id: int) -> None:
        """SIGSTOP the node: its sockets stay open and nothing is answered."""
        node = self._live(node_id)
        self._signal(node, signal.SIGSTOP)
        if self._wait_state([node], {"paused"}, KILL_WAIT_S):
            raise ClusterError(f"node {node_id} did not stop on SIGSTOP")
        log.info("node %d paused", node_id)

    def resume(self, node_id: int) -> None:
        """SIGCONT a paused node."""
        node = self._live(node_id)
        self._signal(node, signal.SIGCONT)
        if self._wait_state([node], {"running"}, KILL_WAIT_S):
            raise ClusterError(f"node {node_id} did not resume on SIGCONT")
        log.info("node %d resumed", node_id)

    def stop_node(self, node_id: int, timeout: float = 30.0) -> None:
        """SIGTERM one node and wait until it has exited (SIGKILL after ``timeout``): a
        broker's controlled shutdown."""
        self._refresh_pids()
        self._terminate([self.node(node_id)], timeout)
        log.info("node %d stopped", node_id)

    def restart(self, node_id: int, timeout: float = 60.0) -> None:
        """Stop the node if it runs (SIGTERM, SIGKILL after ``timeout``), start it again with
        the same config and data, and wait until it serves (a broker answers Metadata that
        lists it; a controller accepts connections)."""
        self._refresh_pids()
        node = self.node(node_id)
        self._terminate([node], timeout)
        self._launch(node)
        try:
            self._wait_serving([node], timeout)
        except BaseException:
            self._terminate([node], KILL_WAIT_S)
            raise

    def slow(
        self,
        node_id: int,
        produce_delay_ms: int | None = None,
        fetch_delay_ms: int | None = None,
        timeout: float = 30.0,
    ) -> None:
        """Set the node's ``brook.fault.*`` delays at run time (IncrementalAlterConfigs on
        its broker resource, as ``brook configs --alter --entity-type brokers`` does); 0
        removes a delay. The values are kept in the metadata: a restart keeps them."""
        if produce_delay_ms is None and fetch_delay_ms is None:
            raise ClusterError("give --produce-delay-ms and/or --fetch-delay-ms")
        for name, value in (("produce", produce_delay_ms), ("fetch", fetch_delay_ms)):
            if value is not None and value < 0:
                raise ClusterError(f"the {name} delay must be >= 0 ms, not {value}")
        node = self._live(node_id)
        if not node.is_broker:
            raise ClusterError(
                f"node {node_id} is a controller-only node: the delays apply to brokers"
            )
        if self.state(node_id) == "paused":
            raise ClusterError(f"node {node_id} is paused: resume it first")
        ops = [
            AlterConfigOp(key, str(value))
            for key, value in (
                (PRODUCE_DELAY_KEY, produce_delay_ms),
                (FOLLOWER_FETCH_DELAY_KEY, fetch_delay_ms),
            )
            if value is not None
        ]
        ms = int(timeout * 1000)
        props = {"bootstrap.servers": node.broker_address, "default.api.timeout.ms": ms}
        with Admin(props) as admin:
            admin.incremental_alter_configs({ConfigResource.broker(node_id): ops}, timeout_ms=ms)
        log.info("node %d: %s", node_id, ", ".join(f"{op.name}={op.value}" for op in ops))

    # ------------------------------------------------------------------ the metadata quorum

    def describe_quorum(self, timeout: float = 3.0) -> QuorumInfo | None:
        """The metadata quorum as DescribeQuorum through a running broker reports it (the
        broker asks the active controller); None while no broker gets an answer (no leader
        yet, every broker down)."""
        ms = int(timeout * 1000)
        for node in self.brokers:
            if self.state(node.node_id) != "running":
                continue
            props = {"bootstrap.servers": node.broker_address, "default.api.timeout.ms": ms}
            try:
                with Admin(props) as admin:
                    return admin.describe_metadata_quorum(timeout_ms=ms)
            except (KafkaError, OSError, TimeoutError):
                continue
        return None

    def wait_metadata_caught_up(self, timeout: float = 60.0) -> QuorumInfo:
        """Poll until every node of the cluster (voter or observer) has the leader's whole
        metadata log and all of it is committed; the quorum as it was then."""
        expected = {n.node_id for n in self.nodes}
        deadline = time.monotonic() + timeout
        seen: QuorumInfo | None = None
        while time.monotonic() < deadline:
            seen = self.describe_quorum()
            if seen is not None:
                ends = {r.replica_id: r.log_end_offset for r in (*seen.voters, *seen.observers)}
                if set(ends) == expected and set(ends.values()) == {seen.high_watermark}:
                    return seen
            time.sleep(POLL_S)
        raise ClusterError(
            f"the nodes' metadata logs did not all reach the high watermark within "
            f"{timeout:g} s; last seen: {seen}"
        )

    def metadata_digests(self, committed: int = 0) -> dict[int, str]:
        """Once every node is stopped: each node's metadata image (``MetadataImage.digest``)
        at the end of the prefix all the metadata logs agree on (``agreed_log_end``: a
        deposed leader's uncommitted tail is left out). Equal values: the nodes agree.
        ``committed`` is a high watermark seen while the cluster ran; a shorter agreed prefix
        means committed records differ, and raises ``ClusterError``."""
        running = [n.node_id for n in self.nodes if self.state(n.node_id) != "dead"]
        if running:
            raise ClusterError(f"stop the cluster first: nodes {running} are running")
        agreed = agreed_log_end([n.data_dir for n in self.nodes])
        if agreed < committed:
            raise ClusterError(
                f"the metadata logs agree only up to offset {agreed}, below the high "
                f"watermark {committed} seen while the cluster ran"
            )
        return {n.node_id: metadata_image(n.data_dir, agreed).digest() for n in self.nodes}

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> LocalCluster:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
