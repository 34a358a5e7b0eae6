"""``brook reassign-partitions`` and ``brook leader-election`` against a real 3-node
``brook cluster``: JSON in and out, reassignments executed, listed, verified and cancelled,
preferred elections after a reassignment that only reorders replicas (which completes at
once: no replica has to join), Kafka's refusals. Automatic balancing is off here so that the
elections are the tools' own (tests/integration/cluster/test_leader_balancing.py covers it).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from cli_support import Tool
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic

OVERRIDES = {
    # long enough that a heartbeat delayed on a loaded machine does not fence a broker (it
    # would leave the ISRs for good: nothing brings it back without replication)
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "500",
    "auto.leader.rebalance.enable": "false",
}


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen in {timeout} s")
        time.sleep(0.1)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with local_cluster(tmp_path_factory.mktemp("tools") / "c", nodes=3, overrides=OVERRIDES) as c:
        yield c


@pytest.fixture
def admin(cluster: LocalCluster) -> Iterator[Admin]:
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as a:
        yield a


def _topic(admin: Admin, assignment: dict[int, list[int]]) -> str:
    name = f"moves-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(name, replica_assignment=assignment)])
    wait_for(f"{name} known", lambda: name in admin.list_topics())
    return name


def _replicas(admin: Admin, topic: str) -> dict[int, tuple[tuple[int, ...], int]]:
    described = admin.describe_topics([topic])[topic]
    return {p.partition: (p.replicas, p.leader) for p in described.partitions}


def _plan(path: Path, moves: dict[tuple[str, int], list[int]]) -> str:
    path.write_text(
        json.dumps(
            {
                "version": 1,
                "partitions": [
                    {"topic": t, "partition": p, "replicas": r} for (t, p), r in moves.items()
                ],
            }
        )
    )
    return str(path)


def test_generate_proposes_an_assignment_on_the_given_brokers(
    tool: Tool, cluster: LocalCluster, admin: Admin, tmp_path: Path
) -> None:
    topic = _topic(admin, {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    code, out, err = tool(
        "reassign-partitions",
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "2,3",
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, err) == (0, "")
    lines = out.split("\n")
    assert lines[0] == "Current partition replica assignment"
    assert lines[2:4] == ["", "Proposed partition reassignment configuration"]
    assert lines[5:] == [""]
    assert json.loads(lines[1]) == {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": 0, "replicas": [1, 2], "log_dirs": ["any", "any"]},
            {"topic": topic, "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "any"]},
            {"topic": topic, "partition": 2, "replicas": [3, 1], "log_dirs": ["any", "any"]},
        ],
    }
    assert lines[1] == json.dumps(json.loads(lines[1]), separators=(",", ":"))  # Kafka's form
    proposed = json.loads(lines[4])
    assert [p["partition"] for p in proposed["partitions"]] == [0, 1, 2]
    assert all(sorted(p["replicas"]) == [2, 3] for p in proposed["partitions"])
    leaders = [p["replicas"][0] for p in proposed["partitions"]]
    assert set(leaders) == {2, 3}  # leaders spread round-robin

    code, out, _ = tool(
        "reassign-partitions",
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "3",
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, out) == (1, "Error: Replication factor: 2 larger than available brokers: 1.\n")
    topics.write_text(json.dumps({"topics": [{"topic": "no-such-topic"}]}))
    code, out, _ = tool(
        "reassign-partitions",
        "--generate",
        "--topics-to-move-json-file",
        str(topics),
        "--broker-list",
        "1,2,3",
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, out) == (
        1,
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
        "Topic no-such-topic not found.\n",
    )


def test_reorder_completes_then_a_preferred_election_moves_the_leader(
    tool: Tool, cluster: LocalCluster, admin: Admin, tmp_path: Path
) -> None:
    topic = _topic(admin, {0: [1, 2, 3], 1: [2, 3, 1]})
    plan = _plan(tmp_path / "plan.json", {(topic, 0): [3, 1, 2]})
    code, out, err = tool(
        "reassign-partitions",
        "--execute",
        "--reassignment-json-file",
        plan,
        "--throttle",
        "1000000",
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, err) == (0, "")
    rollback = {
        "version": 1,
        "partitions": [
            {"topic": topic, "partition": 0, "replicas": [1, 2, 3], "log_dirs": ["any"] * 3}
        ],
    }
    assert out == (
        "Current partition replica assignment\n\n"
        f"{json.dumps(rollback, separators=(',', ':'))}\n\n"
        "Save this to use as the --reassignment-json-file option during rollback\n"
        "Note: Brook brokers do not throttle replication; the --throttle given is not "
        "applied.\n"
        f"Successfully started partition reassignment for {topic}-0\n"
    )
    # only the order changed: nothing to copy, so it is complete at once; the leader stays
    assert _replicas(admin, topic)[0] == ((3, 1, 2), 1)
    code, out, _ = tool(
        "reassign-partitions",
        "--verify",
        "--reassignment-json-file",
        plan,
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, out) == (
        0,
        "Status of partition reassignment:\n"
        f"Reassignment of partition {topic}-0 is completed.\n\n"
        "Brook brokers do not throttle replication: there are no throttles to clear.\n",
    )

    code, out, err = tool(
        "leader-election",
        "--election-type",
        "preferred",
        "--topic",
        topic,
        "--partition",
        "0",
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, out, err) == (
        0,
        f"Successfully completed leader election (PREFERRED) for partitions {topic}-0\n",
        "",
    )
    wait_for("leader 3", lambda: _replicas(admin, topic)[0] == ((3, 1, 2), 3))

    election = tmp_path / "election.json"
    election.write_text(
        json.dumps({"partitions": [{"topic": topic, "partition": p} for p in (0, 1)]})
    )
    code, out, err = tool(
        "leader-election",
        "--election-type",
        "PREFERRED",
        "--path-to-json-file",
        str(election),
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, out, err) == (
        0,
        f"Valid replica already elected for partitions {topic}-0, {topic}-1\n",
        "",
    )
    # a partition with a live leader needs no unclean election
    code, out, err = tool(
        "leader-election",
        "--election-type",
        "unclean",
        "--topic",
        topic,
        "--partition",
        "1",
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, out, err) == (0, f"Valid replica already elected for partitions {topic}-1\n", "")


def test_election_of_a_partition_that_does_not_exist(tool: Tool, cluster: LocalCluster) -> None:
    code, out, err = tool(
        "leader-election",
        "--election-type",
        "preferred",
        "--topic",
        "no-such-topic",
        "--partition",
        "0",
        bootstrap=cluster.bootstrap_servers,
    )
    assert code == 1
    assert out.startswith(
        "Error completing leader election (PREFERRED) for partition: no-such-topic-0: "
        "org.apache.kafka.common.errors.UnknownTopicOrPartitionException"
    )
    assert err == "1 replica(s) could not be elected\n"


def test_all_partitions_election(tool: Tool, cluster: LocalCluster, admin: Admin) -> None:
    topic = _topic(admin, {0: [2, 3]})
    code, out, err = tool(
        "leader-election",
        "--election-type",
        "preferred",
        "--all-topic-partitions",
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, err) == (0, "")
    assert out.startswith("Valid replica already elected for partitions ")
    assert f"{topic}-0" in out.split("partitions ", 1)[1].strip().split(", ")


def test_a_move_in_progress_is_listed_verified_and_cancelled(
    tool: Tool, cluster: LocalCluster, admin: Admin, tmp_path: Path
) -> None:
    # Broker 3 fetches slowly, so the replica it is to add stays out of the ISR for the test.
    cluster.slow(3, fetch_delay_ms=600_000)
    try:
        topic = _topic(admin, {0: [1, 2]})
        plan = _plan(tmp_path / "grow.json", {(topic, 0): [1, 3]})
        boot = cluster.bootstrap_servers
        code, out, _ = tool(
            "reassign-partitions", "--execute", "--reassignment-json-file", plan, bootstrap=boot
        )
        assert code == 0 and out.endswith(
            f"Successfully started partition reassignment for {topic}-0\n"
        )
        code, out, _ = tool("reassign-partitions", "--list", bootstrap=boot)
        assert (code, out) == (
            0,
            f"Current partition reassignments:\n{topic}-0: replicas: 1,3,2. adding: 3. "
            "removing: 2.\n",
        )
        code, out, _ = tool(
            "reassign-partitions", "--verify", "--reassignment-json-file", plan, bootstrap=boot
        )
        assert (code, out) == (
            0,
            f"Status of partition reassignment:\n"
            f"Reassignment of partition {topic}-0 is still in progress.\n\n",
        )
        # another reassignment needs --additional while one is in progress
        other = _plan(tmp_path / "other.json", {(topic, 0): [2, 1]})
        code, out, _ = tool(
            "reassign-partitions", "--execute", "--reassignment-json-file", other, bootstrap=boot
        )
        assert code == 1 and out.startswith("Cannot execute because there is an existing")

        code, out, _ = tool(
            "reassign-partitions", "--cancel", "--reassignment-json-file", plan, bootstrap=boot
        )
        assert (code, out) == (
            0,
            f"Successfully cancelled partition reassignment for: {topic}-0\n"
            "None of the specified partition moves are active.\n"
            "Brook brokers do not throttle replication: there are no throttles to clear.\n",
        )
        assert _replicas(admin, topic)[0][0] == (1, 2)
        code, out, _ = tool("reassign-partitions", "--list", bootstrap=boot)
        assert (code, out) == (0, "No partition reassignments found.\n")
        code, out, _ = tool(
            "reassign-partitions", "--verify", "--reassignment-json-file", plan, bootstrap=boot
        )
        assert code == 0 and out.startswith(
            "Status of partition reassignment:\n"
            f"There is no active reassignment of partition {topic}-0, but replica set is 1,2 "
            "rather than 1,3.\n"
        )
        code, out, _ = tool(
            "reassign-partitions", "--cancel", "--reassignment-json-file", plan, bootstrap=boot
        )
        assert code == 0 and out.startswith(
            "None of the specified partition reassignments are active.\n"
        )
    finally:
        cluster.slow(3, fetch_delay_ms=0)


@pytest.mark.parametrize(
    ("moves", "message"),
    [
        ({("TOPIC", 0): [1, 9]}, "Error: Unknown broker id 9"),
        (
            {("TOPIC", 7): [1, 2]},
            "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
            "Unable to find partition: TOPIC-7",
        ),
        (
            {("no-such-topic", 0): [1]},
            "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
            "Topic no-such-topic not found.",
        ),
        ({}, "Error: Partition reassignment list cannot be empty"),
        ({("TOPIC", 0): []}, "Error: Partition replica list cannot be empty"),
        (
            {("TOPIC", 0): [1, 2, 1]},
            "Error: Partition replica lists may not contain duplicate entries: TOPIC-0 "
            "contains multiple entries for 1",
        ),
    ],
)
def test_execute_refusals(
    tool: Tool,
    cluster: LocalCluster,
    admin: Admin,
    tmp_path: Path,
    moves: dict[tuple[str, int], list[int]],
    message: str,
) -> None:
    topic = _topic(admin, {0: [1, 2]})
    moves = {(t.replace("TOPIC", topic), p): r for (t, p), r in moves.items()}
    plan = _plan(tmp_path / "bad.json", moves)
    code, out, err = tool(
        "reassign-partitions",
        "--execute",
        "--reassignment-json-file",
        plan,
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, out, err) == (1, message.replace("TOPIC", topic) + "\n", "")
    assert _replicas(admin, topic)[0][0] == (1, 2)


def _brokers(admin: Admin) -> set[int]:
    return {b.node_id for b in admin.describe_cluster().brokers}


def test_unclean_election_of_a_partition_without_leader(
    tool: Tool, cluster: LocalCluster, admin: Admin
) -> None:
    topic = _topic(admin, {0: [1, 2]})
    # broker 2 leaves the ISR (fenced) and comes back unable to fetch (a fault delay, which
    # a restart keeps), so out of the ISR; then the last ISR member dies
    cluster.slow(2, fetch_delay_ms=3_600_000)
    cluster.kill(2)
    wait_for("2 out of the ISR", lambda: _isr(admin, topic) == (1,))
    cluster.restart(2)
    wait_for("2 back", lambda: 2 in _brokers(admin))
    cluster.kill(1)
    try:
        wait_for("1 fenced", lambda: 1 not in _brokers(admin))
        # without unclean.leader.election.enable the controller elects no one by itself
        wait_for("no leader", lambda: _replicas(admin, topic)[0][1] == -1)
        assert _isr(admin, topic) == (1,)
        boot = cluster.node(2).broker_address
        args = ["--topic", topic, "--partition", "0"]
        code, out, err = tool(
            "leader-election", "--election-type", "preferred", *args, bootstrap=boot
        )
        assert code == 1 and err == "1 replica(s) could not be elected\n"
        assert out.startswith(
            f"Error completing leader election (PREFERRED) for partition: {topic}-0: "
            "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException"
        )
        code, out, err = tool(
            "leader-election", "--election-type", "unclean", *args, bootstrap=boot
        )
        assert (code, out, err) == (
            0,
            f"Successfully completed leader election (UNCLEAN) for partitions {topic}-0\n",
            "",
        )
        wait_for("2 leads alone", lambda: _replicas(admin, topic)[0][1] == 2)
        assert _isr(admin, topic) == (2,)
    finally:
        cluster.restart(1)
        cluster.slow(2, fetch_delay_ms=0)
    wait_for("1 back", lambda: 1 in _brokers(admin))


def test_preferred_election_after_a_restart(
    tool: Tool, cluster: LocalCluster, admin: Admin, tmp_path: Path
) -> None:
    topic = _topic(admin, {0: [3, 1], 1: [3, 2]})
    wait_for("3 leads", lambda: all(v[1] == 3 for v in _replicas(admin, topic).values()))
    cluster.restart(3)  # controlled shutdown: leadership moves to 1 and 2
    wait_for("3 back", lambda: 3 in _brokers(admin))
    assert [v[1] for v in _replicas(admin, topic).values()] == [1, 2]
    # replication brings it back into the ISRs, and only then can it lead again
    wait_for("3 back in the ISRs", lambda: all(3 in _isr(admin, topic, p) for p in (0, 1)), 60)
    # this topic's partitions only: other tests' topics may have replicas out of their ISRs
    partitions = tmp_path / "partitions.json"
    partitions.write_text(
        json.dumps({"partitions": [{"topic": topic, "partition": p} for p in (0, 1)]})
    )
    code, out, err = tool(
        "leader-election",
        "--election-type",
        "preferred",
        "--path-to-json-file",
        str(partitions),
        bootstrap=cluster.bootstrap_servers,
    )
    assert (code, err) == (0, "")
    assert f"{topic}-0, {topic}-1" in out.split("\n")[0]
    wait_for("3 leads again", lambda: all(v[1] == 3 for v in _replicas(admin, topic).values()))


def _isr(admin: Admin, topic: str, partition: int = 0) -> tuple[int, ...]:
    described = admin.describe_topics([topic])[topic]
    return next(p.isr for p in described.partitions if p.partition == partition)
