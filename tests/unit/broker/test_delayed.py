"""Where requests wait for replicas: a delayed produce settles each partition as Kafka's
DelayedProduce does (acknowledged, REQUEST_TIMED_OUT when still waiting at the timeout,
NOT_LEADER_OR_FOLLOWER when leadership moves, NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR
fell below the minimum); a delayed fetch wakes on what its kind of fetch reads."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from brook.broker.delayed import DelayedProduce, PendingAcks, wait_for_data
from brook.broker.partition import Partition
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata.image import PartitionInfo
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch

TID = uuid.uuid4()


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Callable[..., Partition]]:
    logs: list[PartitionLog] = []

    def factory(name: str, isr: tuple[int, ...] = (1, 2), **config: object) -> Partition:
        plog = PartitionLog.open(tmp_path / f"{name}-0", LogConfig.from_topic_config(config))
        logs.append(plog)
        p = Partition(name, 0, TID, 1, plog)
        p.update(PartitionInfo(TID, 0, (1, 2), isr, 1, 0, 0))
        return p

    yield factory
    for plog in logs:
        plog.close_files()


def _append(p: Partition, count: int = 3) -> int:
    return p.append_as_leader(build_simple_batch([b"v"] * count), -1, 0).last_offset + 1


def test_each_partition_gets_its_own_outcome(make: Callable[..., Partition]) -> None:
    async def run() -> None:
        acked, timed_out, moved, alone = make("a"), make("b"), make("c"), make("d", isr=(1,))
        items = [PendingAcks(p, _append(p)) for p in (acked, timed_out, moved, alone)]
        delayed = DelayedProduce(items)
        assert delayed.waiting
        assert items[3].error_code == Errors.NONE  # the leader alone in the ISR: at once
        waiting = asyncio.ensure_future(delayed.wait(300))
        await asyncio.sleep(0)
        acked.record_follower_fetch(2, 3, 0, -1)
        moved.update(PartitionInfo(TID, 0, (1, 2), (1, 2), 2, 1, 1))
        await waiting
        assert [i.error_code for i in items] == [
            Errors.NONE,
            Errors.REQUEST_TIMED_OUT,
            Errors.NOT_LEADER_OR_FOLLOWER,
            Errors.NONE,
        ]

    asyncio.run(run())


def test_acks_after_the_isr_fell_below_min_isr(make: Callable[..., Partition]) -> None:
    async def run() -> None:
        p = make("a", **{"min.insync.replicas": 2})
        required = _append(p)
        p.record_follower_fetch(2, required, 0, -1)
        p.update(PartitionInfo(TID, 0, (1, 2), (1,), 1, 0, 1))  # the ISR shrank
        item = PendingAcks(p, required)
        delayed = DelayedProduce([item])
        assert not delayed.waiting
        assert item.error_code == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND

    asyncio.run(run())


def test_a_followers_fetch_wakes_on_an_append_a_consumers_does_not(
    make: Callable[..., Partition],
) -> None:
    async def run() -> None:
        p = make("a")
        follower = asyncio.ensure_future(
            wait_for_data([p], follower=True, max_wait_ms=5000, enough=lambda: p.appended_bytes > 0)
        )
        consumer = asyncio.ensure_future(
            wait_for_data([p], follower=False, max_wait_ms=300, enough=lambda: p.high_watermark > 0)
        )
        await asyncio.sleep(0)
        _append(p)  # the HW does not move: 2 has not fetched
        await asyncio.wait_for(follower, 1)
        assert not consumer.done()
        await consumer  # ends at its max wait
        assert p.waiting_fetches == 0

    asyncio.run(run())
