"""A broker killed while the cluster changes what it hosts comes back: a topic created on it
meanwhile is hosted (its log created, it leads and serves it), the log of a topic deleted
meanwhile is set aside as a stray with its data, and the log of a topic it still hosts stays
where it was, with its records. The broker decides which logs are strays only
once its image has caught up with the metadata log as far as the controller said at
registration; deciding on the image it stopped with would keep the deleted topic's log (then
delete it) and miss the new one."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from support import local_cluster

from brook.client.admin import Admin, NewTopic

# A session long enough to create and delete topics on the killed broker before the
# controller fences it (a fenced broker cannot be named in a new assignment).
OVERRIDES = {"broker.session.timeout.ms": "10000", "broker.heartbeat.interval.ms": "500"}


def wait_for(what: str, check: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} did not happen in {timeout} s")
        time.sleep(0.1)


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "message.timeout.ms": 30000})
    for value in values:
        producer.produce(topic, value, partition=0)
    assert producer.flush(30) == 0


def _consume(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "stray-check"})
    consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < count and time.monotonic() < deadline:
            for msg in consumer.consume(10, 0.5):
                assert msg.error() is None, msg.error()
                values.append(msg.value())
    finally:
        consumer.close()
    return values


def _dirs(data_dir: Path, prefix: str) -> list[Path]:
    return sorted(p for p in data_dir.rglob(f"{prefix}-0*") if p.is_dir())


def test_returning_broker_keeps_new_logs_and_sets_aside_deleted_ones(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=OVERRIDES) as cluster:
        boot = cluster.bootstrap_servers
        node3 = cluster.node(3)
        with Admin({"bootstrap.servers": boot}) as admin:
            admin.create_topics([NewTopic("gone", replica_assignment={0: [3]})])
            admin.create_topics([NewTopic("stays", replica_assignment={0: [3]})])
            wait_for("gone led by 3", lambda: _leader(admin, "gone") == 3)
            wait_for("stays led by 3", lambda: _leader(admin, "stays") == 3)
            _produce(boot, "gone", [b"g1", b"g2", b"g3"])
            _produce(boot, "stays", [b"s1", b"s2"])

            cluster.kill(3)
            # broker 3 is down but its session has not expired: it can still be assigned
            admin.delete_topics(["gone"])
            admin.create_topics([NewTopic("kept", replica_assignment={0: [3]})])
            assert 3 in {b.node_id for b in admin.describe_cluster().brokers}, (
                "broker 3 was fenced before the topics changed: the session is too short"
            )
            assert _dirs(node3.data_dir, "kept") == []
            # once fenced, its next incarnation registers at once, while its metadata is
            # still behind
            wait_for(
                "3 fenced", lambda: 3 not in {b.node_id for b in admin.describe_cluster().brokers}
            )

            cluster.restart(3)
            wait_for("kept led by 3", lambda: _leader(admin, "kept") == 3)
            wait_for("stays led by 3", lambda: _leader(admin, "stays") == 3)

        gone = _dirs(node3.data_dir, "gone")
        assert len(gone) == 1 and gone[0].name.endswith("-stray"), gone
        assert sum(f.stat().st_size for f in gone[0].glob("*.log")) > 0
        kept = _dirs(node3.data_dir, "kept")
        assert [p.name for p in kept] == ["kept-0"]
        # the log of a topic it still hosts is where it was, with its records
        assert [p.name for p in _dirs(node3.data_dir, "stays")] == ["stays-0"]
        assert _consume(boot, "stays", 2) == [b"s1", b"s2"]
        _produce(boot, "kept", [b"k1", b"k2"])
        assert _consume(boot, "kept", 2) == [b"k1", b"k2"]


def _leader(admin: Admin, topic: str) -> int | None:
    try:
        described = admin.describe_topics([topic])[topic]
    except Exception:
        return None
    return described.partitions[0].leader
