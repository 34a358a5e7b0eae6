"""The Prometheus endpoint on every node of a 3-node ``brook cluster``: the replica figures
follow faults on real processes (a broker killed, then restarted: under-replicated,
under-min-ISR and offline partitions go up and back to 0; a follower paused past
replica.lag.time.max.ms: an ISR shrink, then an expansion once resumed), followers count the
bytes they replicate, and every node's quorum figures agree with DescribeQuorum."""

from __future__ import annotations

import uuid
from pathlib import Path

from loss_checker import wait_fully_replicated
from metrics_scrape import Samples, eventually, scrape, value, value_or_zero
from quorum_support import FAST, wait_for
from rawclient import RawClient, produce
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic
from brook.protocol.records import build_simple_batch

URP = "kafka_server_replicamanager_underreplicatedpartitions"
OFFLINE = "kafka_controller_kafkacontroller_offlinepartitionscount"
UNDER_MIN_ISR = "kafka_server_replicamanager_underminisrpartitioncount"


def _scrapes(cluster: LocalCluster, nodes: list[int]) -> dict[int, Samples]:
    out = {}
    for n in nodes:
        url = cluster.node(n).metrics_url
        assert url is not None
        out[n] = scrape(url)
    return out


def scrape_of(cluster: LocalCluster, node: int) -> Samples:
    return _scrapes(cluster, [node])[node]


def _total(cluster: LocalCluster, nodes: list[int], name: str) -> float:
    return sum(value(s, name) for s in _scrapes(cluster, nodes).values())


def _create(
    admin: Admin, assignment: dict[int, list[int]], configs: dict[str, str] | None = None
) -> str:
    topic = f"metrics-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(topic, replica_assignment=assignment, configs=configs or {})])
    wait_fully_replicated(admin, topic)
    return topic


def test_a_killed_broker_shows_as_under_replicated_and_offline_partitions(
    tmp_path: Path,
) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST, metrics=True) as cluster:
        quorum = wait_for("a quorum leader", cluster.describe_quorum)
        victim = next(n for n in (3, 2, 1) if n != quorum.leader_id)  # not the controller
        a, b = (n for n in (1, 2, 3) if n != victim)
        everyone = [1, 2, 3]
        live = [a, b]
        with Admin({"bootstrap.servers": cluster.node(a).broker_address}) as admin:
            # min.insync.replicas=3: one broker gone leaves both partitions under it
            replicated = _create(
                admin, {0: [a, b, victim], 1: [b, victim, a]}, {"min.insync.replicas": "3"}
            )
            _create(admin, {0: [victim]})  # only on the victim: offline once it is gone
            # what the leader took in, each follower took in from it
            batch = build_simple_batch([b"r" * 100] * 10)
            with RawClient(cluster.node(a).broker_address) as c:
                part = produce(c, replicated, 0, batch, acks=-1)
                assert part.responses[0].partition_responses[0].error_code == 0
            per_topic = "kafka_server_brokertopicmetrics_{}_total"
            assert value(scrape_of(cluster, a), per_topic.format("bytesin"), topic=replicated) == (
                len(batch)
            )
            for follower in (b, victim):
                assert eventually(
                    lambda f=follower: (
                        value_or_zero(
                            scrape_of(cluster, f),
                            per_topic.format("replicationbytesin"),
                            topic=replicated,
                        )
                        == len(batch)
                    )
                )
            # the followers' fetches are counted as FetchFollower on the leader
            assert (
                value(
                    scrape_of(cluster, a),
                    "kafka_network_requestmetrics_totaltimems_count",
                    request="FetchFollower",
                )
                > 0
            )
            assert eventually(lambda: _total(cluster, everyone, URP) == 0)
            assert _total(cluster, everyone, OFFLINE) == 0
            cluster.kill(victim)
            # both partitions led by a and b lose a replica; the victim's own has no leader
            assert eventually(lambda: _total(cluster, live, URP) == 2)
            assert eventually(lambda: _total(cluster, live, OFFLINE) == 1)
            assert eventually(lambda: _total(cluster, live, UNDER_MIN_ISR) == 2)
            cluster.restart(victim)
            assert eventually(
                lambda: (
                    _total(cluster, everyone, URP) == 0
                    and _total(cluster, everyone, OFFLINE) == 0
                    and _total(cluster, everyone, UNDER_MIN_ISR) == 0
                )
            )
        # the quorum's figures on every node agree with DescribeQuorum
        quorum = cluster.wait_metadata_caught_up()

        def agree() -> bool:
            scrapes = _scrapes(cluster, everyone)
            return all(
                value(s, "kafka_server_raft_metrics_current_leader") == quorum.leader_id
                and value(s, "kafka_server_raft_metrics_current_epoch") == quorum.leader_epoch
                and value(s, "kafka_server_raft_metrics_high_watermark") > 0
                for s in scrapes.values()
            )

        assert eventually(agree)
        active = _scrapes(cluster, everyone)
        assert [
            n
            for n, s in active.items()
            if value(s, "kafka_controller_kafkacontroller_activecontrollercount") == 1
        ] == [quorum.leader_id]


def test_a_paused_follower_counts_an_isr_shrink_then_an_expansion(tmp_path: Path) -> None:
    lagging = {**FAST, "replica.lag.time.max.ms": "3000", "broker.session.timeout.ms": "15000"}
    with local_cluster(tmp_path / "c", nodes=3, overrides=lagging, metrics=True) as cluster:
        quorum = wait_for("a quorum leader", cluster.describe_quorum)
        victim = next(n for n in (3, 2, 1) if n != quorum.leader_id)
        leader = next(n for n in (1, 2, 3) if n != victim)
        with Admin({"bootstrap.servers": cluster.node(leader).broker_address}) as admin:
            topic = _create(admin, {0: [leader, victim]})
        url = cluster.node(leader).metrics_url
        assert url is not None
        before = scrape(url)
        shrinks = value(before, "kafka_server_replicamanager_isrshrinks_total")
        expands = value(before, "kafka_server_replicamanager_isrexpands_total")
        cluster.pause(victim)
        try:
            # a follower at the log end stays in sync (as in Kafka): records it does not fetch
            # are what make it fall behind
            with RawClient(cluster.node(leader).broker_address) as c:
                part = produce(c, topic, 0, build_simple_batch([b"r"]), acks=1)
                assert part.responses[0].partition_responses[0].error_code == 0
            assert eventually(
                lambda: (
                    value(scrape(url), "kafka_server_replicamanager_isrshrinks_total")
                    == shrinks + 1
                )
            )
            assert value(scrape(url), URP) == 1
            assert value(scrape(url), "kafka_server_replicamanager_underminisrpartitioncount") == 0
        finally:
            cluster.resume(victim)
        assert eventually(
            lambda: (
                value(scrape(url), "kafka_server_replicamanager_isrexpands_total") == expands + 1
            )
        )
        assert eventually(lambda: value(scrape(url), URP) == 0)
