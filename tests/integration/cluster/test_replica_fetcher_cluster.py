"""Followers of a real 3-node ``brook cluster`` keep their logs identical to the leader's:
records produced with acks=1 reach every replica, and once the cluster is stopped the three
replicas of each partition hold the same bytes below the leader's log end (read with
``PartitionLog``), also after a follower was killed with SIGKILL while records were produced
and restarted. A former leader holding records the new leader never got truncates them
(DivergingEpoch) when it comes back as a follower. ``brook cluster slow --fetch-delay-ms``
holds a follower's fetches back."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from quorum_support import FAST, wait_for
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.protocol.batch import iter_batches

NODES = (1, 2, 3)


def _create(cluster: LocalCluster, topic: str, partitions: int) -> dict[int, int]:
    """Create an RF 3 topic; partition -> leader."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, 3)])[topic].result(30)

    def leaders() -> dict[int, int] | None:
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        found = {p: m.leader for p, m in meta.partitions.items()}
        return found if len(found) == partitions and min(found.values()) > 0 else None

    return wait_for(f"leaders of {topic}", leaders)


def _produce(cluster: LocalCluster, topic: str, partitions: int, count: int, tag: str) -> None:
    producer = Producer(
        {
            "bootstrap.servers": cluster.bootstrap_servers,
            "acks": "1",
            "linger.ms": 5,
            "batch.num.messages": 37,  # many batches of different sizes
            "compression.type": "lz4",
        }
    )
    for i in range(count):
        producer.produce(
            topic,
            value=f"{tag}-{i}-".encode() + bytes(i % 200),
            key=str(i).encode(),
            partition=i % partitions,
        )
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def _log_bytes(node_dir: Path, topic: str, partition: int) -> int:
    """The bytes of a replica's segments on disk (appends are visible as they are written)."""
    directory = node_dir / "data" / f"{topic}-{partition}"
    return sum(f.stat().st_size for f in directory.glob("*.log")) if directory.exists() else -1


def _replicas_equal(cluster: LocalCluster, topic: str, partitions: int) -> bool:
    for p in range(partitions):
        sizes = {_log_bytes(cluster.node(n).directory, topic, p) for n in NODES}
        if len(sizes) != 1 or sizes == {0}:
            return False
    return True


def _read_all(node_dir: Path, topic: str, partition: int) -> tuple[int, int, bytes, list]:
    plog = PartitionLog.open(
        node_dir / "data" / f"{topic}-{partition}", LogConfig.from_topic_config({}), now_ms=0
    )
    try:
        out = bytearray()
        offset = plog.log_start_offset
        while offset < plog.log_end_offset:
            chunk = plog.read(offset, 1 << 20, None, True).records
            assert isinstance(chunk, bytes | bytearray | memoryview) and len(chunk) > 0
            out += chunk
            # the next offset is the last batch's end: walk the headers just read
            offset = [h.next_offset for _, h in iter_batches(bytes(chunk))][-1]
        return (
            plog.log_start_offset,
            plog.log_end_offset,
            bytes(out),
            plog.epoch_cache.entries(),
        )
    finally:
        plog.close_files()


def _assert_identical(cluster: LocalCluster, topic: str, partitions: int, records: int) -> None:
    total = 0
    for p in range(partitions):
        replicas = {n: _read_all(cluster.node(n).directory, topic, p) for n in NODES}
        first = replicas[1]
        for n in NODES[1:]:
            assert replicas[n][:2] == first[:2], f"partition {p}: offsets differ on node {n}"
            assert replicas[n][2] == first[2], f"partition {p}: bytes differ on node {n}"
            assert replicas[n][3] == first[3], f"partition {p}: epochs differ on node {n}"
        total += first[1] - first[0]
    assert total == records


def test_followers_hold_the_leaders_bytes_also_after_a_kill(tmp_path: Path) -> None:
    topic = "replicated-" + uuid.uuid4().hex[:6]
    partitions = 3
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        leaders = _create(cluster, topic, partitions)
        assert set(leaders.values()) <= set(NODES)
        _produce(cluster, topic, partitions, 3000, "a")
        wait_for("every follower holding the records", lambda: _replicas_equal(cluster, topic, 3))

        # a follower (of partition 0) killed while records are produced catches up on restart
        victim = next(n for n in NODES if n != leaders[0])
        cluster.kill(victim)
        others = next(n for n in NODES if n != victim)
        admin = AdminClient({"bootstrap.servers": cluster.node(others).broker_address})
        wait_for(
            f"broker {victim} fenced",
            lambda: victim not in admin.list_topics(timeout=10).brokers,
            timeout=30,
        )
        leaders = _create_leaders_after(admin, topic, partitions)
        assert victim not in leaders.values()
        _produce_via(cluster, others, topic, partitions, 2000, "b")
        assert not _replicas_equal(cluster, topic, partitions)
        cluster.restart(victim)
        wait_for(
            "the restarted follower catching up",
            lambda: _replicas_equal(cluster, topic, partitions),
            timeout=90,
        )
        cluster.stop()
        _assert_identical(cluster, topic, partitions, 5000)


def _create_leaders_after(admin: AdminClient, topic: str, partitions: int) -> dict[int, int]:
    def leaders() -> dict[int, int] | None:
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        found = {p: m.leader for p, m in meta.partitions.items()}
        return found if len(found) == partitions and min(found.values()) > 0 else None

    return wait_for(f"leaders of {topic}", leaders)


def _produce_via(
    cluster: LocalCluster, node: int, topic: str, partitions: int, count: int, tag: str
) -> None:
    producer = Producer(
        {"bootstrap.servers": cluster.node(node).broker_address, "acks": "1", "linger.ms": 5}
    )
    for i in range(count):
        producer.produce(topic, value=f"{tag}-{i}".encode(), partition=i % partitions)
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def _delay_in_force(cluster: LocalCluster, node: int, delay_ms: int) -> bool:
    """The node logs the delays it applies once their metadata reaches it."""
    text = cluster.node(node).log_path.read_text(errors="replace")
    return f"follower fetch delay {delay_ms} ms" in text


def _fetcher_delayed(cluster: LocalCluster, node: int, leader: int, delay_ms: int) -> bool:
    """The node's fetcher from ``leader`` has started waiting ``delay_ms`` before a fetch."""
    text = cluster.node(node).log_path.read_text(errors="replace")
    return f"fetches from broker {leader} now wait {delay_ms} ms each" in text


def test_a_fetch_delay_holds_a_follower_back(tmp_path: Path) -> None:
    topic = "slowed-" + uuid.uuid4().hex[:6]
    delay_s = 5.0
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        leader = _create(cluster, topic, 1)[0]
        slowed, other = (n for n in NODES if n != leader)
        cluster.slow(slowed, fetch_delay_ms=int(delay_s * 1000))
        wait_for("the delay in force", lambda: _delay_in_force(cluster, slowed, 5000))

        def sizes() -> dict[int, int]:
            return {n: _log_bytes(cluster.node(n).directory, topic, 0) for n in NODES}

        def everywhere() -> bool:
            now = sizes()
            return len(set(now.values())) == 1 and now[leader] > 0

        _produce_via(cluster, leader, topic, 1, 1, "first")
        wait_for("the first record everywhere", everywhere)
        # the slowed follower has just appended a response: its next fetch waits the delay
        produced = time.monotonic()
        _produce_via(cluster, leader, topic, 1, 1, "second")
        target = sizes()[leader]
        wait_for("the other follower", lambda: sizes()[other] == target)
        wait_for("the slowed follower", lambda: sizes()[slowed] == target, timeout=60)
        # from its append of the first record to that of the second: at least the delay;
        # measured from when the first was seen, which may be late on a loaded machine
        assert time.monotonic() - produced >= delay_s - 2

        # without the delay it follows again
        cluster.slow(slowed, fetch_delay_ms=0)
        wait_for("the delay lifted", lambda: _delay_in_force(cluster, slowed, 0))
        _produce_via(cluster, leader, topic, 1, 1, "third")
        wait_for("the third record everywhere", everywhere)


def test_a_former_leader_truncates_what_the_new_leader_does_not_have(tmp_path: Path) -> None:
    topic = "diverged-" + uuid.uuid4().hex[:6]
    delay_ms = 10_000
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        old_leader = _create(cluster, topic, 1)[0]
        followers = [n for n in NODES if n != old_leader]
        for n in followers:
            cluster.slow(n, fetch_delay_ms=delay_ms)
        # once a follower's fetcher logs the delay it is waiting it out, not in a fetch the
        # leader may answer at once: from then on each of its fetches follows the one before
        # by the delay
        for n in followers:
            wait_for(
                "the delay waited", lambda n=n: _fetcher_delayed(cluster, n, old_leader, delay_ms)
            )

        def sizes() -> dict[int, int]:
            return {n: _log_bytes(cluster.node(n).directory, topic, 0) for n in NODES}

        _produce_via(cluster, old_leader, topic, 1, 50, "both")
        wait_for(
            "the first records everywhere",
            lambda: len(set(sizes().values())) == 1 and sizes()[old_leader] > 0,
        )
        # the followers now wait the delay before fetching again: records the old leader
        # takes in the meantime reach no follower before it dies
        _produce_via(cluster, old_leader, topic, 1, 30, "lost")
        cluster.kill(old_leader)
        assert {sizes()[n] for n in followers} == {sizes()[followers[0]]} != {sizes()[old_leader]}
        for n in followers:
            cluster.slow(n, fetch_delay_ms=0)
        survivor = followers[0]
        admin = AdminClient({"bootstrap.servers": cluster.node(survivor).broker_address})
        new_leader = wait_for(
            "a new leader",
            lambda: (
                leader
                if (
                    leader := admin.list_topics(topic, timeout=10)
                    .topics[topic]
                    .partitions[0]
                    .leader
                )
                in followers
                else None
            ),
        )
        _produce_via(cluster, new_leader, topic, 1, 20, "after")
        cluster.restart(old_leader)
        wait_for(
            "the former leader truncated and caught up",
            lambda: len(set(sizes().values())) == 1,
            timeout=90,
        )
        cluster.stop()
        _assert_identical(cluster, topic, 1, 70)
        text = cluster.node(old_leader).log_path.read_text(errors="replace")
        assert f"truncating {topic}-0 from 80 to 50" in text
