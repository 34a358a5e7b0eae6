"""Partitioner choices through the producer: Kafka's deprecated partitioner class names select
the pre-KIP-794 sticky behaviour (a new partition for every new batch, through the
on_new_batch abort path), custom partitioners see the serialized key and value, and keyed
records land where murmur2 says, as with Java."""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from scripted_cluster import TOPIC, ScriptedCluster

from brook import AsyncProducer
from brook.client.partitioner import partition_for_key

DEFAULT_PARTITIONER = "org.apache.kafka.clients.producer.internals.DefaultPartitioner"


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def test_kafkas_default_partitioner_name_switches_on_every_new_batch() -> None:
    async def main() -> list[int]:
        async with ScriptedCluster(partitions=3) as cluster:
            config = {
                "bootstrap.servers": cluster.bootstrap,
                "partitioner.class": DEFAULT_PARTITIONER,
                "batch.size": 200,  # two 60-byte records per batch
                "linger.ms": 1000,
            }
            async with AsyncProducer(config) as producer:
                futures = [await producer.send(TOPIC, b"x" * 60) for _ in range(30)]
                await producer.flush()
                return [(await f).partition for f in futures]

    partitions = run(main())
    for i in range(0, 30, 2):
        assert partitions[i] == partitions[i + 1], partitions  # one batch, one partition
    for i in range(0, 28, 2):
        assert partitions[i] != partitions[i + 2], partitions  # the next batch moves on


def test_custom_partitioner_sees_serialized_key_and_value() -> None:
    seen: list[tuple[bytes | None, bytes | None]] = []

    class Last:
        def partition(
            self, topic: str, key: bytes | None, value: bytes | None, cluster: Any
        ) -> int:
            seen.append((key, value))
            return len(cluster.partitions_for(topic)) - 1

        def close(self) -> None:
            pass

    async def main() -> list[int]:
        async with ScriptedCluster(partitions=3) as cluster:
            config = {
                "bootstrap.servers": cluster.bootstrap,
                "partitioner.class": Last(),
                "value.serializer": "org.apache.kafka.common.serialization.StringSerializer",
            }
            async with AsyncProducer(config) as producer:
                metas = [await producer.send_and_wait(TOPIC, f"v{i}", key=b"k") for i in range(3)]
                return [m.partition for m in metas]

    assert run(main()) == [2, 2, 2]
    assert seen == [(b"k", b"v0"), (b"k", b"v1"), (b"k", b"v2")]


def test_keyed_records_follow_murmur2_and_ignore_keys_turns_it_off() -> None:
    async def main(ignore: bool) -> list[int]:
        async with ScriptedCluster(partitions=3) as cluster:
            config = {
                "bootstrap.servers": cluster.bootstrap,
                "partitioner.ignore.keys": ignore,
                "batch.size": 1000,
            }
            async with AsyncProducer(config) as producer:
                futures = [
                    await producer.send(TOPIC, b"v" * 50, key=f"key-{i}".encode())
                    for i in range(30)
                ]
                return [(await f).partition for f in futures]

    hashed = run(main(False))
    assert hashed == [partition_for_key(f"key-{i}".encode(), 3) for i in range(30)]
    sticky = run(main(True))
    # Sticky: runs of about 1000 bytes (~8 records) on one partition, not the key hash.
    assert sticky != hashed
    assert sum(1 for a, b in itertools.pairwise(sticky) if a != b) <= 6
    assert sum(1 for a, b in itertools.pairwise(hashed) if a != b) > 12
