"""aiokafka's and kafka-python's transactional producers on a real 3-node ``brook cluster``
(RF-3 topics, ``__transaction_state`` and ``__consumer_offsets``): each transaction spans
partitions led by every broker, so its markers go to all three; committed and aborted ones as
the same client's read_committed and read_uncommitted consumers see them, read through every
broker; offsets sent to a transaction by a consumer group committed with it and not with an
aborted one; a zombie fenced by its successor; and (aiokafka) kill -9 of the broker
coordinating a transaction left open, after which the same producer, still running, finds the
new coordinator (which loaded the transaction), adds to the transaction and commits it."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Iterator

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka import TopicPartition as AioTopicPartition
from aiokafka.errors import ProducerFenced
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KafkaTopicPartition
from kafka.errors import ProducerFencedError
from kafka.structs import OffsetAndMetadata
from loss_checker import wait_fully_replicated
from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster
from txn_clients import aiokafka_read_all, kafka_python_read_all

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

PARTITIONS = 6


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with local_cluster(tmp_path_factory.mktemp("txnclients") / "c", nodes=3, overrides=FAST) as c:
        yield c


def _topic(cluster: LocalCluster) -> str:
    """An RF-3 topic whose partitions are led by all three brokers."""
    topic = f"t-{uuid.uuid4().hex[:8]}"
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 3, configs={"min.insync.replicas": "2"})])
        wait_fully_replicated(admin, topic)
        leaders = {p.leader for p in admin.describe_topics([topic])[topic].partitions}
    assert len(leaders) == 3
    return topic


def _brokers(cluster: LocalCluster) -> list[str]:
    return cluster.bootstrap_servers.split(",")


def _expected(prefixes: list[str]) -> list[str]:
    return sorted(f"{prefix}{p}" for prefix in prefixes for p in range(PARTITIONS))


def test_aiokafka_transactions_over_every_broker(cluster: LocalCluster) -> None:
    topic, source = _topic(cluster), _topic(cluster)
    group = f"g-{uuid.uuid4().hex[:6]}"
    tid = f"aio-{uuid.uuid4().hex[:6]}"
    bootstrap = cluster.bootstrap_servers

    async def send(producer: AIOKafkaProducer, prefix: str) -> None:
        for p in range(PARTITIONS):
            await producer.send_and_wait(topic, f"{prefix}{p}".encode(), partition=p)

    async def committed() -> dict[int, int]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
        await consumer.start()
        try:
            found = {
                p: await consumer.committed(AioTopicPartition(source, p)) for p in range(PARTITIONS)
            }
        finally:
            await consumer.stop()
        return {p: o for p, o in found.items() if o is not None}

    async def run() -> None:
        zombie = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid, acks="all")
        await zombie.start()
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
        try:
            async with zombie.transaction():
                await send(zombie, "one-")
            await zombie.begin_transaction()
            await send(zombie, "zombie-")
            await producer.start()  # fences the zombie: its open transaction is aborted
            with pytest.raises(ProducerFenced):
                await zombie.commit_transaction()
            async with producer.transaction():
                await send(producer, "two-")
                offsets = {AioTopicPartition(source, p): 10 + p for p in range(PARTITIONS)}
                await producer.send_offsets_to_transaction(offsets, group)
            await producer.begin_transaction()
            await send(producer, "aborted-")
            rewound = {AioTopicPartition(source, p): 1 for p in range(PARTITIONS)}
            await producer.send_offsets_to_transaction(rewound, group)
            await producer.abort_transaction()
        finally:
            await producer.stop()
            await zombie.stop()
        async with asyncio.timeout(60):  # applied once the COMMIT marker is written
            while await committed() != {p: 10 + p for p in range(PARTITIONS)}:
                await asyncio.sleep(0.1)
        for broker in _brokers(cluster):
            assert await aiokafka_read_all(
                broker, topic, PARTITIONS, "read_committed"
            ) == _expected(["one-", "two-"])
        assert await aiokafka_read_all(
            bootstrap, topic, PARTITIONS, "read_uncommitted"
        ) == _expected(["aborted-", "one-", "two-", "zombie-"])

    asyncio.run(run())


def test_kafka_python_transactions_over_every_broker(cluster: LocalCluster) -> None:
    topic, source = _topic(cluster), _topic(cluster)
    group = f"g-{uuid.uuid4().hex[:6]}"
    tid = f"kp-{uuid.uuid4().hex[:6]}"
    bootstrap = cluster.bootstrap_servers

    def send(producer: KafkaProducer, prefix: str) -> None:
        futures = [
            producer.send(topic, f"{prefix}{p}".encode(), partition=p) for p in range(PARTITIONS)
        ]
        producer.flush()
        for future in futures:
            future.get(timeout=60)

    def committed() -> dict[int, int]:
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
        try:
            found = {
                p: consumer.committed(KafkaTopicPartition(source, p)) for p in range(PARTITIONS)
            }
        finally:
            consumer.close()
        return {p: o for p, o in found.items() if o is not None}

    zombie = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
    zombie.init_transactions()
    try:
        zombie.begin_transaction()
        send(zombie, "one-")
        zombie.commit_transaction()
        zombie.begin_transaction()
        send(zombie, "zombie-")
        producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=tid)
        try:
            producer.init_transactions()  # fences the zombie: its open transaction is aborted
            with pytest.raises(ProducerFencedError):
                zombie.commit_transaction()
            producer.begin_transaction()
            send(producer, "two-")
            offsets = {
                KafkaTopicPartition(source, p): OffsetAndMetadata(10 + p, "", -1)
                for p in range(PARTITIONS)
            }
            producer.send_offsets_to_transaction(offsets, group)
            producer.commit_transaction()
            producer.begin_transaction()
            send(producer, "aborted-")
            rewound = {
                KafkaTopicPartition(source, p): OffsetAndMetadata(1, "", -1)
                for p in range(PARTITIONS)
            }
            producer.send_offsets_to_transaction(rewound, group)
            producer.abort_transaction()
        finally:
            producer.close()
    finally:
        zombie.close(timeout=5)
    deadline = time.monotonic() + 60
    while committed() != {p: 10 + p for p in range(PARTITIONS)}:
        assert time.monotonic() < deadline, committed()
        time.sleep(0.1)
    for broker in _brokers(cluster):
        assert kafka_python_read_all(broker, topic, PARTITIONS, "read_committed") == _expected(
            ["one-", "two-"]
        )
    assert kafka_python_read_all(bootstrap, topic, PARTITIONS, "read_uncommitted") == _expected(
        ["aborted-", "one-", "two-", "zombie-"]
    )


def _coordinator(bootstrap: str, tid: str) -> int | None:
    """The node coordinating ``tid`` as ``bootstrap`` answers FindCoordinator, or None."""
    with RawClient(bootstrap) as client:
        resp = client.request(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]}
        )
    (found,) = resp.coordinators
    return int(found.node_id) if found.error_code == Errors.NONE else None


async def _aiokafka_across_a_kill(
    cluster: LocalCluster, topic: str, tid: str, kill: Callable[[], None]
) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap_servers, transactional_id=tid)
    await producer.start()
    try:
        await producer.begin_transaction()
        for p in range(PARTITIONS):
            await producer.send_and_wait(topic, f"before-{p}".encode(), partition=p)
        kill()
        for p in range(PARTITIONS):
            await producer.send_and_wait(topic, f"after-{p}".encode(), partition=p)
        await producer.commit_transaction()
    finally:
        await producer.stop()


def test_an_aiokafka_producer_commits_across_its_coordinators_death(
    cluster: LocalCluster,
) -> None:
    """(kafka-python 3.0.12 is left out: when the connection to its coordinator is refused it
    finds the new coordinator but drops the request it was sending, so its
    ``commit_transaction`` waits forever; see compatibility.md.)"""
    topic = _topic(cluster)
    tid = f"aio-{uuid.uuid4().hex[:6]}"
    killed: list[int] = []

    def kill() -> None:
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            wait_fully_replicated(admin, "__transaction_state")
        node = wait_for("the coordinator", lambda: _coordinator(_brokers(cluster)[0], tid))
        cluster.kill(node)
        killed.append(node)

    try:
        asyncio.run(_aiokafka_across_a_kill(cluster, topic, tid, kill))
        survivor = cluster.node(next(n for n in (1, 2, 3) if n not in killed)).broker_address
        got = asyncio.run(aiokafka_read_all(survivor, topic, PARTITIONS, "read_committed"))
        assert got == _expected(["before-", "after-"])
    finally:
        for node in killed:  # the cluster's other tests want all three brokers
            cluster.restart(node)
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            wait_fully_replicated(admin, "__transaction_state")
