"""Automatic leader balancing on a real 3-node ``brook cluster`` checking every second:
partitions not led by their preferred replica get it back by themselves, once that replica
is in the ISR (after a reassignment that reorders replicas; after a broker restarts)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from quorum_support import FAST, wait_for
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic

# Sessions longer than FAST's: a broker fenced by a slow heartbeat on a loaded machine leaves
# the ISRs until it has caught up again, and cannot lead meanwhile.
OVERRIDES = {
    **FAST,
    "broker.session.timeout.ms": "9000",
    "leader.imbalance.check.interval.seconds": "1",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("balance") / "c"
    with local_cluster(directory, nodes=3, overrides=OVERRIDES) as c:
        yield c


def _leaders(admin: Admin, topic: str) -> dict[int, tuple[int, tuple[int, ...], tuple[int, ...]]]:
    described = admin.describe_topics([topic])[topic]
    return {p.partition: (p.leader, p.replicas, p.isr) for p in described.partitions}


def _topic(admin: Admin, assignment: dict[int, list[int]]) -> str:
    name = f"balance-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(name, replica_assignment=assignment)])
    wait_for(f"{name} created", lambda: name in admin.list_topics())
    return name


def test_leader_follows_a_reordered_preferred_replica(cluster: LocalCluster) -> None:
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        topic = _topic(admin, {0: [1, 2, 3], 1: [2, 3, 1]})
        wait_for("leaders", lambda: _leaders(admin, topic)[0][0] == 1)
        # the reorder completes at once (no replica to add); the leader stays 1 until the
        # balancer elects the new preferred replica 3, which is in the ISR
        admin.alter_partition_reassignments({(topic, 0): [3, 1, 2]})
        assert 3 in _leaders(admin, topic)[0][2], "broker 3 left the ISR (fenced?)"
        wait_for(
            "partition 0 led by its new preferred replica",
            lambda: _leaders(admin, topic)[0][:2] == (3, (3, 1, 2)),
            timeout=30,
        )
        assert _leaders(admin, topic)[1][:2] == (2, (2, 3, 1))


def test_preferred_leaderships_come_back_after_a_restart(cluster: LocalCluster) -> None:
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        topic = _topic(admin, {0: [2, 1, 3], 1: [2, 3, 1], 2: [1, 2, 3]})
        wait_for("leaders", lambda: [v[0] for v in _leaders(admin, topic).values()] == [2, 2, 1])
        cluster.restart(2)  # controlled shutdown: its leaderships move away
        wait_for(
            "broker 2 back and serving",
            lambda: 2 in {b.node_id for b in admin.describe_cluster().brokers},
        )
        wait_for(  # replication brings it back into the ISRs
            "broker 2 back in the ISRs",
            lambda: all(2 in v[2] for v in _leaders(admin, topic).values()),
            timeout=60,
        )
        wait_for(
            "preferred leaders back",
            lambda: [v[0] for v in _leaders(admin, topic).values()] == [2, 2, 1],
            timeout=30,
        )
