"""Reading a topic back with aiokafka's and kafka-python's own consumers at an isolation
level, as the transaction tests of those clients check what their producers wrote.

A commit or an abort returns once the coordinator has written its decision; the markers reach
the partitions just after. So a reader that must see every decided transaction first waits
until the topic is *settled*: each partition's end at its isolation level (for read_committed,
the last stable offset) equal to its log end, that is, no transaction open on it."""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition

DEADLINE_S = 60.0


async def _aiokafka_ends(
    bootstrap: str, tps: list[AioTopicPartition], level: str
) -> dict[AioTopicPartition, int]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, isolation_level=level)
    await consumer.start()
    try:
        return await consumer.end_offsets(tps)
    finally:
        await consumer.stop()


async def aiokafka_read_all(
    bootstrap: str, topic: str, partitions: int, level: str, settled: bool = True
) -> list[str]:
    """Every record aiokafka's consumer at ``level`` returns from each partition up to the end
    it reports for that level, sorted (after waiting for the topic to be settled, if
    ``settled``). Both clients move their position past control batches and aborted batches,
    so reaching the end means nothing more is readable."""
    tps = [AioTopicPartition(topic, p) for p in range(partitions)]
    async with asyncio.timeout(DEADLINE_S):
        while settled and await _aiokafka_ends(
            bootstrap, tps, "read_committed"
        ) != await _aiokafka_ends(bootstrap, tps, "read_uncommitted"):
            await asyncio.sleep(0.05)
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level=level, enable_auto_commit=False
    )
    await consumer.start()
    try:
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        got: list[str] = []
        async with asyncio.timeout(DEADLINE_S):
            while True:
                batch = await consumer.getmany(timeout_ms=200)
                got += [m.value.decode() for msgs in batch.values() for m in msgs]
                positions = [await consumer.position(tp) for tp in tps]
                if all(pos >= ends[tp] for pos, tp in zip(positions, tps, strict=True)):
                    return sorted(got)
    finally:
        await consumer.stop()


def _kafka_python_ends(
    bootstrap: str, tps: list[KafkaTopicPartition], level: str
) -> dict[KafkaTopicPartition, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=level)
    try:
        return consumer.end_offsets(tps)
    finally:
        consumer.close()


def kafka_python_read_all(
    bootstrap: str, topic: str, partitions: int, level: str, settled: bool = True
) -> list[str]:
    """The same with kafka-python's consumer."""
    tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
    deadline = time.monotonic() + DEADLINE_S
    while settled and _kafka_python_ends(bootstrap, tps, "read_committed") != _kafka_python_ends(
        bootstrap, tps, "read_uncommitted"
    ):
        assert time.monotonic() < deadline, f"{topic} still has a transaction open"
        time.sleep(0.05)
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level=level, enable_auto_commit=False
    )
    try:
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        got: list[str] = []
        while not all(consumer.position(tp) >= ends[tp] for tp in tps):
            assert time.monotonic() < deadline, (ends, got)
            for records in consumer.poll(timeout_ms=200).values():
                got += [r.value.decode() for r in records]
        return sorted(got)
    finally:
        consumer.close()
