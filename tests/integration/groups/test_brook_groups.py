"""Brook's group consumer against a Brook broker: a mixed group with kafka-python members,
KIP-429 cooperative rebalancing (kept partitions are never revoked), KIP-345 static members
coming back without a rebalance, max.poll.interval.ms expiry, and the errors a member sees
(fenced instance, kicked-out commit, oversized commit metadata)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from group_processes import PARTITIONS, ConsumerProcess, produce_round, split
from group_support import describe, group_assignment, until
from rawclient import RawClient, create_topic
from support import BrookProcess

from brook.client.cluster import TopicPartition
from brook.client.consumer import AsyncConsumer, OffsetAndMetadata
from brook.client.consumer.errors import CommitFailedError
from brook.protocol.errors import Errors, KafkaError

TIMEOUT = 30.0


class Recorder:
    """A rebalance listener that keeps every call in order."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, tps: list[TopicPartition]) -> None:
        self.calls.append(("revoked", set(tps)))

    def on_partitions_assigned(self, tps: list[TopicPartition]) -> None:
        self.calls.append(("assigned", set(tps)))

    def on_partitions_lost(self, tps: list[TopicPartition]) -> None:
        self.calls.append(("lost", set(tps)))

    def of(self, kind: str) -> set[TopicPartition]:
        return set().union(*(tps for k, tps in self.calls if k == kind))


@pytest.fixture
def topic(groups_brook: BrookProcess) -> str:
    name = f"bt-{uuid.uuid4().hex[:8]}"
    with RawClient(groups_brook.bootstrap) as c:
        create_topic(c, name, partitions=PARTITIONS)
    return name


def config(broker: BrookProcess, group: str, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": broker.bootstrap,
        "group.id": group,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 3000,
        "heartbeat.interval.ms": 300,
        "metadata.max.age.ms": 1000,
        **extra,
    }


class Member:
    """An AsyncConsumer polled by a task of its own, like an application's poll loop."""

    def __init__(self, cfg: dict[str, Any], topic: str) -> None:
        self.consumer = AsyncConsumer(cfg)
        self.listener = Recorder()
        self.topic = topic
        self.records: list[tuple[int, int]] = []
        self.paused = asyncio.Event()
        self.error: BaseException | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> Member:
        await self.consumer.subscribe([self.topic], listener=self.listener)
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def _run(self) -> None:
        while True:
            if self.paused.is_set():
                await asyncio.sleep(0.05)
                continue
            try:
                for r in await self.consumer.poll(100):
                    self.records.append((r.partition, r.offset))
            except KafkaError as exc:
                self.error = exc
                return

    async def assignment(self) -> set[TopicPartition]:
        return await self.consumer.assignment()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.consumer.close()


@asynccontextmanager
async def members(*made: Member) -> AsyncIterator[tuple[Member, ...]]:
    try:
        for m in made:
            await m.start()
        yield made
    finally:
        for m in made:
            await m.stop()


async def eventually(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    deadline = asyncio.get_running_loop().time() + TIMEOUT
    last = None
    while asyncio.get_running_loop().time() < deadline:
        last = await check()
        if last:
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


async def split_between(*ms: Member) -> bool:
    owned = [await m.assignment() for m in ms]
    everything = [tp for tps in owned for tp in tps]
    return all(owned) and len(everything) == PARTITIONS and len(set(everything)) == PARTITIONS


def run(coro: Awaitable[None]) -> None:
    asyncio.run(asyncio.wait_for(coro, 120))  # type: ignore[arg-type]


def test_mixed_group_of_brook_and_kafka_python(groups_brook: BrookProcess, topic: str) -> None:
    """Both default to the range assignor, so they share one group; a Brook member is killed
    (SIGKILL) and the survivors take over its partitions."""
    group = f"mixed-{uuid.uuid4().hex[:6]}"
    with RawClient(groups_brook.bootstrap) as c:
        produced = produce_round(c, topic, "a")
        procs = [
            ConsumerProcess("brook", groups_brook.bootstrap, topic, group),
            ConsumerProcess("kafka-python", groups_brook.bootstrap, topic, group),
            ConsumerProcess("brook", groups_brook.bootstrap, topic, group),
        ]
        try:
            until(lambda: split(c, group, topic, 3), 60, "three members sharing the partitions")
            assert describe(c, group).protocol_data == "range"
            consumed = lambda: set().union(*(p.values() for p in procs))  # noqa: E731
            until(lambda: produced <= consumed(), 30, "the first records")
            procs[2].kill()
            until(lambda: split(c, group, topic, 2), 30, "a rebalance after the kill")
            produced |= produce_round(c, topic, "b")
            until(lambda: produced <= consumed(), 30, "records after the rebalance")
            for p in procs[:2]:
                assert p.terminate() == 0, p.diagnostics()
        except AssertionError:
            for p in procs:
                print(f"--- stderr ---\n{p.diagnostics()}")
            raise
        finally:
            for p in procs:
                if p.proc.poll() is None:
                    p.kill()


def test_cooperative_sticky_only_moves_what_changes_hands(
    groups_brook: BrookProcess, topic: str
) -> None:
    async def main() -> None:
        group = f"coop-{uuid.uuid4().hex[:6]}"
        cfg = config(groups_brook, group, **{"partition.assignment.strategy": "cooperative-sticky"})
        first = Member(cfg, topic)
        async with members(first):
            await eventually(lambda: split_between(first), "the first member owning everything")
            second = Member(cfg, topic)
            async with members(second):
                await eventually(lambda: split_between(first, second), "a cooperative split")
                kept = await first.assignment()
                moved = await second.assignment()
                assert len(kept) == len(moved) == PARTITIONS // 2
                # The first member only ever gave up what moved to the second one.
                assert first.listener.of("revoked") == moved
                assert first.listener.of("lost") == set()
                assert ("revoked", moved) in first.listener.calls
                third = Member(cfg, topic)
                async with members(third):
                    await eventually(lambda: split_between(first, second, third), "three-way split")
                    assert (await first.assignment()) <= kept
                    assert (await second.assignment()) <= moved
                    revoked_later = first.listener.of("revoked") | second.listener.of("revoked")
                    assert revoked_later == moved | kept - (
                        (await first.assignment()) | (await second.assignment())
                    )

    run(main())


def test_static_member_comes_back_without_a_rebalance(
    groups_brook: BrookProcess, topic: str
) -> None:
    async def main() -> None:
        group = f"static-{uuid.uuid4().hex[:6]}"
        session = {"session.timeout.ms": 10000}
        a = Member(config(groups_brook, group, **session, **{"group.instance.id": "a"}), topic)
        b = Member(config(groups_brook, group, **session, **{"group.instance.id": "b"}), topic)
        async with members(b):
            await a.start()
            await eventually(lambda: split_between(a, b), "two static members")
            before = await a.assignment()
            b_calls = list(b.listener.calls)
            await a.stop()  # a static member leaves no LeaveGroup behind
            with RawClient(groups_brook.bootstrap) as c:
                assert len(describe(c, group).members) == 2
            again = Member(
                config(groups_brook, group, **session, **{"group.instance.id": "a"}), topic
            )
            async with members(again):
                await eventually(
                    lambda: _same(again.assignment(), before), "the same partitions back"
                )
                await asyncio.sleep(1.0)
                assert b.listener.calls == b_calls  # no rebalance reached the other member
                assert again.listener.of("assigned") == before

    run(main())


async def _same(got: Awaitable[set[TopicPartition]], want: set[TopicPartition]) -> bool:
    return (await got) == want


def test_a_second_member_with_the_same_instance_id_fences_the_first(
    groups_brook: BrookProcess, topic: str
) -> None:
    async def main() -> None:
        group = f"fence-{uuid.uuid4().hex[:6]}"
        cfg = config(groups_brook, group, **{"group.instance.id": "dup"})
        first, second = Member(cfg, topic), Member(cfg, topic)
        async with members(first):
            await eventually(lambda: split_between(first), "the first member joined")
            async with members(second):
                await eventually(lambda: _has_error(first), "the first member being fenced")
                assert isinstance(first.error, KafkaError)
                assert first.error.code == Errors.FENCED_INSTANCE_ID

    run(main())


async def _has_error(m: Member) -> bool:
    return m.error is not None


def test_max_poll_interval_expiry_leaves_the_group(groups_brook: BrookProcess, topic: str) -> None:
    async def main() -> None:
        group = f"slow-{uuid.uuid4().hex[:6]}"
        slow = Member(config(groups_brook, group, **{"max.poll.interval.ms": 1500}), topic)
        steady = Member(config(groups_brook, group), topic)
        async with members(slow, steady):
            await eventually(lambda: split_between(slow, steady), "two members")
            owned = await slow.assignment()
            slow.paused.set()  # stop calling poll()
            await eventually(lambda: asyncio.to_thread(_one_member, groups_brook, group), "a leave")
            await eventually(lambda: split_between(steady), "the steady member owning all")
            # Its commit is refused: the partitions belong to someone else now.
            with pytest.raises(CommitFailedError):
                await slow.consumer.commit({next(iter(owned)): 1})
            slow.paused.clear()
            await eventually(lambda: split_between(slow, steady), "the slow member rejoining")
            assert slow.listener.of("lost") == owned

    run(main())


def _one_member(broker: BrookProcess, group: str) -> bool:
    with RawClient(broker.bootstrap) as c:
        plan = group_assignment(c, group)
    return plan is not None and len(plan) == 1


def test_commits_with_metadata_and_oversized_metadata(
    groups_brook: BrookProcess, topic: str
) -> None:
    async def main() -> None:
        group = f"meta-{uuid.uuid4().hex[:6]}"
        m = Member(config(groups_brook, group, **{"enable.auto.commit": False}), topic)
        async with members(m):
            await eventually(lambda: split_between(m), "the member joined")
            tp = TopicPartition(topic, 0)
            await m.consumer.commit({tp: OffsetAndMetadata(3, "checkpoint-a")})
            assert (await m.consumer.committed([tp]))[tp] == OffsetAndMetadata(3, "checkpoint-a")
            with pytest.raises(KafkaError) as raised:
                await m.consumer.commit({tp: OffsetAndMetadata(4, "x" * 5000)})
            assert raised.value.code == Errors.OFFSET_METADATA_TOO_LARGE
            assert (await m.consumer.committed([tp]))[tp] == OffsetAndMetadata(3, "checkpoint-a")

    run(main())


def test_pattern_subscription_follows_new_topics(groups_brook: BrookProcess) -> None:
    async def main() -> None:
        prefix = f"pat-{uuid.uuid4().hex[:6]}"
        with RawClient(groups_brook.bootstrap) as c:
            create_topic(c, f"{prefix}-a", partitions=2)
        consumer = AsyncConsumer(config(groups_brook, f"{prefix}-group"))
        try:
            await consumer.subscribe(f"^{prefix}-.*")

            async def owns(count: int) -> bool:
                await consumer.poll(100)
                return len(await consumer.assignment()) == count

            await eventually(lambda: owns(2), "the first matching topic")
            with RawClient(groups_brook.bootstrap) as c:
                create_topic(c, f"{prefix}-b", partitions=1)
            await eventually(lambda: owns(3), "the topic created later")
            assert await consumer.subscription() == {f"{prefix}-a", f"{prefix}-b"}
        finally:
            await consumer.close()

    run(main())


def test_auto_commit_in_the_background_and_on_close(groups_brook: BrookProcess, topic: str) -> None:
    async def main() -> None:
        group = f"auto-{uuid.uuid4().hex[:6]}"
        with RawClient(groups_brook.bootstrap) as c:
            produce_round(c, topic, "a")  # 10 records in each partition
        cfg = config(groups_brook, group, **{"auto.commit.interval.ms": 200})
        m = Member(cfg, topic)
        async with members(m):
            await eventually(lambda: _count(m, PARTITIONS * 10), "every record")
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]

            async def all_committed() -> bool:
                got = await m.consumer.committed(tps)
                return all(v is not None and v.offset == 10 for v in got.values())

            await eventually(all_committed, "auto-commits at the end of every partition")
        # A new member of the group starts where the commits are: nothing is read again.
        again = Member(cfg, topic)
        async with members(again):
            await eventually(lambda: split_between(again), "the second member joined")
            await asyncio.sleep(0.5)
            assert again.records == []

    run(main())


async def _count(m: Member, n: int) -> bool:
    return len(m.records) >= n


def test_members_ride_out_a_broker_kill(own_groups_brook: BrookProcess) -> None:
    """The coordinator is killed (-9) and restarted under two members: they find it again,
    carry on in the generation the broker reloaded from ``__consumer_offsets`` (no rebalance
    reaches their listeners), and read what is produced afterwards."""

    async def main() -> None:
        broker = own_groups_brook
        name = f"ride-{uuid.uuid4().hex[:6]}"
        with RawClient(broker.bootstrap) as c:
            create_topic(c, name, partitions=PARTITIONS)
        cfg = config(broker, f"{name}-group", **{"session.timeout.ms": 15000})
        a, b = Member(cfg, name), Member(cfg, name)
        async with members(a, b):
            await eventually(lambda: split_between(a, b), "two members")
            calls = (list(a.listener.calls), list(b.listener.calls))
            await asyncio.to_thread(broker.restart, False)
            with RawClient(broker.bootstrap) as c:
                produced = produce_round(c, name, "after")
            await eventually(lambda: _read(a, b, count=len(produced)), "the new records")
            assert (a.listener.calls, b.listener.calls) == calls
            assert await split_between(a, b)

    run(main())


async def _read(*ms: Member, count: int) -> bool:
    return sum(len(m.records) for m in ms) >= count
