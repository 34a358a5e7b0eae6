"""The controller over a quorum of one: operations are committed (fsynced) before they answer,
the node's image hears of them through its loader, replaying the log (after a clean stop or a
crash) rebuilds the same image, and broker registration, heartbeats, fencing and controlled
shutdown follow KIP-631."""

from __future__ import annotations

import asyncio
import errno
import os
import random
import uuid
from pathlib import Path
from typing import Any

import pytest

from brook.config.server import parse_server_config
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata import records as rec
from brook.metadata.controller import ConfigOp, CreateTopicSpec, OpType
from brook.metadata.controller_api import (
    BrokerHeartbeat,
    BrokerRegistration,
    ControllerError,
)
from brook.metadata.image import MetadataImage, PartitionChanged, TopicRemoved
from brook.metadata.loader import MetadataLoader
from brook.metadata.quorum import LocalQuorum, StorageError
from brook.metadata.quorum_controller import QuorumController
from brook.metadata.records import ConfigResourceType, Endpoint, encode
from brook.protocol.errors import Errors, KafkaError

CONFIG = LogConfig.from_topic_config({"segment.bytes": 1000})
SERVER = parse_server_config({"broker.session.timeout.ms": "9000"})
EP = (Endpoint("PLAINTEXT", "127.0.0.1", 9092),)


class Node:
    """A quorum of one with its loader and controller, on a clock the test moves."""

    def __init__(self, directory: Path, clean: bool = True, server: Any = SERVER) -> None:
        self.now = 1_000_000
        self.log = PartitionLog.open(directory, CONFIG, had_clean_shutdown=clean)
        self.quorum = LocalQuorum(self.log, 1, lambda: self.now)
        self.loader = MetadataLoader()
        self.changes: list[Any] = []
        self.loader.add_publisher(self.changes.extend)
        self.quorum.register_listener(self.loader)
        self.controller = QuorumController(
            1, "cluster-1", self.quorum, self.loader, server, lambda: self.now, random.Random(7)
        )

    def start(self) -> None:
        self.quorum.start()

    async def register(self, broker_id: int, incarnation: uuid.UUID | None = None) -> int:
        reg = BrokerRegistration(broker_id, "cluster-1", incarnation or uuid.uuid4(), EP)
        return (await self.controller.register_broker(reg)).value

    async def heartbeat(self, broker_id: int, epoch: int, **kw: Any) -> Any:
        hb = BrokerHeartbeat(
            broker_id,
            epoch,
            kw.pop("offset", self.loader.applied_offset),
            kw.pop("want_fence", False),
            kw.pop("want_shutdown", False),
        )
        return await self.controller.broker_heartbeat(hb)


def _snapshot(image: MetadataImage) -> Any:
    return (
        image.brokers,
        {name: (t.topic_id, t.partitions) for name, t in image.topics.items()},
        image.configs,
        image.next_producer_id,
        image.offset,
    )


async def _populate(node: Node) -> None:
    epoch = await node.register(1)
    assert not (await node.heartbeat(1, epoch)).is_fenced
    c = node.controller
    created = await c.create_topics(
        [
            CreateTopicSpec("orders", 3, 1, configs={"retention.ms": "1000"}),
            CreateTopicSpec("gone"),
        ],
        False,
    )
    assert all(r.ok for r in created.value)
    # the answer comes once the records are committed and the node's image has them
    assert node.loader.applied_offset >= created.offset and "orders" in node.loader.image.topics
    ops = [ConfigOp("segment.ms", OpType.SET, "5000")]
    await c.alter_configs([(ConfigResourceType.TOPIC, "orders", ops)], True, False)
    await c.create_partitions([("orders", 4, None)], False)
    await c.delete_topics(["gone"], [None])
    for _ in range(30):  # enough records to roll the metadata log's segments
        await c.allocate_producer_ids(1, epoch)


@pytest.mark.parametrize("clean", [True, False])
def test_replay_rebuilds_the_image(tmp_path: Path, clean: bool) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    node = Node(directory)

    async def run() -> None:
        node.start()
        await _populate(node)
        await node.quorum.drain()

    asyncio.run(run())
    image = node.loader.image
    assert sorted(image.topics) == ["orders"] and len(image.topics["orders"].partitions) == 4
    assert image.topic_configs("orders") == {"retention.ms": "1000", "segment.ms": "5000"}
    assert image.next_producer_id == 30 * 1000
    assert sum(isinstance(c, PartitionChanged) for c in node.changes) == 5
    assert sum(isinstance(c, TopicRemoved) for c in node.changes) == 1
    assert len(node.log.segments()) > 1
    # every commit was fsynced before it was published: nothing is left to flush
    assert node.log.recovery_point == node.log.log_end_offset
    if clean:
        node.log.close()
    else:
        node.log.close_files()  # as after kill -9: no checkpoint, no snapshot
    again = Node(directory, clean=clean)
    try:
        again.start()
        assert _snapshot(again.loader.image) == _snapshot(image)
        assert again.controller.active
    finally:
        again.log.close_files()


def test_a_record_the_node_cannot_apply_is_skipped_not_fatal(tmp_path: Path) -> None:
    node = Node(tmp_path / "__cluster_metadata-0")

    async def run() -> None:
        node.start()
        # bytes that are no metadata record, then a partition of a topic that does not exist
        node.quorum.append(node.quorum.epoch, [b"\x01\x7f\x00garbage"])
        from brook.metadata.records import PartitionRecord

        node.quorum.append(
            node.quorum.epoch, [encode(PartitionRecord(uuid.uuid4(), 0, (1,), (1,), 1))]
        )
        await node.quorum.drain()
        await node.register(1)

    asyncio.run(run())
    assert node.loader.skipped == 2 and 1 in node.loader.image.brokers
    node.log.close()
    again = Node(tmp_path / "__cluster_metadata-0")
    again.start()
    assert again.loader.skipped == 2 and 1 in again.loader.image.brokers
    again.log.close()


def test_registration_fencing_and_unfencing(tmp_path: Path) -> None:
    node = Node(tmp_path / "__cluster_metadata-0")

    async def run() -> None:
        node.start()
        epoch = await node.register(1)
        # a new registration is fenced; its epoch is the offset of its record
        assert node.loader.image.brokers[1].fenced and epoch == node.loader.applied_offset
        # not caught up yet: stays fenced
        reply = await node.heartbeat(1, epoch, offset=epoch - 1)
        assert reply.is_fenced and not reply.is_caught_up
        reply = await node.heartbeat(1, epoch)
        assert not reply.is_fenced and reply.is_caught_up
        assert not node.loader.image.brokers[1].fenced
        with pytest.raises(ControllerError) as stale:
            await node.heartbeat(1, epoch + 100)
        assert stale.value.error_code == Errors.STALE_BROKER_EPOCH
        # the same broker id with another incarnation while its session lives: refused
        with pytest.raises(ControllerError) as dup:
            await node.register(1)
        assert dup.value.error_code == Errors.DUPLICATE_BROKER_REGISTRATION
        await node.controller.create_topics([CreateTopicSpec("t", 2, 1)], False)
        assert node.loader.image.partition("t", 0).leader == 1
        # silence past the session timeout: the controller fences it and its partitions lose
        # their leader (the ISR keeps its last member)
        node.now += 9001
        assert node.controller.heartbeats.stale_broker(node.now) == 1
        for _ in range(100):
            if node.loader.image.brokers[1].fenced:
                break
            await asyncio.sleep(0.05)
        info = node.loader.image.partition("t", 0)
        assert node.loader.image.brokers[1].fenced and info.leader == -1 and info.isr == (1,)
        leader_epoch = info.leader_epoch
        # back: its next heartbeat unfences it, and it leads its partitions again
        reply = await node.heartbeat(1, epoch)
        assert not reply.is_fenced
        info = node.loader.image.partition("t", 0)
        assert info.leader == 1 and info.leader_epoch == leader_epoch + 1
        # a new incarnation (a restart) is refused while the old session lives, then gets a
        # new epoch
        node.now += 9001
        assert await node.register(1) > epoch

    asyncio.run(run())
    node.log.close()


def test_controlled_shutdown_waits_for_leaderships_to_move(tmp_path: Path) -> None:
    node = Node(tmp_path / "__cluster_metadata-0")

    async def run() -> None:
        node.start()
        e1, e2 = await node.register(1), await node.register(2)
        await node.heartbeat(1, e1)
        await node.heartbeat(2, e2)
        assignments = {0: [1, 2], 1: [2, 1]}
        spec = CreateTopicSpec("t", assignments=assignments)
        await node.controller.create_topics([spec], False)
        reply = await node.heartbeat(1, e1, want_shutdown=True)
        # leaderships moved in the same step; broker 2 has not seen that yet
        assert not reply.should_shutdown
        image = node.loader.image
        assert image.brokers[1].in_controlled_shutdown
        assert image.partition("t", 0).leader == 2 and image.partition("t", 0).isr == (2,)
        assert image.partition("t", 1).isr == (2,)
        await node.heartbeat(2, e2)  # broker 2 reports it has caught up
        reply = await node.heartbeat(1, e1, want_shutdown=True)
        assert reply.should_shutdown and reply.is_fenced

    asyncio.run(run())
    node.log.close()


def test_replay_skips_what_it_cannot_apply(tmp_path: Path) -> None:
    """A metadata log holding records an older Brook let a client commit (a topic named
    after the metadata log itself) or that cannot apply at all: they are logged and skipped,
    and the rest of the log replays."""
    directory = tmp_path / "__cluster_metadata-0"
    log = PartitionLog.open(directory, CONFIG)
    reserved, unknown, orders = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    records: list[Any] = [
        rec.TopicRecord("orders", orders),
        rec.PartitionRecord(orders, 0, (1,), (1,), 1),
        rec.TopicRecord("__cluster_metadata", reserved),
        rec.PartitionRecord(reserved, 0, (1,), (1,), 1),
        rec.ConfigRecord(ConfigResourceType.TOPIC, "__cluster_metadata", "retention.ms", "1"),
        rec.PartitionChangeRecord(reserved, 0, leader=1),
        rec.PartitionRecord(unknown, 0, (1,), (1,), 1),  # no such topic
    ]
    values = [rec.encode(r) for r in records]
    values.insert(4, b"{not json")
    values.append(rec.encode(rec.TopicRecord("later", uuid.uuid4())))
    quorum = LocalQuorum(log, 1)
    quorum.append(quorum.epoch, values)
    log.close()
    node = Node(directory)
    try:
        node.start()
        image = node.loader.image
        assert sorted(image.topics) == ["later", "orders"]
        assert reserved not in image.topics_by_id and unknown not in image.topics_by_id
        assert image.topic_configs("__cluster_metadata") == {}
        changed = [c.topic for c in node.changes if isinstance(c, PartitionChanged)]
        assert changed == ["orders"] and node.loader.skipped == 6
        assert image.offset == len(values) - 1
    finally:
        node.log.close_files()


def test_a_storage_error_commits_nothing_and_fails_what_follows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "__cluster_metadata-0"
    node = Node(directory)

    async def run() -> None:
        node.start()
        epoch = await node.register(1)
        await node.heartbeat(1, epoch)
        await node.quorum.drain()
        end = node.log.log_end_offset
        real_write = os.write

        def torn(fd: int, parts: list[bytes]) -> int:
            real_write(fd, b"".join(parts)[:20])
            raise OSError(errno.ENOSPC, "No space left on device")

        with monkeypatch.context() as patch:
            patch.setattr(os, "writev", torn)
            with pytest.raises(ControllerError) as failed:
                await node.controller.create_topics([CreateTopicSpec("t")], False)
        assert failed.value.error_code == Errors.KAFKA_STORAGE_ERROR
        assert "No space left on device" in str(failed.value)
        assert "t" not in node.loader.image.topics and node.log.log_end_offset == end
        # nothing is committed after the failure either, with room again
        for attempt in (
            node.controller.create_topics([CreateTopicSpec("u")], False),
            node.controller.allocate_producer_ids(1, epoch),
        ):
            with pytest.raises(ControllerError) as later:
                await attempt
            assert later.value.error_code == Errors.KAFKA_STORAGE_ERROR
        assert node.log.log_end_offset == end

    asyncio.run(run())
    node.log.close_files()
    again = Node(directory, clean=False)
    try:
        again.start()
        assert again.loader.image.topics == {} and 1 in again.loader.image.brokers
    finally:
        again.log.close_files()


def test_logs_are_prepared_before_the_append_and_undone_when_it_fails(tmp_path: Path) -> None:
    node = Node(tmp_path / "__cluster_metadata-0")
    calls: list[str] = []

    def preparer(records: Any) -> Any:
        calls.append(f"prepare {len(records)} at {node.log.log_end_offset}")
        if any(isinstance(r, rec.TopicRecord) and r.name == "refused" for r in records):
            raise KafkaError(Errors.KAFKA_STORAGE_ERROR, "cannot create its logs")
        return lambda: calls.append("undo")

    async def run() -> None:
        node.start()
        epoch = await node.register(1)
        await node.heartbeat(1, epoch)
        node.controller.set_preparer(preparer)
        end = node.log.log_end_offset
        # all or nothing: the request's other topic is not committed either
        with pytest.raises(ControllerError) as failed:
            await node.controller.create_topics(
                [CreateTopicSpec("ok"), CreateTopicSpec("refused")], False
            )
        assert failed.value.error_code == Errors.KAFKA_STORAGE_ERROR
        assert node.log.log_end_offset == end and node.loader.image.topics == {}
        done = await node.controller.create_topics([CreateTopicSpec("ok")], False)
        assert done.value[0].ok and "ok" in node.loader.image.topics
        assert calls == [f"prepare 4 at {end}", f"prepare 2 at {end}"]

        def failing_append(epoch: int, values: list[bytes]) -> int:
            raise StorageError("metadata log offline")

        node.quorum.append = failing_append  # type: ignore[method-assign]
        with pytest.raises(ControllerError) as late:
            await node.controller.create_topics([CreateTopicSpec("late")], False)
        assert late.value.error_code == Errors.KAFKA_STORAGE_ERROR
        assert calls[-1] == "undo" and "late" not in node.loader.image.topics

    asyncio.run(run())
    node.log.close_files()


def test_a_restarted_node_registers_its_own_broker_at_once(tmp_path: Path) -> None:
    """A new active controller keeps every broker's registration alive for a session
    timeout (a failover must not fence anyone), except the broker of its own node when the
    process has just started: that one's old incarnation is gone with the old process."""
    directory = tmp_path / "__cluster_metadata-0"
    node = Node(directory)

    async def first_life() -> None:
        node.start()
        for broker_id in (1, 2):
            await node.heartbeat(broker_id, await node.register(broker_id))
        await node.quorum.drain()

    asyncio.run(first_life())
    node.log.close()
    again = Node(directory)

    async def second_life() -> None:
        again.start()
        assert await again.register(1) > 0  # this node's broker, restarted with it
        with pytest.raises(ControllerError) as dup:
            await again.register(2)  # another broker whose session may still be alive
        assert dup.value.error_code == Errors.DUPLICATE_BROKER_REGISTRATION
        again.now += 9001
        assert await again.register(2) > 0

    asyncio.run(second_life())
    again.log.close()


def test_leaders_are_balanced_when_the_check_is_due(tmp_path: Path) -> None:
    # sessions outlast the simulated wait for the check (300 s by default)
    server = parse_server_config({"broker.session.timeout.ms": "3600000"})
    node = Node(tmp_path / "__cluster_metadata-0", server=server)
    interval_ms = int(server["leader.imbalance.check.interval.seconds"]) * 1000

    async def wait(what: str, check: Any) -> None:
        for _ in range(200):
            if check():
                return
            await asyncio.sleep(0.02)
        raise AssertionError(f"{what} did not happen")

    async def run() -> None:
        node.start()
        e1, e2 = await node.register(1), await node.register(2)
        await node.heartbeat(1, e1)
        await node.heartbeat(2, e2)
        spec = CreateTopicSpec("t", assignments={0: [1, 2]})
        await node.controller.create_topics([spec], False)
        # reordering the replicas makes 2 the preferred leader; 1 still leads
        await node.controller.alter_partition_reassignments([("t", 0, [2, 1])])
        assert node.loader.image.partition("t", 0).replicas == (2, 1)
        assert node.loader.image.partition("t", 0).leader == 1
        balancer = node.controller.balancer
        await wait("a check scheduled", lambda: balancer.due_ms is not None)
        assert balancer.due_ms == node.now + interval_ms
        node.now += interval_ms - 1
        assert not balancer.is_due(node.now)
        node.now += 1
        await wait("2 elected", lambda: node.loader.image.partition("t", 0).leader == 2)
        assert balancer.due_ms is None

    asyncio.run(run())
    node.log.close()
