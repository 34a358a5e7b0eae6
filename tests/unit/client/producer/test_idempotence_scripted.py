"""The idempotent producer's recovery, driven by scripted broker answers: sequence gaps and
lost producer state bump the epoch and re-sequence, duplicates count as delivered, retried
batches keep their order, and a broker without InitProducerId fails the producer clearly."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from scripted_cluster import DROP, RANGES, TOPIC, ProduceCall, ScriptedCluster

from brook import AsyncProducer
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.produce_codec import PartitionProduceResult


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def config(cluster: ScriptedCluster, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "linger.ms": 0,
        "retry.backoff.ms": 20,
        "retry.backoff.max.ms": 50,
        **extra,
    }


def answers(codes: Iterator[int | None], log_start_offset: int = 0) -> Any:
    def handler(cluster: ScriptedCluster, node: int, call: ProduceCall) -> Any:
        code = next(codes, None)
        if code is None:
            return None
        return PartitionProduceResult(call.partition, code, log_start_offset=log_start_offset)

    return handler


@pytest.mark.parametrize(
    "code",
    [Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, Errors.UNKNOWN_PRODUCER_ID],
    ids=["out_of_order", "unknown_producer_id"],
)
def test_gap_or_lost_state_bumps_the_epoch_and_restarts_the_sequence(code: int) -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            async with AsyncProducer(config(cluster)) as producer:
                await producer.send_and_wait(TOPIC, b"a")
                await producer.send_and_wait(TOPIC, b"b")
                cluster.produce[1] = answers(iter([code]))
                meta = await producer.send_and_wait(TOPIC, b"c")
                after = await producer.send_and_wait(TOPIC, b"d")
            calls = [
                (c.producer_id, c.producer_epoch, c.base_sequence) for c in cluster.produce_calls
            ]
            pid = calls[0][0]
            assert calls == [(pid, 0, 0), (pid, 0, 1), (pid, 0, 2), (pid, 1, 0), (pid, 1, 1)]
            assert len(cluster.init_calls) == 1  # the bump is local (KIP-360), no new id
            assert meta.offset == 2 and after.offset == 3

    run(main())


def test_duplicate_sequence_counts_as_delivered_without_an_offset() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            cluster.produce[1] = answers(iter([Errors.DUPLICATE_SEQUENCE_NUMBER]))
            async with AsyncProducer(config(cluster)) as producer:
                meta = await producer.send_and_wait(TOPIC, b"a")
                nxt = await producer.send_and_wait(TOPIC, b"b")
            assert meta.offset == -1
            assert [c.base_sequence for c in cluster.produce_calls] == [0, 1]
            assert nxt.offset == 0

    run(main())


def test_retried_batches_keep_their_sequences_and_order() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            stored: list[int] = []
            replies = iter([Errors.NOT_ENOUGH_REPLICAS, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER])

            def handler(c: ScriptedCluster, node: int, call: ProduceCall) -> Any:
                code = next(replies, None)
                if code is not None:
                    return PartitionProduceResult(call.partition, code, log_start_offset=0)
                expected = stored[-1] + 1 if stored else 0
                if call.base_sequence != expected:
                    return PartitionProduceResult(
                        call.partition, Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, log_start_offset=0
                    )
                stored.extend(range(call.base_sequence, call.base_sequence + call.count))
                return None

            cluster.produce[1] = handler
            async with AsyncProducer(config(cluster, **{"batch.size": 100})) as producer:
                # Several batches in flight at once on one partition.
                futures = [await producer.send(TOPIC, b"x" * 60, partition=0) for _ in range(6)]
                await producer.flush()
                results = [await f for f in futures]
            assert stored == list(range(6)), "records stored out of order or twice"
            assert all(c.producer_epoch == 0 for c in cluster.produce_calls)
            assert [m.offset for m in results] == list(range(6))

    run(main())


def test_broker_without_init_producer_id_fails_clearly() -> None:
    async def main() -> None:
        ranges = {k: v for k, v in RANGES.items() if k != 22}
        async with ScriptedCluster(ranges=ranges) as cluster:
            async with AsyncProducer(config(cluster)) as producer:
                future = await producer.send(TOPIC, b"a")
                with pytest.raises(KafkaError) as info:
                    await future
                assert info.value.name == "UNSUPPORTED_VERSION"
                assert "enable.idempotence=false" in str(info.value)
                with pytest.raises(KafkaError):
                    await producer.send(TOPIC, b"b")
            assert cluster.produce_calls == []
            async with AsyncProducer(config(cluster, **{"enable.idempotence": False})) as plain:
                meta = await plain.send_and_wait(TOPIC, b"c")
            assert meta.offset == 0
            assert cluster.produce_calls[0].producer_id == -1

    run(main())


def test_a_batch_expired_after_it_was_sent_does_not_stick_the_partition() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            drops = iter([True, True])
            cluster.produce[1] = lambda c, node, call: DROP if next(drops, False) else None
            settings = config(cluster, **{"request.timeout.ms": 600, "delivery.timeout.ms": 800})
            async with AsyncProducer(settings) as producer:
                lost = await producer.send(TOPIC, b"a")
                with pytest.raises(KafkaError) as info:
                    await lost
                assert info.value.name == "REQUEST_TIMED_OUT"
                meta = await producer.send_and_wait(TOPIC, b"b")
            assert meta.offset == 0
            last = cluster.produce_calls[-1]
            # "a" may or may not have landed: "b" starts over under a new epoch.
            assert (last.producer_epoch, last.base_sequence) == (1, 0)

    run(main())
