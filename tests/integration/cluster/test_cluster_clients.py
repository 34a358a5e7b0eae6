"""Real Kafka clients at their default settings against a 3-node ``brook cluster``: each one
bootstraps from a different broker, sees every broker in Metadata with a live broker as the
controller, creates its topic through the broker it knows, produces through the topic's
leader (three replicas, acks=all where that is the client's default) and reads back through
a consumer group (the group's coordinator on whichever broker leads its
``__consumer_offsets`` partition, itself of three replicas)."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer
from confluent_kafka.admin import AdminClient, NewTopic
from quorum_support import FAST
from support import local_cluster

from brook.cli.local_cluster import LocalCluster

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
