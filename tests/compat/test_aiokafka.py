"""aiokafka 0.14 (non-flexible versions only: ApiVersions v0, Metadata v5, Produce v7,
Fetch v11) against Brook: every codec, acks 0/1/all, null values, the idempotent producer
(InitProducerId v0), assign + seek to the beginning, the end, an offset and a timestamp,
ListOffsets, and the admin client."""

from __future__ import annotations

import asyncio
import time

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewPartitions, NewTopic
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType
from support import BrookProcess


async def _read(consumer: AIOKafkaConsumer, count: int) -> list:
    got: list = []
    async with asyncio.timeout(30):
        while len(got) < count:
            batch = await consumer.getmany(timeout_ms=500)
            got += [m for msgs in batch.values() for m in msgs]
    return got


async def _round_trip(
    bootstrap: str, topic: str, codec: str | None, idempotent: bool, acks: int | str = 1
) -> None:
    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        compression_type=codec,
        enable_idempotence=idempotent,
        acks=acks,
    )
    await producer.start()
    try:
        for i in range(100):
            await producer.send(topic, value=f"v{i}".encode(), key=b"k", headers=[("h", b"1")])
        await producer.flush()
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        tp = TopicPartition(topic, 0)
        consumer.assign([tp])
        await consumer.seek_to_beginning(tp)
        got = await _read(consumer, 100)
        assert [m.value for m in got] == [f"v{i}".encode() for i in range(100)]
        assert [m.offset for m in got] == list(range(100))
        assert got[0].key == b"k" and got[0].headers == (("h", b"1"),)
    finally:
        await consumer.stop()


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_round_trip_per_codec(
    brook_session: BrookProcess, unique_topic: str, codec: str | None
) -> None:
    asyncio.run(_round_trip(brook_session.bootstrap, unique_topic, codec, idempotent=False))


def test_idempotent_producer(brook_session: BrookProcess, unique_topic: str) -> None:
    asyncio.run(
        _round_trip(brook_session.bootstrap, unique_topic, None, idempotent=True, acks="all")
    )


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_acks(brook_session: BrookProcess, unique_topic: str, acks: int | str) -> None:
    asyncio.run(
        _round_trip(brook_session.bootstrap, unique_topic, None, idempotent=False, acks=acks)
    )


def test_seek_end_offset_timestamp_and_null_values(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    async def run() -> None:
        b = brook_session.bootstrap
        producer = AIOKafkaProducer(bootstrap_servers=b)
        await producer.start()
        base = int(time.time() * 1000) - 100_000
        try:
            for i in range(10):
                await producer.send_and_wait(
                    unique_topic,
                    None if i == 3 else f"v{i}".encode(),
                    key=f"k{i}".encode(),
                    timestamp_ms=base + i * 1000,
                )
            consumer = AIOKafkaConsumer(bootstrap_servers=b, enable_auto_commit=False)
            await consumer.start()
            try:
                tp = TopicPartition(unique_topic, 0)
                consumer.assign([tp])
                assert await consumer.beginning_offsets([tp]) == {tp: 0}
                assert await consumer.end_offsets([tp]) == {tp: 10}
                found = await consumer.offsets_for_times({tp: base + 6500})
                assert (found[tp].offset, found[tp].timestamp) == (7, base + 7000)
                consumer.seek(tp, found[tp].offset)
                assert [m.value for m in await _read(consumer, 3)] == [b"v7", b"v8", b"v9"]
                consumer.seek(tp, 2)
                got = (await _read(consumer, 8))[:3]
                assert [(m.key, m.value) for m in got] == [
                    (b"k2", b"v2"),
                    (b"k3", None),
                    (b"k4", b"v4"),
                ]
                await consumer.seek_to_end(tp)
                assert await consumer.position(tp) == 10
                for i in range(3):
                    await producer.send_and_wait(unique_topic, f"new{i}".encode())
                got = await _read(consumer, 3)
                assert [(m.offset, m.value) for m in got] == [
                    (10 + i, f"new{i}".encode()) for i in range(3)
                ]
            finally:
                await consumer.stop()
        finally:
            await producer.stop()

    asyncio.run(run())


def test_admin_client(brook_session: BrookProcess, unique_topic: str) -> None:
    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=brook_session.bootstrap)
        await admin.start()
        try:
            await admin.create_topics(
                [NewTopic(unique_topic, 2, 1, topic_configs={"retention.ms": "3600000"})]
            )
            assert unique_topic in await admin.list_topics()
            resource = ConfigResource(ConfigResourceType.TOPIC, unique_topic)

            async def described() -> dict[str, str]:
                (response,) = await admin.describe_configs([resource])
                (error, _msg, _type, name, entries) = response.resources[0][:5]
                assert error == 0 and name == unique_topic
                return {entry[0]: entry[1] for entry in entries}

            before = await described()
            assert before["retention.ms"] == "3600000"
            assert before["segment.bytes"] == "1073741824"
            # AlterConfigs (33) replaces the topic's whole set of overrides
            await admin.alter_configs(
                [
                    ConfigResource(
                        ConfigResourceType.TOPIC, unique_topic, configs={"segment.ms": "60000"}
                    )
                ]
            )
            after = await described()
            assert after["segment.ms"] == "60000"
            assert after["retention.ms"] == "604800000"
            await admin.create_partitions({unique_topic: NewPartitions(3)})
            (topic,) = await admin.describe_topics([unique_topic])
            assert len(topic["partitions"]) == 3
            cluster = await admin.describe_cluster()
            assert [b["port"] for b in cluster["brokers"]] == [brook_session.port]
            await admin.delete_topics([unique_topic])
            assert unique_topic not in await admin.list_topics()
        finally:
            await admin.close()

    asyncio.run(run())
