"""aiokafka 0.14 (non-flexible versions only: ApiVersions v0, Metadata v5, Produce v7,
Fetch v11) against Brook, including its idempotent producer (InitProducerId v0)."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from support import BrookProcess


async def _round_trip(bootstrap: str, topic: str, codec: str | None, idempotent: bool) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, compression_type=codec,
                                enable_idempotence=idempotent)
    await producer.start()
    try:
        for i in range(100):
            await producer.send(topic, value=f"v{i}".encode(), key=b"k",
                                headers=[("h", b"1")])
        await producer.flush()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        got = []
        async with asyncio.timeout(30):
            while len(got) < 100:
                batch = await consumer.getmany(timeout_ms=500)
                got += [m for msgs in batch.values() for m in msgs]
        assert [m.value for m in got] == [f"v{i}".encode() for i in range(100)]
        assert got[0].headers == (("h", b"1"),)
    finally:
        await consumer.stop()


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_round_trip_per_codec(brook_session: BrookProcess, unique_topic: str,
                              codec: str | None) -> None:
    asyncio.run(_round_trip(brook_session.bootstrap, unique_topic, codec, idempotent=False))


def test_idempotent_producer(brook_session: BrookProcess, unique_topic: str) -> None:
    asyncio.run(_round_trip(brook_session.bootstrap, unique_topic, None, idempotent=True))


def test_admin_create_and_delete(brook_session: BrookProcess, unique_topic: str) -> None:
    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=brook_session.bootstrap)
        await admin.start()
        try:
            await admin.create_topics([NewTopic(unique_topic, 3, 1)])
            assert unique_topic in await admin.list_topics()
            await admin.delete_topics([unique_topic])
            assert unique_topic not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(run())
