"""``__consumer_offsets`` on a real ``brook cluster`` whose brokers are not all up: as in
Kafka, it is not created until ``offsets.topic.replication.factor`` brokers are alive
(FindCoordinator answers COORDINATOR_NOT_AVAILABLE meanwhile), then it is created with that
many replicas."""

from __future__ import annotations

from pathlib import Path

from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster

from brook.client.admin import Admin
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors


def _find_coordinator(bootstrap: str, group: str) -> tuple[int, int]:
    with RawClient(bootstrap) as client:
        resp = client.request(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]}
        )
    (coordinator,) = resp.coordinators
    return int(coordinator.error_code), int(coordinator.node_id)


def test_offsets_topic_waits_for_its_replication_factor(tmp_path: Path) -> None:
    # nodes 1-3 are the voters, node 4 a broker: with 3 and 4 away two voters keep the
    # quorum and two brokers are alive, one short of the factor
    with local_cluster(tmp_path / "c", nodes=4, controllers=3, overrides=FAST) as cluster:
        boot = cluster.node(1).broker_address
        cluster.stop_node(4)
        cluster.stop_node(3)
        with Admin({"bootstrap.servers": boot}) as admin:
            wait_for(
                "brokers 3 and 4 gone",
                lambda: {b.node_id for b in admin.describe_cluster().brokers} == {1, 2},
            )
            assert _find_coordinator(boot, "g") == (Errors.COORDINATOR_NOT_AVAILABLE, -1)
            assert "__consumer_offsets" not in admin.list_topics(include_internal=True)

            cluster.restart(3)
            cluster.restart(4)
            wait_for(
                "brokers 3 and 4 back",
                lambda: {b.node_id for b in admin.describe_cluster().brokers} == {1, 2, 3, 4},
            )
            _, node = wait_for(
                "a coordinator",
                lambda: (found := _find_coordinator(boot, "g"))[0] == Errors.NONE and found,
            )
            assert node in (1, 2, 3, 4)
            described = admin.describe_topics(["__consumer_offsets"])["__consumer_offsets"]
            assert len(described.partitions) == 50
            assert all(len(set(p.replicas)) == 3 for p in described.partitions)
