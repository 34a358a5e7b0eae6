"""KIP-951 on the produce side, driven by real Produce v11 responses from scripted brokers:
a NOT_LEADER_OR_FOLLOWER carrying CurrentLeader + NodeEndpoints moves the retry to the new
leader at once; a stale hint is ignored; with the optimisation off the producer waits for
metadata; a metadata refresh is requested in every case."""

from __future__ import annotations

import asyncio
from typing import Any

from scripted_cluster import TOPIC, ProduceCall, ScriptedCluster

from brook import AsyncProducer
from brook.protocol.errors import Errors
from brook.protocol.produce_codec import PartitionProduceResult

BACKOFF_MS = 1500  # long enough that "no backoff" and "backoff" cannot be confused


def run(coro: Any) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))


def not_leader(hint: tuple[int, int]) -> Any:
    def handler(cluster: ScriptedCluster, node: int, call: ProduceCall) -> PartitionProduceResult:
        result = PartitionProduceResult(call.partition, Errors.NOT_LEADER_OR_FOLLOWER)
        result.current_leader = hint
        return result

    return handler


async def refreshed_after(cluster: ScriptedCluster, when: float, wait: float = 5.0) -> bool:
    for _ in range(int(wait / 0.05)):
        if any(t > when for _, t in cluster.metadata_calls):
            return True
        await asyncio.sleep(0.05)
    return False


def config(cluster: ScriptedCluster, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "acks": "1",
        "linger.ms": 0,
        "retry.backoff.ms": BACKOFF_MS,
        "retry.backoff.max.ms": BACKOFF_MS,
        **extra,
    }


def test_retry_goes_to_the_new_leader_at_once_and_metadata_is_refreshed() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            cluster.produce[1] = not_leader((2, 6))
            cluster.node_endpoints = [(2, "127.0.0.1", cluster.port(2), None)]
            async with AsyncProducer(config(cluster)) as producer:
                meta = await producer.send_and_wait(TOPIC, b"v")
                first, second = cluster.produce_calls
                # A refresh is still requested after the error; it comes once the refresher's
                # own backoff allows (the scripted metadata is stale and must not undo the hint).
                assert await refreshed_after(cluster, first.at)
                cached = producer._core.cluster.partition((TOPIC, 0))
            assert (first.node, second.node) == (1, 2)
            assert meta.offset == 0 and meta.partition == 0
            assert second.at - first.at < BACKOFF_MS / 1000 / 2, "the retry waited for backoff"
            assert cached is not None and (cached.leader, cached.leader_epoch) == (2, 6)

    run(main())


def test_later_retries_to_the_same_leader_epoch_back_off() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            cluster.produce[1] = not_leader((2, 6))
            cluster.node_endpoints = [(2, "127.0.0.1", cluster.port(2), None)]
            answers = iter([Errors.NOT_ENOUGH_REPLICAS, None])

            def flaky(c: ScriptedCluster, node: int, call: ProduceCall) -> Any:
                code = next(answers)
                return None if code is None else PartitionProduceResult(call.partition, code)

            cluster.produce[2] = flaky
            async with AsyncProducer(config(cluster)) as producer:
                await producer.send_and_wait(TOPIC, b"v")
            first, second, third = cluster.produce_calls
            assert [c.node for c in cluster.produce_calls] == [1, 2, 2]
            assert second.at - first.at < BACKOFF_MS / 1000 / 2
            assert third.at - second.at >= BACKOFF_MS / 1000 * 0.75

    run(main())


def test_a_stale_leader_hint_is_ignored() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            answers = iter([True, False])

            def once(c: ScriptedCluster, node: int, call: ProduceCall) -> Any:
                # Epoch 4 is older than the 5 the metadata gave: no move, no skipped backoff.
                return not_leader((2, 4))(c, node, call) if next(answers) else None

            cluster.produce[1] = once
            cluster.node_endpoints = [(2, "127.0.0.1", cluster.port(2), None)]
            async with AsyncProducer(config(cluster)) as producer:
                await producer.send_and_wait(TOPIC, b"v")
                cached = producer._core.cluster.partition((TOPIC, 0))
            assert [c.node for c in cluster.produce_calls] == [1, 1]
            first, second = cluster.produce_calls
            assert second.at - first.at >= BACKOFF_MS / 1000 * 0.75
            assert cached is not None and (cached.leader, cached.leader_epoch) == (1, 5)

    run(main())


def test_with_leader_discovery_off_the_producer_waits_for_metadata() -> None:
    async def main() -> None:
        async with ScriptedCluster() as cluster:
            moved: list[float] = []

            def not_leader_then_move(c: ScriptedCluster, node: int, call: ProduceCall) -> Any:
                # The cluster really moved the leader; only a metadata refresh tells the
                # producer, since it ignores the hint.
                c.leaders[0] = (2, 6)
                moved.append(call.at)
                return not_leader((2, 6))(c, node, call)

            cluster.produce[1] = not_leader_then_move
            cluster.node_endpoints = [(2, "127.0.0.1", cluster.port(2), None)]
            settings = config(cluster, **{"brook.leader.discovery.enable": False})
            async with AsyncProducer(settings) as producer:
                await producer.send_and_wait(TOPIC, b"v")
            calls = cluster.produce_calls
            first = calls[0]
            moved_to = next(c for c in calls if c.node == 2)
            # Until a refresh shows the new leader, retries go to the old one, backing off.
            assert all(c.node == 1 for c in calls[: calls.index(moved_to)])
            assert calls[1].at - first.at >= BACKOFF_MS / 1000 * 0.75
            refreshes = [t for _, t in cluster.metadata_calls if first.at < t < moved_to.at]
            assert refreshes, "the retry went to the new leader without a metadata refresh"

    run(main())
