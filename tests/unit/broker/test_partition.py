"""A partition as its broker sees it: the high watermark kept apart from the log end offset,
leader epochs stamped into appended batches, acks=all waiters, epoch fencing, min ISR."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from brook.broker.partition import Partition
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata.image import BrokerInfo, PartitionInfo
from brook.protocol.batch import read_header
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch

NOW = 1_700_000_000_000
TOPIC_ID = uuid.uuid4()


def _info(
    leader: int, epoch: int, replicas: tuple[int, ...], isr: tuple[int, ...]
) -> PartitionInfo:
    return PartitionInfo(TOPIC_ID, 0, replicas, isr, leader, epoch, epoch)


@pytest.fixture
def open_log(tmp_path: Path) -> Iterator[Callable[..., PartitionLog]]:
    opened: list[PartitionLog] = []

    def factory(**config: object) -> PartitionLog:
        plog = PartitionLog.open(tmp_path / "t-0", LogConfig.from_topic_config(config), now_ms=NOW)
        opened.append(plog)
        return plog

    yield factory
    for plog in opened:
        plog.close_files()


@pytest.fixture
def partition(open_log: Callable[..., PartitionLog]) -> Partition:
    return Partition("t", 0, TOPIC_ID, 1, open_log())


def _append(p: Partition, count: int = 3, acks: int = 1) -> int:
    return p.append_as_leader(
        build_simple_batch([b"v"] * count, timestamp=NOW), acks, NOW
    ).first_offset


def test_alone_in_the_isr_the_high_watermark_follows_the_log_end(partition: Partition) -> None:
    partition.update(_info(1, 4, (1,), (1,)))
    assert partition.is_leader and partition.high_watermark == 0
    assert _append(partition) == 0
    assert partition.log.log_end_offset == partition.high_watermark == 3  # records, not batches
    data = partition.read(0, 1 << 20, for_follower=False, min_one_batch=True).records
    assert read_header(data).partition_leader_epoch == 4  # the leader epoch is stamped in


def test_with_a_follower_the_high_watermark_waits_for_it(partition: Partition) -> None:
    async def run() -> None:
        partition.update(_info(1, 0, (1, 2), (1, 2)))
        _append(partition, 5, acks=-1)
        assert (partition.log.log_end_offset, partition.high_watermark) == (5, 0)
        waiter = partition.wait_for_acks(5)
        assert waiter is not None and not waiter.done()
        # consumers read up to the high watermark only; followers up to the log end
        assert partition.read(0, 1 << 20, for_follower=False, min_one_batch=True).records == b""
        assert partition.read(0, 1 << 20, for_follower=True, min_one_batch=True).records
        partition.record_follower_fetch(2, 3, 0, -1)  # the follower has offsets 0-2
        assert partition.high_watermark == 3
        assert not waiter.done()
        partition.record_follower_fetch(2, 5, 0, -1)
        await asyncio.wait_for(waiter, 1)
        assert partition.wait_for_acks(5) is None
        # a follower out of the ISR no longer holds the high watermark back
        partition.update(_info(1, 0, (1, 2), (1,)))
        _append(partition, 2)
        assert partition.high_watermark == partition.log.log_end_offset == 7

    asyncio.run(run())


def test_losing_leadership_fails_waiting_produces(partition: Partition) -> None:
    async def run() -> None:
        partition.update(_info(1, 0, (1, 2), (1, 2)))
        _append(partition, acks=-1)
        waiter = partition.wait_for_acks(3)
        assert waiter is not None
        partition.update(_info(2, 1, (1, 2), (1, 2)))
        assert not partition.is_leader
        with pytest.raises(KafkaError) as failed:
            await asyncio.wait_for(waiter, 1)
        assert failed.value.code == Errors.NOT_LEADER_OR_FOLLOWER
        with pytest.raises(KafkaError) as refused:
            _append(partition)
        assert refused.value.code == Errors.NOT_LEADER_OR_FOLLOWER

    asyncio.run(run())


def test_leader_epoch_fencing_and_min_isr(open_log: Callable[..., PartitionLog]) -> None:
    p = Partition("t", 0, TOPIC_ID, 1, open_log(**{"min.insync.replicas": 2}))
    p.update(_info(1, 5, (1, 2), (1,)))
    assert p.check_leader_epoch(-1) == Errors.NONE
    assert p.check_leader_epoch(5) == Errors.NONE
    assert p.check_leader_epoch(4) == Errors.FENCED_LEADER_EPOCH
    assert p.check_leader_epoch(6) == Errors.UNKNOWN_LEADER_EPOCH
    with pytest.raises(KafkaError) as too_few:
        _append(p, acks=-1)
    assert too_few.value.code == Errors.NOT_ENOUGH_REPLICAS
    assert _append(p, acks=1) == 0  # min.insync.replicas binds acks=all only


def test_a_new_leader_keeps_its_high_watermark_within_the_log(
    open_log: Callable[..., PartitionLog],
) -> None:
    plog = open_log()
    plog.append_as_leader(build_simple_batch([b"a"] * 4, timestamp=NOW), 0, NOW)
    p = Partition("t", 0, TOPIC_ID, 1, plog, high_watermark=99)
    p.update(_info(1, 1, (1, 2), (1, 2)))
    assert p.high_watermark == 4  # never past the log end
    p = Partition("t", 0, TOPIC_ID, 1, plog, high_watermark=2)
    p.update(_info(1, 1, (1, 2), (1, 2)))
    assert p.high_watermark == 2  # the follower has not confirmed more


def test_a_fetch_waiter_is_woken_by_an_append_and_leaves_nothing_behind(
    partition: Partition,
) -> None:
    async def run() -> None:
        partition.update(_info(1, 0, (1,), (1,)))
        loop = asyncio.get_running_loop()
        # An idle partition in a long-polling session: thousands of waits that time out must
        # not pile up waiters on it.
        for _ in range(1000):
            timed_out: asyncio.Future[None] = loop.create_future()
            partition.add_data_waiter(timed_out)
            partition.remove_data_waiter(timed_out)
        assert partition.waiting_fetches == 0
        woken: asyncio.Future[None] = loop.create_future()
        partition.add_data_waiter(woken)
        _append(partition)
        assert woken.done() and partition.waiting_fetches == 0

    asyncio.run(run())


def test_a_followers_long_poll_wakes_on_an_append_a_consumers_on_an_hw_move(
    partition: Partition,
) -> None:
    async def run() -> None:
        partition.update(_info(1, 0, (1, 2), (1, 2)))
        loop = asyncio.get_running_loop()
        follower: asyncio.Future[None] = loop.create_future()
        consumer: asyncio.Future[None] = loop.create_future()
        partition.add_data_waiter(follower, follower=True)
        partition.add_data_waiter(consumer)
        _append(partition)  # the HW stays: follower 2 has not fetched it
        assert follower.done() and not consumer.done()
        partition.record_follower_fetch(2, 3, 0, -1)
        assert partition.high_watermark == 3 and consumer.done()
        assert partition.waiting_fetches == 0

    asyncio.run(run())


def test_a_leader_again_forgets_its_followers_positions(partition: Partition) -> None:
    """Follower 2 was at offset 5 under epoch 0. Broker 1 follows in epoch 1 (its HW falls
    back to 3, as a follower's HW is min(the leader's HW, its own end)) and leads again in
    epoch 2: until 2 fetches again nothing says it still has offsets 3-4."""
    partition.update(_info(1, 0, (1, 2), (1, 2)))
    _append(partition, 5)
    partition.record_follower_fetch(2, 5, 0, -1)
    assert partition.high_watermark == 5
    partition.update(_info(2, 1, (1, 2), (1, 2)))
    partition.high_watermark = 3
    partition.update(_info(1, 2, (1, 2), (1, 2)))
    assert partition.high_watermark == 3
    follower = partition.follower(2)
    assert follower is not None and follower.log_end_offset == -1
    partition.record_follower_fetch(2, 5, 0, -1)
    assert partition.high_watermark == 5


def test_acks_all_after_the_isr_fell_below_min_isr(open_log: Callable[..., PartitionLog]) -> None:
    async def run() -> None:
        p = Partition("t", 0, TOPIC_ID, 1, open_log(**{"min.insync.replicas": 2}))
        p.update(_info(1, 0, (1, 2), (1, 2)))
        _append(p, 3, acks=-1)
        p.record_follower_fetch(2, 3, 0, -1)
        assert p.wait_for_acks(3) is None
        # the ISR shrinks to the leader alone: what is already below the HW is written but
        # no longer on min.insync.replicas replicas
        p.update(PartitionInfo(TOPIC_ID, 0, (1, 2), (1,), 1, 0, 1))
        done = p.wait_for_acks(3)
        assert done is not None
        with pytest.raises(KafkaError) as after:
            await done
        assert after.value.code == Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        with pytest.raises(KafkaError) as before:
            _append(p, acks=-1)
        assert before.value.code == Errors.NOT_ENOUGH_REPLICAS
        assert p.log.log_end_offset == 3  # nothing written

    asyncio.run(run())


def test_isr_updates_go_to_the_manager_and_commit_on_the_reply(partition: Partition) -> None:
    sent: list[Any] = []
    partition.submit_isr_update = lambda p, u: sent.append(u)
    fenced = {2: True}
    partition.broker = lambda b: BrokerInfo(b, 10 + b, uuid.uuid4(), (), None, fenced.get(b, False))
    partition.update(_info(1, 0, (1, 2), (1,)))
    _append(partition, 4)
    partition.record_follower_fetch(2, 4, 0, 12)
    assert not sent  # a fenced broker never joins
    fenced[2] = False
    partition.record_follower_fetch(2, 4, 0, 12)
    # the HW is at 4 already; 2 is at the HW and the start of epoch 0: it may join
    assert len(sent) == 1 and sent[0].new_isr_with_epochs == ((1, 11), (2, 12))
    assert partition.maximal_isr == (1, 2) and partition.isr == (1,)
    partition.on_isr_reply(sent[0], Errors.NONE, leader_epoch=0, partition_epoch=1, isr=(1, 2))
    assert partition.isr == (1, 2) and partition.partition_epoch == 1


def test_a_quorum_acks_leader_marks_its_epoch_and_commits_what_it_inherited(
    open_log: Callable[..., PartitionLog],
) -> None:
    """KIP-250: a new leader writes a LEADER_CHANGE control batch at its epoch's start; the
    records it inherited become committed with it once Q replicas have the marker (Raft's
    rule), with no client write needed. An ordinary topic writes nothing."""
    plog = open_log(**{"quorum.required.acks": 2})
    p = Partition("t", 0, TOPIC_ID, 1, plog)
    p.update(_info(1, 3, (1, 2, 3), (1, 2, 3)))
    assert plog.log_end_offset == 1  # the marker of epoch 3
    header = read_header(plog.read(0, 1 << 20).records, 0)
    assert header.is_control and header.partition_leader_epoch == 3
    for _ in range(2):
        _append(p, count=2, acks=-1)
    p.update(_info(2, 4, (1, 2, 3), (1, 2, 3)))  # follower, then leader again in epoch 5
    p.update(_info(1, 5, (1, 2, 3), (1, 2, 3)))
    assert plog.log_end_offset == 6 and p.high_watermark < 6
    p.record_follower_fetch(2, 5, 0, -1)  # 2 has everything but the new marker
    assert p.high_watermark < 5
    p.record_follower_fetch(2, 6, 0, -1)
    assert p.high_watermark == 6


def test_an_ordinary_leader_writes_no_marker(partition: Partition) -> None:
    partition.update(_info(1, 3, (1, 2, 3), (1, 2, 3)))
    assert partition.log.log_end_offset == 0
