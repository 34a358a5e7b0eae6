"""A replicated compacted topic on a real 3-node ``brook cluster``, as an operator makes one
(``brook topics --create --config cleanup.policy=compact``): every replica cleans its own
log, a follower killed while the leader cleaned copies the cleaned log across its gaps when
it is back (and recovers its own after the kill -9), and after the leader is killed the new
leader serves consumers the latest value of every key at its original offset. Once the
cluster is stopped, every replica's log holds only records written at their offsets, the
latest of each key among them, and the replicas end at the same offset."""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from quorum_support import FAST, wait_for
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.cli.main import main as brook
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.protocol.batch import iter_batches
from brook.protocol.records import iter_records

NODES = (1, 2, 3)
KEYS = 20
OVERRIDES = {**FAST, "log.cleaner.backoff.ms": "100"}

Written = dict[int, tuple[bytes, bytes]]  # offset -> (key, value)


def _partition(admin: AdminClient, topic: str) -> tuple[int, list[int]]:
    """(leader, ISR) of partition 0 as a broker's metadata says."""
    meta = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    return meta.leader, sorted(meta.isrs)


def _produce(bootstrap: str, topic: str, start: int, count: int, written: Written) -> None:
    """``count`` records over ``KEYS`` keys with acks=all, noting each one's offset."""

    def delivered(err: object, msg: object) -> None:
        assert err is None, err
        written[msg.offset()] = (msg.key(), msg.value())  # type: ignore[attr-defined]

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 2,
            "batch.num.messages": 7,  # many small batches, some emptied by the cleaner
            "compression.type": "lz4",
        }
    )
    for n in range(start, start + count):
        producer.produce(
            topic, key=b"k%02d" % (n % KEYS), value=b"v%05d" % n, on_delivery=delivered
        )
        if n % 100 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def _consume(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes, bytes]]:
    """Every record below ``end``, read from the beginning."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": uuid.uuid4().hex, "enable.auto.commit": False}
    )
    out: list[tuple[int, bytes, bytes]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])

        def done() -> bool:
            for msg in consumer.consume(500, 0.5):
                if msg.error() is None:
                    out.append((msg.offset(), msg.key(), msg.value()))
            position = consumer.position([TopicPartition(topic, 0)])[0].offset
            return position >= end

        wait_for(f"reading {topic} up to {end}", done, timeout=60)
    finally:
        consumer.close()
    return [r for r in out if r[0] < end]


def _check(records: list[tuple[int, bytes, bytes]], written: Written, where: str) -> None:
    """Only records written at their offsets, in order, and every key's latest among them."""
    offsets = [o for o, _, _ in records]
    assert offsets == sorted(set(offsets)), f"{where}: offsets not increasing"
    for o, k, v in records:
        assert written[o] == (k, v), f"{where}: offset {o} holds {(k, v)}, not {written[o]}"
    latest: dict[bytes, int] = {}
    for o in sorted(written):
        latest[written[o][0]] = o
    assert set(latest.values()) <= set(offsets), f"{where}: a key's latest record is missing"


def _stored(node_dir: Path, topic: str) -> tuple[int, list[tuple[int, bytes, bytes]]]:
    """A stopped node's replica: its log end and records."""
    plog = PartitionLog.open(
        node_dir / "data" / f"{topic}-0", LogConfig.from_topic_config({}), now_ms=0
    )
    out: list[tuple[int, bytes, bytes]] = []
    try:
        offset = plog.log_start_offset
        while offset < plog.log_end_offset:
            chunk = bytes(plog.read(offset, 1 << 20, None, True).records)
            for pos, header in iter_batches(chunk):
                batch = chunk[pos : pos + header.size]
                out += [(r.offset, r.key, r.value) for _, r in iter_records(batch)]
                offset = header.next_offset
        return plog.log_end_offset, out
    finally:
        plog.close_files()


def _cleaned_since(cluster: LocalCluster, node: int, topic: str, before: int) -> bool:
    text = cluster.node(node).log_path.read_text(errors="replace")
    return text.count(f"cleaned {topic}-0") > before


def _cleanings(cluster: LocalCluster, node: int, topic: str) -> int:
    return cluster.node(node).log_path.read_text(errors="replace").count(f"cleaned {topic}-0")


def test_replicas_of_a_compacted_topic_serve_the_latest_values_after_a_leader_change(
    tmp_path: Path,
) -> None:
    topic = "compacted-" + uuid.uuid4().hex[:6]
    written: Written = {}
    with local_cluster(tmp_path / "c", nodes=3, overrides=OVERRIDES) as cluster:
        bootstrap = cluster.bootstrap_servers
        code = brook(
            [
                "topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                "--partitions", "1", "--replication-factor", "3",
                "--config", "cleanup.policy=compact",
                "--config", "segment.bytes=4000",
                "--config", "min.cleanable.dirty.ratio=0.01",
            ]
        )  # fmt: skip
        assert code == 0
        admin = AdminClient({"bootstrap.servers": bootstrap})
        leader, _ = wait_for(
            "a leader and a full ISR",
            lambda: p if (p := _partition(admin, topic))[0] > 0 and len(p[1]) == 3 else None,
        )
        _produce(bootstrap, topic, 0, 1500, written)
        # every replica cleans its own copy
        for n in NODES:
            wait_for(f"node {n} cleaning", lambda n=n: _cleanings(cluster, n, topic) > 0)

        # a follower killed while the leader takes more records and cleans them
        follower = next(n for n in NODES if n != leader)
        cluster.kill(follower)
        other = next(n for n in NODES if n not in (leader, follower))
        admin = AdminClient({"bootstrap.servers": cluster.node(other).broker_address})
        wait_for(
            f"node {follower} out of the ISR",
            lambda: follower not in _partition(admin, topic)[1],
            timeout=60,
        )
        before = _cleanings(cluster, leader, topic)
        _produce(cluster.node(leader).broker_address, topic, 1500, 1500, written)
        wait_for("the leader cleaning", lambda: _cleaned_since(cluster, leader, topic, before))
        # what the follower will fetch from its log end (1500: it had every acknowledged
        # record) skips offsets
        fetched = _consume(cluster.node(leader).broker_address, topic, 3000)
        assert len([o for o, _, _ in fetched if o >= 1500]) < 1500
        # back, it copies the cleaned log across its gaps and rejoins the ISR
        cluster.restart(follower)
        wait_for(
            f"node {follower} back in the ISR",
            lambda: follower in _partition(admin, topic)[1],
            timeout=90,
        )

        # the leader killed: the new one serves the latest value of every key
        cluster.kill(leader)
        new_leader = wait_for(
            "a new leader",
            lambda: (
                p[0] if (p := _partition(admin, topic))[0] in NODES and p[0] != leader else None
            ),
        )
        end = max(written) + 1
        survivors = ",".join(cluster.node(n).broker_address for n in NODES if n != leader)
        _check(_consume(survivors, topic, end), written, f"consumer of node {new_leader}")
        # it goes on taking records and cleaning
        before = _cleanings(cluster, new_leader, topic)
        _produce(survivors, topic, 3000, 1000, written)
        wait_for(
            "the new leader cleaning", lambda: _cleaned_since(cluster, new_leader, topic, before)
        )
        end = max(written) + 1
        records = _consume(survivors, topic, end)
        _check(records, written, f"consumer of node {new_leader}")
        assert len(records) < len(written) // 2  # compacted, not merely copied

        # the killed leader recovers its log, truncates if need be and catches up
        cluster.restart(leader)
        wait_for(
            f"node {leader} back in the ISR",
            lambda: leader in _partition(admin, topic)[1],
            timeout=90,
        )
        cluster.stop()
        ends = set()
        for n in NODES:
            log_end, stored = _stored(cluster.node(n).directory, topic)
            _check(stored, written, f"node {n}'s replica")
            ends.add(log_end)
        assert ends == {end}
