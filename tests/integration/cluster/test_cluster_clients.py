"""Real Kafka clients at their default settings against a 3-node ``brook cluster``: each one
bootstraps from a different broker, sees every broker in Metadata with a live broker as the
controller, creates its topic through the broker it knows, produces through the topic's
leader (three replicas, acks=all where that is the client's default) and reads back through
a consumer group (the group's coordinator on whichever broker leads its
``__consumer_offsets`` partition, itself of three replicas)."""

from __future__ import annotations

import asyncio
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer
from confluent_kafka.admin import AdminClient, NewTopic
from loss_checker import wait_fully_replicated
from quorum_support import FAST, wait_for
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, ElectionType
from brook.client.admin import NewTopic as BrookNewTopic

# The cluster's own defaults otherwise: ``__consumer_offsets`` has three replicas, as the
# topics the clients create.
OVERRIDES = FAST
RECORDS = [f"record-{i}".encode() for i in range(30)]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with local_cluster(tmp_path_factory.mktemp("clients") / "c", nodes=3, overrides=OVERRIDES) as c:
        yield c


def _topic(cluster: LocalCluster, via: int) -> str:
    name = f"clients-{via}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.node(via).broker_address})
    admin.create_topics([NewTopic(name, 3, 3)])[name].result(30)
    return name


def test_metadata_lists_every_broker_and_a_live_controller(cluster: LocalCluster) -> None:
    for node in cluster.brokers:
        admin = AdminClient({"bootstrap.servers": node.broker_address})
        meta = admin.list_topics(timeout=10)
        assert set(meta.brokers) == {1, 2, 3}
        assert meta.controller_id in {1, 2, 3}
        described = admin.describe_cluster().result(10)
        assert {n.id for n in described.nodes} == {1, 2, 3}
        assert described.controller.id in {1, 2, 3}


def test_confluent_kafka(cluster: LocalCluster) -> None:
    topic = _topic(cluster, 1)
    producer = CKProducer({"bootstrap.servers": cluster.node(2).broker_address})
    for value in RECORDS:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = CKConsumer(
        {
            "bootstrap.servers": cluster.node(3).broker_address,
            "group.id": "ck-" + topic,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    for _ in range(200):
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
        if len(got) == len(RECORDS):
            break
    consumer.commit(asynchronous=False)
    consumer.close()
    assert sorted(got) == sorted(RECORDS)


def test_kafka_python(cluster: LocalCluster) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    topic = _topic(cluster, 2)
    producer = KafkaProducer(bootstrap_servers=cluster.node(3).broker_address)
    for value in RECORDS:
        producer.send(topic, value)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=cluster.node(1).broker_address,
        group_id="kp-" + topic,
        auto_offset_reset="earliest",
        consumer_timeout_ms=15000,
    )
    got = []
    for msg in consumer:
        got.append(msg.value)
        if len(got) == len(RECORDS):
            break
    consumer.commit()
    consumer.close()
    assert sorted(got) == sorted(RECORDS)


def test_aiokafka(cluster: LocalCluster) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = _topic(cluster, 3)

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=cluster.node(1).broker_address)
        await producer.start()
        try:
            for value in RECORDS:
                await producer.send_and_wait(topic, value)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=cluster.node(2).broker_address,
            group_id="aio-" + topic,
            auto_offset_reset="earliest",
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) == len(RECORDS):
                        break
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(run())) == sorted(RECORDS)


def test_brook_client(cluster: LocalCluster) -> None:
    from brook import Consumer, Producer

    topic = _topic(cluster, 1)
    with Producer({"bootstrap.servers": cluster.node(3).broker_address}) as producer:
        for value in RECORDS:
            producer.send(topic, value=value)
        producer.flush(30)
    consumer = Consumer(
        {
            "bootstrap.servers": cluster.node(2).broker_address,
            "group.id": "brook-" + topic,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:
        for _ in range(100):
            got.extend(r.value for r in consumer.poll(500))
            if len(got) >= len(RECORDS):
                break
        consumer.commit()
    finally:
        consumer.close()
    assert sorted(got) == sorted(RECORDS)


def test_kcat(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = _topic(cluster, 2)
    lines = b"".join(v + b"\n" for v in RECORDS)
    subprocess.run(
        ["kcat", "-b", cluster.node(1).broker_address, "-t", topic, "-P"],
        input=lines,
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        ["kcat", "-b", cluster.node(3).broker_address, "-t", topic, "-C", "-o", "beginning", "-e"],
        capture_output=True,
        check=True,
        timeout=60,
    )
    assert sorted(out.stdout.splitlines()) == sorted(RECORDS)


# ---------------------------------------------------------------- leaders moving


def _move_leader(cluster: LocalCluster, admin: Admin, topic: str, how: str) -> None:
    """Move partition 0's leadership: ``restart`` its leader's broker (controlled shutdown,
    then back), or ``reorder`` its replicas and run a preferred election."""
    described = admin.describe_topics([topic])[topic].partitions[0]
    if how == "restart":
        cluster.restart(described.leader)
    else:
        replicas = list(described.replicas)
        new = next(r for r in replicas if r != described.leader)
        admin.alter_partition_reassignments({(topic, 0): [new, *(r for r in replicas if r != new)]})
        admin.elect_leaders(ElectionType.PREFERRED, [(topic, 0)])
        wait_for(
            "the preferred leader elected",
            lambda: admin.describe_topics([topic])[topic].partitions[0].leader == new,
        )
    wait_fully_replicated(admin, topic)


class _Mover(threading.Thread):
    def __init__(self, cluster: LocalCluster, admin: Admin, topic: str, how: str) -> None:
        super().__init__(daemon=True)
        self.args = (cluster, admin, topic, how)
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            _move_leader(*self.args)
        except BaseException as exc:  # reported by the test
            self.error = exc


def _values(name: str, mover: _Mover, at_least: int = 40) -> Iterator[bytes]:
    """``name-0``, ``name-1``, ... one every 20 ms while the leader moves (and at least
    ``at_least``)."""
    i = 0
    while mover.is_alive() or i < at_least:
        yield f"{name}-{i}".encode()
        i += 1
        time.sleep(0.02)


def _produce_kcat(boot: str, topic: str, mover: _Mover) -> list[bytes]:
    proc = subprocess.Popen(
        ["kcat", "-b", boot, "-t", topic, "-P", "-X", "acks=all"],
        stdin=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    sent = []
    assert proc.stdin is not None
    for value in _values("kcat", mover):
        proc.stdin.write(value + b"\n")
        proc.stdin.flush()
        sent.append(value)
    _, err = proc.communicate(timeout=120)
    # A restarted broker closes kcat's connections, which kcat reports ("Broker transport
    # failure", librdkafka's FAIL log lines); what must not happen is a failed delivery.
    failures = [
        line
        for line in err.splitlines()
        if b"delivery failed" in line.lower() or b"failed to produce" in line.lower()
    ]
    assert proc.returncode == 0 and not failures, err
    return sent


def _produce_confluent(boot: str, topic: str, mover: _Mover) -> list[bytes]:
    acked: list[bytes] = []
    failed: list[str] = []

    def report(err: object, msg: object) -> None:
        (failed.append(str(err)) if err else acked.append(msg.value()))  # type: ignore[attr-defined]

    producer = CKProducer({"bootstrap.servers": boot, "acks": "all"})
    for value in _values("confluent", mover):
        producer.produce(topic, value, on_delivery=report)
        producer.poll(0)
    assert producer.flush(120) == 0 and not failed, failed
    return acked


def _produce_kafka_python(boot: str, topic: str, mover: _Mover) -> list[bytes]:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=boot, acks="all", retries=20)
    futures = [(v, producer.send(topic, v)) for v in _values("kafka-python", mover)]
    producer.flush(120)
    acked = [v for v, f in futures if f.get(timeout=120) is not None]
    producer.close()
    return acked


def _produce_aiokafka(boot: str, topic: str, mover: _Mover) -> list[bytes]:
    from aiokafka import AIOKafkaProducer

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=boot, acks="all")
        await producer.start()
        try:
            futures = []
            for value in _values("aiokafka", mover):
                futures.append((value, await producer.send(topic, value)))
                await asyncio.sleep(0)
            return [v for v, f in futures if await f is not None]
        finally:
            await producer.stop()

    return asyncio.run(run())


def _produce_brook(boot: str, topic: str, mover: _Mover) -> list[bytes]:
    from brook import Producer

    with Producer({"bootstrap.servers": boot, "acks": "all"}) as producer:
        futures = [(v, producer.send(topic, value=v)) for v in _values("brook", mover)]
        producer.flush(120)
        return [v for v, f in futures if f.result(120) is not None]


def _consume_confluent(boot: str, topic: str, want: set[bytes]) -> set[bytes]:
    consumer = CKConsumer(
        {"bootstrap.servers": boot, "group.id": "ck-" + topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: set[bytes] = set()
    try:
        wait_for(
            "confluent-kafka reading",
            lambda: (
                got.update(m.value() for m in consumer.consume(500, 0.5) if not m.error())
                or want <= got
            ),
        )
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return got


def _consume_kafka_python(boot: str, topic: str, want: set[bytes]) -> set[bytes]:
    from kafka import KafkaConsumer

    consumer = KafkaConsumer(
        topic, bootstrap_servers=boot, group_id="kp-" + topic, auto_offset_reset="earliest"
    )
    got: set[bytes] = set()
    try:

        def poll() -> bool:
            for records in consumer.poll(500).values():
                got.update(r.value for r in records)
            return want <= got

        wait_for("kafka-python reading", poll)
        consumer.commit()
    finally:
        consumer.close()
    return got


def _consume_aiokafka(boot: str, topic: str, want: set[bytes]) -> set[bytes]:
    from aiokafka import AIOKafkaConsumer

    async def run() -> set[bytes]:
        consumer = AIOKafkaConsumer(
            topic, bootstrap_servers=boot, group_id="aio-" + topic, auto_offset_reset="earliest"
        )
        await consumer.start()
        got: set[bytes] = set()
        try:
            async with asyncio.timeout(60):
                while not want <= got:
                    for records in (await consumer.getmany(timeout_ms=500)).values():
                        got.update(r.value for r in records)
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    return asyncio.run(run())


def _consume_brook(boot: str, topic: str, want: set[bytes]) -> set[bytes]:
    from brook import Consumer

    consumer = Consumer(
        {"bootstrap.servers": boot, "group.id": "brook-" + topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got: set[bytes] = set()
    try:
        wait_for(
            "Brook's client reading",
            lambda: got.update(r.value for r in consumer.poll(500)) or want <= got,
        )
        consumer.commit()
    finally:
        consumer.close()
    return got


def _consume_kcat(boot: str, topic: str, want: set[bytes]) -> set[bytes]:
    out = subprocess.run(
        [
            "kcat",
            "-b",
            boot,
            "-G",
            "kcat-" + topic,
            "-X",
            "auto.offset.reset=earliest",
            "-e",
            topic,
        ],
        capture_output=True,
        check=True,
        timeout=120,
    )
    return set(out.stdout.splitlines())


PRODUCERS = [
    ("kcat", _produce_kcat),
    ("confluent-kafka", _produce_confluent),
    ("kafka-python", _produce_kafka_python),
    ("aiokafka", _produce_aiokafka),
    ("brook", _produce_brook),
]
CONSUMERS = [
    ("kcat", _consume_kcat),
    ("confluent-kafka", _consume_confluent),
    ("kafka-python", _consume_kafka_python),
    ("aiokafka", _consume_aiokafka),
    ("brook", _consume_brook),
]


def test_every_client_while_leaders_move(cluster: LocalCluster) -> None:
    """Each client produces (acks=all) while partition 0's leader moves, alternately by a
    broker restart and by a preferred election after a reorder; then each reads the whole
    topic through a group of its own: no acknowledged record is missing."""
    boot = cluster.bootstrap_servers
    topic = f"moving-{uuid.uuid4().hex[:6]}"
    acked: set[bytes] = set()
    with Admin({"bootstrap.servers": boot}) as admin:
        admin.create_topics([BrookNewTopic(topic, 1, 3, configs={"min.insync.replicas": "2"})])
        wait_fully_replicated(admin, topic)
        for i, (name, produce) in enumerate(PRODUCERS):
            mover = _Mover(cluster, admin, topic, "restart" if i % 2 == 0 else "reorder")
            mover.start()
            values = produce(boot, topic, mover)
            mover.join(180)
            assert mover.error is None, f"moving the leader under {name}: {mover.error!r}"
            assert len(values) >= 40, name
            acked.update(values)
    for name, consume in CONSUMERS:
        missing = acked - consume(boot, topic, acked)
        assert not missing, f"{name} did not read {len(missing)} records: {sorted(missing)[:5]}"
