"""``brook cluster`` as a user runs it: real launcher processes, real nodes, a real client.

One single-node cluster goes through every command (multi-node clusters wait for the Raft
quorum; their configuration is checked in tests/unit/cli/test_cluster_config.py). Sessions
are short (``broker.session.timeout.ms``) because a node that comes back re-registers only
once the controller has let its previous session expire, as in Kafka.
"""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from cli_support import Tool
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from rawclient import RawClient, produce
from support import env_with_repo, local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.protocol.records import build_simple_batch

SHORT_SESSIONS = ["broker.session.timeout.ms=4000", "broker.heartbeat.interval.ms=500"]


def brook_cluster(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "brook.cli.main", "cluster", *map(str, args)],
        capture_output=True,
        text=True,
        env=env_with_repo(),
        timeout=180,
    )


def ok(*args: str | Path) -> str:
    result = brook_cluster(*args)
    assert result.returncode == 0, result.stderr
    return result.stdout


def status(directory: Path) -> dict[str, Any]:
    return json.loads(ok("status", "--dir", directory, "--json"))


def gone(pid: int) -> bool:
    """No such process, or one that has exited and waits to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat[stat.rindex(")") + 2] in "ZX"


def produce_values(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 60000})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(60) == 0


def consume_values(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(values) < count and time.monotonic() < deadline:
            for msg in consumer.consume(100, 0.5):
                assert msg.error() is None, msg.error()
                values.append(msg.value())
    finally:
        consumer.close()
    return values


def metadata_answered(bootstrap: str, timeout: float) -> bool:
    """Whether one Metadata request on a new connection is answered within ``timeout``."""
    try:
        with RawClient(bootstrap, timeout=timeout) as client:
            client.request(
                3,
                12,
                {
                    "topics": [],
                    "allow_auto_topic_creation": False,
                    "include_topic_authorized_operations": False,
                },
            )
    except TimeoutError:
        return False
    return True


def produce_seconds(bootstrap: str, topic: str, value: bytes) -> float:
    """The time one acks=1 Produce request takes to be answered."""
    with RawClient(bootstrap, timeout=30) as client:
        started = time.monotonic()
        resp = produce(client, topic, 0, build_simple_batch([value]), acks=1)
        elapsed = time.monotonic() - started
    assert resp.responses[0].partition_responses[0].error_code == 0
    return elapsed


def test_single_node_cluster_through_every_command(tmp_path: Path) -> None:
    d = tmp_path / "cluster"
    overrides = [arg for item in SHORT_SESSIONS for arg in ("--override", item)]
    started = brook_cluster("start", "--dir", d, "--nodes", "1", *overrides)
    try:
        assert started.returncode == 0, started.stderr
        assert re.fullmatch(r"127\.0\.0\.1:\d+\n", started.stdout), started.stdout
        bootstrap = started.stdout.strip()
        node = status(d)["nodes"][0]
        assert (node["id"], node["roles"], node["state"]) == (
            1,
            ["broker", "controller"],
            "running",
        )
        assert bootstrap == f"127.0.0.1:{node['ports']['PLAINTEXT']}"
        text = ok("status", "--dir", d).splitlines()
        assert re.match(rf"1 +broker,controller +{node['pid']} +running +PLAINTEXT=", text[1])
        assert text[-1] == f"bootstrap servers: {bootstrap}"

        topic = f"cluster-{uuid.uuid4().hex[:8]}"
        first = [f"a{i}".encode() for i in range(10)]
        produce_values(bootstrap, topic, first)
        assert consume_values(bootstrap, topic, 10) == first

        ok("pause", "1", "--dir", d)
        assert status(d)["nodes"][0]["state"] == "paused"
        assert not metadata_answered(bootstrap, timeout=1.0)
        ok("resume", "1", "--dir", d)
        assert status(d)["nodes"][0]["state"] == "running"
        assert metadata_answered(bootstrap, timeout=30.0)
        second = [f"b{i}".encode() for i in range(5)]
        produce_values(bootstrap, topic, second)

        ok("slow", "1", "--dir", d, "--produce-delay-ms", "200")
        assert produce_seconds(bootstrap, topic, b"slow") >= 0.2

        pid = status(d)["nodes"][0]["pid"]
        ok("kill", "1", "--dir", d)
        assert status(d)["nodes"][0]["state"] == "dead"
        assert gone(pid)

        ok("restart", "1", "--dir", d)
        node = status(d)["nodes"][0]
        assert node["state"] == "running" and node["pid"] != pid
        assert consume_values(bootstrap, topic, 16) == [*first, *second, b"slow"]
        # the delay is a dynamic config in the metadata: the restarted node keeps it
        assert produce_seconds(bootstrap, topic, b"still slow") >= 0.2

        pids = [n["pid"] for n in status(d)["nodes"]]
        ok("stop", "--dir", d)
        assert all(gone(p) for p in pids)
        assert [n["state"] for n in status(d)["nodes"]] == ["dead"]
    finally:
        if LocalCluster.exists(d):
            LocalCluster.open(d).stop()


def test_local_cluster_helper_starts_and_stops(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "cluster", nodes=1) as cluster:
        statuses = cluster.status()
        assert [(s.node_id, s.state) for s in statuses] == [(1, "running")]
        assert metadata_answered(cluster.bootstrap_servers, timeout=30.0)
        cluster.pause(1)
        assert cluster.state(1) == "paused"
        cluster.resume(1)
        cluster.wait_until_serving([1], timeout=30.0)
    assert all(s.pid is not None and gone(s.pid) for s in statuses)
    assert [s.state for s in cluster.status()] == ["dead"]


def test_start_reports_the_node_that_does_not_come_up(tmp_path: Path) -> None:
    d = tmp_path / "cluster"
    cluster = LocalCluster.create(d, nodes=1)
    # something else already holds the node's port: the node cannot listen and exits
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", cluster.node(1).ports["PLAINTEXT"]))
        squatter.listen()
        result = brook_cluster("start", "--dir", d, "--timeout", "30")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "node 1 (broker,controller)" in result.stderr
    assert f"last lines of {cluster.node(1).log_path}" in result.stderr
    assert status(d)["nodes"][0]["state"] == "dead"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["status"], "no cluster in"),
        (["kill", "1"], "node 1 is not running"),
        (["restart", "9"], "unknown node id 9: the cluster's nodes are 1"),
        (["pause", "1"], "node 1 is not running"),
        (["slow", "1"], "give --produce-delay-ms and/or --fetch-delay-ms"),
        (["start", "--nodes", "3"], "already holds a cluster with another layout"),
        (["start", "--override", "num.partitions=2"], "already holds a cluster with other"),
        (["start", "--override", "listeners=PLAINTEXT://:1"], "sets listeners for each node"),
    ],
)
def test_errors_name_what_is_wrong(
    tool: Tool, tmp_path: Path, args: list[str], message: str
) -> None:
    d = tmp_path / "cluster"
    if args != ["status"]:
        LocalCluster.create(d, nodes=1)
    code, out, err = tool("cluster", *args, "--dir", str(d))
    assert code == 1 and out == ""
    assert message in err, err


def test_bad_override_is_refused_before_anything_is_written(tool: Tool, tmp_path: Path) -> None:
    d = tmp_path / "cluster"
    code, out, err = tool("cluster", "start", "--dir", str(d), "--override", "log.retension.ms=1")
    assert (code, out) == (1, "")
    assert "Unknown server configuration 'log.retension.ms'" in err
    assert not d.exists()
