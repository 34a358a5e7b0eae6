"""The group-coordinator hook: a coordinator plugged in through ``coordinator_factory`` is
polled before each fetch round, installs the assignment of a topic or pattern subscription,
gives starting positions from committed offsets, receives commits, and is closed."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from test_fetcher_scripted import T0, T1, FakeCluster, poll_until, run, two_brokers

from brook.client.cluster import TopicPartition
from brook.client.consumer import AsyncConsumer, CoordinatorContext, OffsetAndMetadata
from brook.client.consumer.coordinator import CommitCallback, consumed_offsets
from brook.client.consumer.subscription import SubscriptionState


class RecordingCoordinator:
    """Assigns every partition of the subscribed topics; committed offsets from a dict."""

    def __init__(self, context: CoordinatorContext) -> None:
        self.context = context
        self.polls = 0
        self.committed_offsets: dict[TopicPartition, OffsetAndMetadata] = {
            T0: OffsetAndMetadata(40, "m")
        }
        self.commits: list[dict[TopicPartition, OffsetAndMetadata]] = []
        self.closed_with: int | None = None

    async def poll(self, now_ms: float, timeout_ms: float) -> None:
        self.polls += 1
        subs = self.context.subscriptions
        cluster = self.context.network.cluster
        wanted = [
            TopicPartition(t, p) for t in sorted(subs.topics) for p in cluster.partitions_for(t)
        ]
        if wanted != subs.assignment:
            subs.assign_from_subscribed(wanted)

    async def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return {tp: self.committed_offsets.get(tp) for tp in partitions}

    async def commit_sync(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int
    ) -> None:
        self.commits.append(dict(offsets))

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback | None = None,
    ) -> None:
        self.commits.append(dict(offsets))
        if callback is not None:
            callback(offsets, None)

    async def on_unsubscribe(self) -> None:
        self.context.subscriptions.assign_from_subscribed([])

    async def on_close(self, timeout_ms: int) -> None:
        self.closed_with = timeout_ms


def test_a_plugged_in_coordinator_drives_subscription_positions_and_commits() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        b1, b2 = await two_brokers(cluster)
        made: list[RecordingCoordinator] = []

        def factory(context: CoordinatorContext) -> RecordingCoordinator:
            made.append(RecordingCoordinator(context))
            return made[-1]

        config: dict[str, Any] = {
            "bootstrap.servers": b1.address,
            "group.id": "g",
            "auto.offset.reset": "earliest",
        }
        consumer = AsyncConsumer(config, coordinator_factory=factory)
        await consumer.subscribe(["t"])
        (coordinator,) = made
        assert await consumer.subscription() == {"t"}
        got = await poll_until(consumer, 12)
        assert coordinator.polls >= 1
        assert await consumer.assignment() == {T0, T1}
        first = {r.partition: r.offset for r in reversed(got)}
        assert first == {0: 40, 1: 0}  # committed offset for t-0; no commit: earliest for t-1
        await consumer.commit()
        (positions,) = coordinator.commits
        assert positions[T0].offset == await consumer.position(T0)
        await consumer.commit({T1: 5}, asynchronous=True)
        assert coordinator.commits[-1] == {T1: OffsetAndMetadata(5)}
        assert await consumer.committed([T0, T1]) == {T0: OffsetAndMetadata(40, "m"), T1: None}
        await consumer.close(timeout_ms=1234)
        assert coordinator.closed_with == 1234
        await b1.__aexit__(None, None, None)
        await b2.__aexit__(None, None, None)

    run(main())


def test_a_pattern_subscription_matches_topics_from_metadata() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        b1, b2 = await two_brokers(cluster)
        config = {"bootstrap.servers": b1.address, "group.id": "g"}
        consumer = AsyncConsumer(config, coordinator_factory=RecordingCoordinator)
        await consumer.subscribe("^t$")
        assert consumer.network.all_topics
        await consumer.poll(100)
        await asyncio.sleep(0)
        await consumer.poll(100)
        assert await consumer.subscription() == {"t"}
        assert await consumer.assignment() == {T0, T1}
        await consumer.close()
        await b1.__aexit__(None, None, None)
        await b2.__aexit__(None, None, None)

    run(main())


def test_consumed_offsets_leave_out_partitions_waiting_for_a_position() -> None:
    subs = SubscriptionState()
    a0, a1, a2 = (TopicPartition("a", p) for p in range(3))
    subs.assign_from_user([a0, a1, a2])
    subs.seek(a0, 5)
    subs.seek(a1, 9)
    subs.request_reset(a1)  # seek_to_beginning: the old position is not the one to commit
    assert consumed_offsets(subs) == {a0: OffsetAndMetadata(5)}
