"""Sender decisions against scripted brokers: retriable errors retried within
delivery.timeout.ms, batches that cannot be delivered in time fail with a timeout naming it,
request timeouts, non-retriable errors surfaced by name, and a full buffer.memory."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from scripted_cluster import DROP, TOPIC, ProduceCall, ScriptedCluster

from brook import AsyncProducer, Producer
from brook.client import BufferExhaustedError, KafkaTimeoutError, ProducerClosedError
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.produce_codec import PartitionProduceResult


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def config(cluster: ScriptedCluster, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "linger.ms": 0,
        "retry.backoff.ms": 20,
        "retry.backoff.max.ms": 40,
        "enable.idempotence": False,
        "acks": "1",
        **extra,
    }


def failing(code: int, times: int | None = None) -> Any:
    count = {"n": 0}

    def handler(c: ScriptedCluster, node: int, call: ProduceCall) -> Any:
        count["n"] += 1
        if times is not None and count["n"] > times:
            return None
        return PartitionProduceResult(call.partition, code, error_message="scripted")

    return handler


def test_retriable_errors_are_retried_with_backoff() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            cluster.produce[1] = failing(Errors.NOT_ENOUGH_REPLICAS, times=3)
            async with AsyncProducer(config(cluster)) as producer:
                meta = await producer.send_and_wait(TOPIC, b"v")
                retries = producer.metrics()[
                    f"producer-metrics:record-retry-total:{{client-id={producer.client_id}}}"
                ]
            assert meta.offset == 0 and len(cluster.produce_calls) == 4 and retries == 3
            gaps = [
                b.at - a.at
                for a, b in zip(cluster.produce_calls, cluster.produce_calls[1:], strict=False)
            ]
            assert all(g >= 0.015 for g in gaps)

    run(main())


def test_a_batch_not_delivered_in_time_fails_with_a_timeout() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            cluster.produce[1] = failing(Errors.NOT_ENOUGH_REPLICAS)
            settings = config(cluster, **{"delivery.timeout.ms": 600, "request.timeout.ms": 500})
            async with AsyncProducer(settings) as producer:
                start = time.monotonic()
                with pytest.raises(KafkaError) as info:
                    await producer.send_and_wait(TOPIC, b"v")
                elapsed = time.monotonic() - start
            # Either it ran out of time while backing off (timeout), or the last answer was
            # the broker's: both within the delivery timeout.
            assert elapsed < 3
            assert info.value.name in ("REQUEST_TIMED_OUT", "NOT_ENOUGH_REPLICAS")
            assert len(cluster.produce_calls) >= 3

    run(main())


def test_expiry_of_an_unanswered_batch_names_delivery_timeout() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            cluster.produce[1] = lambda c, node, call: DROP
            settings = config(
                cluster,
                **{
                    "delivery.timeout.ms": 700,
                    "request.timeout.ms": 600,
                    "linger.ms": 100,
                    "retry.backoff.ms": 5000,
                    "retry.backoff.max.ms": 5000,
                },
            )
            async with AsyncProducer(settings) as producer:
                future = await producer.send(TOPIC, b"v")
                with pytest.raises(KafkaTimeoutError, match=r"delivery\.timeout\.ms=700"):
                    await future

    run(main())


def test_non_retriable_error_surfaces_by_name() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            cluster.produce[1] = failing(Errors.INVALID_RECORD)
            async with AsyncProducer(config(cluster)) as producer:
                with pytest.raises(KafkaError) as info:
                    await producer.send_and_wait(TOPIC, b"v")
            assert info.value.name == "INVALID_RECORD" and not info.value.retriable
            assert "scripted" in str(info.value) and len(cluster.produce_calls) == 1

    run(main())


def test_request_timeout_closes_the_connection_and_retries() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            first = {"seen": False}

            def swallow_first(c: ScriptedCluster, node: int, call: ProduceCall) -> Any:
                if not first["seen"]:
                    first["seen"] = True
                    return DROP
                return None

            cluster.produce[1] = swallow_first
            settings = config(cluster, **{"request.timeout.ms": 300, "delivery.timeout.ms": 5000})
            async with AsyncProducer(settings) as producer:
                meta = await producer.send_and_wait(TOPIC, b"v")
            assert meta.offset >= 0
            assert len(cluster.produce_calls) >= 2
            assert len(cluster.brokers[1].writers) >= 2  # reconnected after the timeout

    run(main())


def test_full_buffer_blocks_send_then_fails_naming_max_block_ms() -> None:
    async def main() -> None:
        async with ScriptedCluster(partitions=2) as cluster:
            cluster.produce[1] = lambda c, node, call: DROP
            settings = config(
                cluster,
                **{
                    "buffer.memory": 20000,
                    "batch.size": 16384,
                    "max.block.ms": 300,
                    "linger.ms": 10000,
                    "request.timeout.ms": 20000,
                },
            )
            producer = AsyncProducer(settings)
            await producer.start()
            await producer.partitions_for(TOPIC)
            await producer.send(TOPIC, b"x" * 100, partition=0)
            start = time.monotonic()
            with pytest.raises(BufferExhaustedError, match="300 ms"):
                await producer.send(TOPIC, b"x" * 100, partition=1)
            assert 0.25 < time.monotonic() - start < 2
            await producer.close(0)

    run(main())


def test_sync_producer_against_scripted_broker_acks_zero() -> None:
    async def serve() -> None:
        async with ScriptedCluster() as cluster:
            loop = asyncio.get_running_loop()
            settings = config(cluster, acks="0")

            def use() -> list[int]:
                with Producer(settings) as producer:
                    futures = [producer.send(TOPIC, b"v") for _ in range(5)]
                    producer.flush(10)
                    return [f.result(0).offset for f in futures]

            offsets = await loop.run_in_executor(None, use)
            assert offsets == [-1] * 5
            for _ in range(100):  # the broker reads what was written at its own pace
                if sum(c.count for c in cluster.produce_calls) == 5:
                    break
                await asyncio.sleep(0.05)
            assert sum(c.count for c in cluster.produce_calls) == 5

    run(serve())


def test_close_delivers_what_is_queued_then_send_is_refused() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            producer = AsyncProducer(config(cluster, **{"linger.ms": 60000}))
            await producer.start()
            future = await producer.send(TOPIC, b"v")
            await producer.close()  # no lingering for a minute: sent at once
            assert (await future).offset == 0
            with pytest.raises(ProducerClosedError):
                await producer.send(TOPIC, b"late")

    run(main())


def test_forced_close_fails_what_cannot_be_delivered() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            cluster.produce[1] = lambda c, node, call: DROP
            producer = AsyncProducer(config(cluster))
            await producer.start()
            future = await producer.send(TOPIC, b"v")
            await producer.close(timeout=0.2)
            with pytest.raises(ProducerClosedError):
                await future

    run(main())


def test_a_batch_whose_leader_is_unknown_leaves_once_metadata_names_one() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            cluster.leaders[0] = (-1, 5)  # an election in progress: no leader yet
            settings = config(cluster, **{"delivery.timeout.ms": 40000})
            async with AsyncProducer(settings) as producer:
                loop = asyncio.get_running_loop()
                loop.call_later(0.3, cluster.leaders.__setitem__, 0, (1, 6))
                start = time.monotonic()
                meta = await producer.send_and_wait(TOPIC, b"v")
                elapsed = time.monotonic() - start
            # Metadata is asked for again while the leader is unknown (not only after
            # metadata.max.age.ms), and the batch goes as soon as an answer names the leader.
            assert meta.offset == 0
            assert elapsed < 3
            assert len(cluster.metadata_calls) >= 3

    run(main())


def test_concurrent_first_sends_start_one_producer_and_close_leaves_no_task() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            before = asyncio.all_tasks()
            producer = AsyncProducer(config(cluster))
            futures = await asyncio.gather(*(producer.send(TOPIC, b"v%d" % i) for i in range(5)))
            assert [(await f).offset for f in futures] == [0, 1, 2, 3, 4]
            await producer.close()
            await asyncio.sleep(0.1)
            left = [t for t in asyncio.all_tasks() - before if not t.done()]
            assert left == []

    run(main())
