"""aiokafka 0.14's transactional producer against a real Brook broker: commit and abort across
partitions (``transaction()`` and the explicit calls) seen by aiokafka's read_committed and
read_uncommitted consumers, a read_committed consumer held at an open transaction's start, a
zombie fenced by a second producer with the same transactional id, offsets sent to a
transaction committed with it and dropped with an aborted one (consumer group, read_committed),
a transaction aborted at its timeout, and compressed transactional batches of every codec."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.errors import InvalidTransactionTimeout, KafkaError, ProducerFenced
from rawclient import RawClient, create_topic
from support import BrookProcess
from txn_clients import aiokafka_read_all as read_all

PARTITIONS = 3
OVERRIDES = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrookProcess]:
    with BrookProcess(tmp_path_factory.mktemp("aiotxn") / "data", OVERRIDES) as process:
        yield process


def _topic(broker: BrookProcess) -> str:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=PARTITIONS)
    return topic


def _producer(broker: BrookProcess, tid: str, **extra: object) -> AIOKafkaProducer:
    return AIOKafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid, **extra)


async def _send(producer: AIOKafkaProducer, topic: str, prefix: str, n: int) -> None:
    """``n`` records over the partitions, each acknowledged before returning."""
    for i in range(n):
        await producer.send_and_wait(topic, f"{prefix}{i}".encode(), partition=i % PARTITIONS)


def test_commit_and_abort_as_read_committed_and_read_uncommitted_see_them(
    broker: BrookProcess,
) -> None:
    topic = _topic(broker)

    async def run() -> None:
        producer = _producer(broker, f"app-{uuid.uuid4().hex[:6]}")
        await producer.start()
        try:
            async with producer.transaction():
                await _send(producer, topic, "c", 9)
            with pytest.raises(RuntimeError):
                async with producer.transaction():  # aborted by the exception
                    await _send(producer, topic, "a", 6)
                    raise RuntimeError("abort")
            await producer.begin_transaction()
            await _send(producer, topic, "d", 3)
            await producer.commit_transaction()
            await producer.begin_transaction()
            await _send(producer, topic, "x", 3)
            await producer.abort_transaction()
        finally:
            await producer.stop()
        committed = sorted([f"c{i}" for i in range(9)] + [f"d{i}" for i in range(3)])
        aborted = [f"a{i}" for i in range(6)] + [f"x{i}" for i in range(3)]
        assert await read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == committed
        assert await read_all(broker.bootstrap, topic, PARTITIONS, "read_uncommitted") == sorted(
            committed + aborted
        )

    asyncio.run(run())


def test_read_committed_stops_at_an_open_transaction(broker: BrookProcess) -> None:
    topic = _topic(broker)

    async def run() -> None:
        producer = _producer(broker, f"app-{uuid.uuid4().hex[:6]}")
        await producer.start()
        try:
            async with producer.transaction():
                await _send(producer, topic, "c", 3)
            await producer.begin_transaction()
            await _send(producer, topic, "open", 3)
            assert await read_all(
                broker.bootstrap, topic, PARTITIONS, "read_committed", settled=False
            ) == [
                "c0",
                "c1",
                "c2",
            ]
            uncommitted = await read_all(
                broker.bootstrap, topic, PARTITIONS, "read_uncommitted", settled=False
            )
            assert len(uncommitted) == 6
            await producer.commit_transaction()
        finally:
            await producer.stop()
        assert await read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == sorted(
            ["c0", "c1", "c2", "open0", "open1", "open2"]
        )

    asyncio.run(run())


def test_a_second_producer_fences_the_first(broker: BrookProcess) -> None:
    topic = _topic(broker)
    tid = f"app-{uuid.uuid4().hex[:6]}"

    async def run() -> None:
        zombie = _producer(broker, tid)
        await zombie.start()
        successor = _producer(broker, tid)
        try:
            await zombie.begin_transaction()
            await _send(zombie, topic, "z", 3)
            await successor.start()  # InitProducerId: aborts the zombie's open transaction
            async with successor.transaction():
                await _send(successor, topic, "s", 3)
            with pytest.raises(ProducerFenced):
                await zombie.commit_transaction()
        finally:
            await successor.stop()
            await zombie.stop()
        assert await read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == [
            "s0",
            "s1",
            "s2",
        ]
        assert await read_all(broker.bootstrap, topic, PARTITIONS, "read_uncommitted") == sorted(
            ["s0", "s1", "s2", "z0", "z1", "z2"]
        )

    asyncio.run(run())


async def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
    await consumer.start()
    try:
        found = {p: await consumer.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)}
    finally:
        await consumer.stop()
    return {p: offset for p, offset in found.items() if offset is not None}


def test_offsets_sent_to_a_transaction_commit_and_abort_with_it(broker: BrookProcess) -> None:
    source, sink = _topic(broker), _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"

    async def run() -> None:
        loader = AIOKafkaProducer(bootstrap_servers=broker.bootstrap)
        await loader.start()
        try:
            for i in range(30):
                await loader.send(source, f"in{i}".encode(), partition=i % PARTITIONS)
            await loader.flush()
        finally:
            await loader.stop()
        consumer = AIOKafkaConsumer(
            source,
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            isolation_level="read_committed",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
        )
        producer = _producer(broker, f"etl-{uuid.uuid4().hex[:6]}")
        await consumer.start()
        await producer.start()
        try:
            seen: list[str] = []
            async with asyncio.timeout(60):
                while len(seen) < 30:
                    batch = await consumer.getmany(timeout_ms=500)
                    records = [m for msgs in batch.values() for m in msgs]
                    if not records:
                        continue
                    async with producer.transaction():
                        for m in records:
                            await producer.send(sink, m.value.upper(), partition=m.partition)
                        positions = {tp: await consumer.position(tp) for tp in batch}
                        await producer.send_offsets_to_transaction(positions, group)
                    seen += [m.value.decode() for m in records]
            committed = {p: 10 for p in range(PARTITIONS)}
            async with asyncio.timeout(30):  # applied once the COMMIT marker is written
                while await _committed(broker.bootstrap, group, source) != committed:
                    await asyncio.sleep(0.05)
            # Offsets sent to an aborted transaction are not committed.
            await producer.begin_transaction()
            await producer.send(sink, b"x", partition=0)
            rewound = {TopicPartition(source, p): 1 for p in range(PARTITIONS)}
            await producer.send_offsets_to_transaction(rewound, group)
            await producer.abort_transaction()
            assert await _committed(broker.bootstrap, group, source) == committed
        finally:
            await producer.stop()
            await consumer.stop()
        assert await read_all(broker.bootstrap, sink, PARTITIONS, "read_committed") == sorted(
            f"IN{i}" for i in range(30)
        )

    asyncio.run(run())


def test_a_transaction_past_its_timeout_is_aborted(broker: BrookProcess) -> None:
    topic = _topic(broker)

    async def run() -> None:
        producer = _producer(
            broker,
            f"app-{uuid.uuid4().hex[:6]}",
            transaction_timeout_ms=1000,
            request_timeout_ms=5000,
        )
        await producer.start()
        try:
            await producer.begin_transaction()
            await _send(producer, topic, "late", 3)
            # The coordinator aborts it (its check runs every 200 ms) and bumps the epoch.
            # Its markers end the partitions' open transaction: the last stable offsets reach
            # the log ends.
            deadline = time.monotonic() + 30
            while True:
                ends = await _ends(broker.bootstrap, topic)
                if ends["read_committed"] == ends["read_uncommitted"]:
                    break
                assert time.monotonic() < deadline, "the timed-out transaction was not aborted"
                await asyncio.sleep(0.1)
            with pytest.raises(KafkaError):
                await producer.commit_transaction()
        finally:
            await producer.stop()
        assert await read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == []
        assert await read_all(broker.bootstrap, topic, PARTITIONS, "read_uncommitted") == [
            "late0",
            "late1",
            "late2",
        ]

    asyncio.run(run())


async def _ends(bootstrap: str, topic: str) -> dict[str, dict[TopicPartition, int]]:
    """Each isolation level's end offsets of the topic's partitions (ListOffsets latest)."""
    out: dict[str, dict[TopicPartition, int]] = {}
    for level in ("read_committed", "read_uncommitted"):
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=level)
        await consumer.start()
        try:
            out[level] = await consumer.end_offsets(
                [TopicPartition(topic, p) for p in range(PARTITIONS)]
            )
        finally:
            await consumer.stop()
    return out


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_transactions(broker: BrookProcess, codec: str) -> None:
    """Compressed transactional batches: read_committed drops the aborted ones whole."""
    topic = _topic(broker)

    async def run() -> None:
        producer = _producer(broker, f"app-{uuid.uuid4().hex[:6]}", compression_type=codec)
        await producer.start()
        try:
            for n in range(6):
                await producer.begin_transaction()
                for i in range(30):
                    await producer.send(topic, f"{n}-{i}".encode(), partition=i % PARTITIONS)
                await producer.flush()
                if n % 2 == 0:
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()
        assert await read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == sorted(
            f"{n}-{i}" for n in (0, 2, 4) for i in range(30)
        )
        uncommitted = await read_all(broker.bootstrap, topic, PARTITIONS, "read_uncommitted")
        assert len(uncommitted) == 180

    asyncio.run(run())


def test_the_same_producer_commits_across_a_broker_kill(tmp_path: Path) -> None:
    """kill -9 of the broker with a transaction open: the restarted coordinator loads it from
    ``__transaction_state`` and the producer, still running, adds to it and commits it."""
    with BrookProcess(tmp_path / "data") as own:
        topic = _topic(own)

        async def run() -> None:
            producer = _producer(own, f"app-{uuid.uuid4().hex[:6]}")
            await producer.start()
            try:
                await producer.begin_transaction()
                await _send(producer, topic, "before", 3)
                own.kill()
                own.start()
                await _send(producer, topic, "after", 3)
                await producer.commit_transaction()
            finally:
                await producer.stop()
            assert await read_all(own.bootstrap, topic, PARTITIONS, "read_committed") == sorted(
                [f"before{i}" for i in range(3)] + [f"after{i}" for i in range(3)]
            )

        asyncio.run(run())


def test_a_timeout_above_the_brokers_maximum_is_refused(broker: BrookProcess) -> None:
    async def run() -> None:
        producer = _producer(
            broker, f"app-{uuid.uuid4().hex[:6]}", transaction_timeout_ms=900_001
        )  # transaction.max.timeout.ms is 900,000
        try:
            with pytest.raises(InvalidTransactionTimeout):
                async with asyncio.timeout(30):
                    await producer.start()
        finally:
            await producer.stop()

    asyncio.run(run())
