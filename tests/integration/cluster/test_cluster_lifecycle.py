"""Brokers and voters of a real 3-node ``brook cluster`` through faults: a broker paused past
its session timeout is fenced (gone from Metadata) and unfenced once it resumes; a voter
paused past the election timeout does not force a new election when it comes back (pre-vote);
SIGTERM on a broker moves its leaderships before the process exits; an admin request sent to
any broker is answered once that broker's own metadata has the result."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic
from quorum_support import FAST, log_ends, wait_for
from support import local_cluster

from brook.cli.local_cluster import LocalCluster


def _brokers_listed(cluster: LocalCluster, via: int) -> set[int]:
    admin = AdminClient({"bootstrap.servers": cluster.node(via).broker_address})
    return set(admin.list_topics(timeout=10).brokers)


def _partitions(cluster: LocalCluster, via: int, topic: str) -> dict[int, tuple[int, list[int]]]:
    admin = AdminClient({"bootstrap.servers": cluster.node(via).broker_address})
    meta = admin.list_topics(topic, timeout=10).topics[topic]
    return {p: (m.leader, list(m.isrs)) for p, m in meta.partitions.items()}


def test_fencing_unfencing_prevote_and_controlled_shutdown(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        # -- a paused broker is fenced after its session timeout, unfenced after it resumes
        quorum = wait_for("a leader", cluster.describe_quorum)
        victim = next(n for n in (1, 2, 3) if n != quorum.leader_id)
        watcher = next(n for n in (1, 2, 3) if n not in (victim, quorum.leader_id))
        cluster.pause(victim)
        wait_for(
            f"broker {victim} fenced",
            lambda: victim not in _brokers_listed(cluster, watcher),
            timeout=30,
        )
        cluster.resume(victim)
        wait_for(
            f"broker {victim} unfenced",
            lambda: _brokers_listed(cluster, watcher) == {1, 2, 3},
            timeout=30,
        )

        # -- a voter paused long past its fetch and election timeouts comes back as a
        # follower: its pre-vote is refused, no new epoch
        before = wait_for("a leader", cluster.describe_quorum)
        follower = next(n for n in (1, 2, 3) if n != before.leader_id)
        cluster.pause(follower)
        time.sleep(5)  # the fault itself: more than fetch.timeout (2 s) + election timeout
        cluster.resume(follower)

        def caught_up() -> object:
            q = cluster.describe_quorum()
            return q if q is not None and log_ends(q)[follower] == q.high_watermark else None

        after = wait_for("the resumed voter catching up", caught_up)
        assert (after.leader_id, after.leader_epoch) == (before.leader_id, before.leader_epoch)
        time.sleep(3)  # and it stays so: the resumed voter does not start an election later
        again = wait_for("a leader", cluster.describe_quorum)
        assert (again.leader_id, again.leader_epoch) == (before.leader_id, before.leader_epoch)

        # -- an admin request through any broker is in that broker's very next answer
        for via in (1, 2, 3):
            topic = f"via-{via}-{uuid.uuid4().hex[:6]}"
            admin = AdminClient({"bootstrap.servers": cluster.node(via).broker_address})
            admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
            assert topic in admin.list_topics(timeout=10).topics

        # -- SIGTERM: the controller moves the broker's leaderships before it stops
        topic = "moved-" + uuid.uuid4().hex[:6]
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic(topic, 6, 3)])[topic].result(30)
        leaders = _partitions(cluster, 1, topic)
        target = max((1, 2, 3), key=lambda b: sum(1 for lead, _ in leaders.values() if lead == b))
        observer = next(n for n in (1, 2, 3) if n != target)
        cluster.stop_node(target)
        log = cluster.node(target).log_path.read_text()
        assert "controlled shutdown of broker" in log and "done" in log
        moved = _partitions(cluster, observer, topic)
        assert all(lead != target and target not in isr for lead, isr in moved.values()), moved


def test_a_single_controller_serves_broker_only_nodes(tmp_path: Path) -> None:
    # The lone voter runs Raft: the brokers register with it and fetch the metadata log.
    with local_cluster(tmp_path / "c", nodes=3, controllers=1, overrides=FAST) as cluster:
        quorum = wait_for("a leader", cluster.describe_quorum)
        assert quorum.leader_id == 1 and [v.replica_id for v in quorum.voters] == [1]
        assert {o.replica_id for o in quorum.observers} == {2, 3}
        topic = f"t-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": cluster.node(3).broker_address})
        admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(30)
        for via in (1, 2, 3):
            assert _brokers_listed(cluster, via) == {1, 2, 3}
            assert set(_partitions(cluster, via, topic)) == {0, 1, 2}
