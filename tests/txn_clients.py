"""Reading a topic back with aiokafka's and kafka-python's own consumers at an isolation
level, as the transaction tests of those clients check what their producers wrote."""

from __future__ import annotations

import asyncio
import time

from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition


async def aiokafka_read_all(bootstrap: str, topic: str, partitions: int, level: str) -> list[str]:
    """Every record aiokafka's consumer at ``level`` returns from each partition up to the end
    it reports for that level (the last stable offset for read_committed), sorted. Both
    clients move their position past control batches and aborted batches, so reaching the end
    means nothing more is readable."""
    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level=level, enable_auto_commit=False
    )
    await consumer.start()
    try:
        tps = [AioTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        await consumer.seek_to_beginning(*tps)
        ends = await consumer.end_offsets(tps)
        got: list[str] = []
        async with asyncio.timeout(60):
            while True:
                batch = await consumer.getmany(timeout_ms=200)
                got += [m.value.decode() for msgs in batch.values() for m in msgs]
                positions = [await consumer.position(tp) for tp in tps]
                if all(pos >= ends[tp] for pos, tp in zip(positions, tps, strict=True)):
                    return sorted(got)
    finally:
        await consumer.stop()


def kafka_python_read_all(bootstrap: str, topic: str, partitions: int, level: str) -> list[str]:
    """The same with kafka-python's consumer."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level=level, enable_auto_commit=False
    )
    try:
        tps = [KafkaTopicPartition(topic, p) for p in range(partitions)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        ends = consumer.end_offsets(tps)
        got: list[str] = []
        deadline = time.monotonic() + 60
        while not all(consumer.position(tp) >= ends[tp] for tp in tps):
            assert time.monotonic() < deadline, (ends, got)
            for records in consumer.poll(timeout_ms=200).values():
                got += [r.value.decode() for r in records]
        return sorted(got)
    finally:
        consumer.close()
