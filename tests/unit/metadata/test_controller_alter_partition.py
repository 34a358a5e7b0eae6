"""AlterPartition at the controller over a quorum of one: every check of Kafka's
ReplicationControlManager.alterPartition in its order, ISR changes written as
PartitionChangeRecords that bump the partition epoch (not the leader epoch), and a change that
completes a reassignment finishing it in the same record."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from brook.config.server import parse_server_config
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata.controller import CreateTopicSpec
from brook.metadata.controller_api import (
    BrokerHeartbeat,
    BrokerRegistration,
    ControllerError,
    IsrChange,
    IsrChangeResult,
)
from brook.metadata.image import PartitionInfo
from brook.metadata.loader import MetadataLoader
from brook.metadata.quorum import LocalQuorum
from brook.metadata.quorum_controller import QuorumController
from brook.metadata.records import Endpoint
from brook.protocol.errors import Errors

CONFIG = LogConfig.from_topic_config({"segment.bytes": 100_000})
SERVER = parse_server_config({"broker.session.timeout.ms": "9000"})
EP = (Endpoint("PLAINTEXT", "127.0.0.1", 9092),)


class Cluster:
    """A controller on a quorum of one, with brokers 1-4 registered and unfenced, and topic
    ``t`` partition 0 on replicas 1, 2, 3 (leader 1)."""

    def __init__(self, directory: Path) -> None:
        self.now = 1_000_000
        self.log = PartitionLog.open(directory, CONFIG)
        self.quorum = LocalQuorum(self.log, 1, lambda: self.now)
        self.loader = MetadataLoader()
        self.quorum.register_listener(self.loader)
        self.controller = QuorumController(
            1, "c", self.quorum, self.loader, SERVER, lambda: self.now, random.Random(1)
        )
        self.epochs: dict[int, int] = {}

    async def start(self) -> None:
        self.quorum.start()
        for b in (1, 2, 3, 4):
            reg = BrokerRegistration(b, "c", uuid.uuid4(), EP)
            self.epochs[b] = (await self.controller.register_broker(reg)).value
        for b in (1, 2, 3, 4):
            await self.heartbeat(b)
        spec = CreateTopicSpec("t", assignments={0: [1, 2, 3]})
        await self.controller.create_topics([spec], False)

    async def heartbeat(self, b: int, **kw: bool) -> Any:
        hb = BrokerHeartbeat(
            b,
            self.epochs[b],
            self.loader.applied_offset,
            kw.get("want_fence", False),
            kw.get("want_shutdown", False),
        )
        return await self.controller.broker_heartbeat(hb)

    @property
    def info(self) -> PartitionInfo:
        info = self.loader.image.partition("t", 0)
        assert info is not None
        return info

    def change(self, isr: tuple[int, ...], **kw: Any) -> IsrChange:
        info = self.info
        return IsrChange(
            kw.get("topic_id", info.topic_id),
            kw.get("partition", 0),
            kw.get("leader_epoch", info.leader_epoch),
            tuple((b, kw.get("epochs", {}).get(b, self.epochs[b])) for b in isr),
            kw.get("partition_epoch", info.partition_epoch),
        )

    async def alter(self, change: IsrChange, sender: int = 1) -> IsrChangeResult:
        result = await self.controller.alter_partition(sender, self.epochs[sender], [change])
        assert len(result.value) == 1
        return result.value[0]


def run(tmp_path: Path, body: Callable[[Cluster], Awaitable[None]]) -> None:
    cluster = Cluster(tmp_path / "__cluster_metadata-0")

    async def main() -> None:
        await cluster.start()
        await body(cluster)

    asyncio.run(main())
    cluster.log.close()


def test_a_shrink_and_an_expansion_bump_the_partition_epoch_only(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        before = c.info
        assert (before.leader, before.isr) == (1, (1, 2, 3))
        shrunk = await c.alter(c.change((1, 2)))
        after = c.info
        assert shrunk.error_code == Errors.NONE
        assert (shrunk.leader_id, shrunk.leader_epoch, shrunk.isr, shrunk.partition_epoch) == (
            1,
            before.leader_epoch,
            (1, 2),
            before.partition_epoch + 1,
        )
        assert (after.isr, after.leader_epoch, after.partition_epoch) == (
            (1, 2),
            before.leader_epoch,
            before.partition_epoch + 1,
        )
        grown = await c.alter(c.change((1, 2, 3)))
        assert grown.error_code == Errors.NONE and c.info.isr == (1, 2, 3)
        assert c.info.partition_epoch == before.partition_epoch + 2

    run(tmp_path, body)


def test_a_stale_broker_epoch_fails_the_whole_request(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        with pytest.raises(ControllerError) as stale:
            await c.controller.alter_partition(1, c.epochs[1] - 1, [c.change((1, 2))])
        assert stale.value.error_code == Errors.STALE_BROKER_EPOCH

    run(tmp_path, body)


def test_an_unknown_topic_id_and_an_unknown_partition(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        r = await c.alter(c.change((1, 2), topic_id=uuid.uuid4()))
        assert r.error_code == Errors.UNKNOWN_TOPIC_ID
        r = await c.alter(c.change((1, 2), partition=7))
        assert r.error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION

    run(tmp_path, body)


def test_epochs_newer_than_the_controllers_get_not_controller(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        info = c.info
        r = await c.alter(c.change((1, 2), leader_epoch=info.leader_epoch + 1))
        assert r.error_code == Errors.NOT_CONTROLLER
        r = await c.alter(c.change((1, 2), partition_epoch=info.partition_epoch + 1))
        assert r.error_code == Errors.NOT_CONTROLLER
        assert c.info == info  # nothing written

    run(tmp_path, body)


def test_an_older_leader_epoch_is_fenced(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        r = await c.alter(c.change((1, 2), leader_epoch=c.info.leader_epoch - 1))
        assert r.error_code == Errors.FENCED_LEADER_EPOCH

    run(tmp_path, body)


def test_a_sender_that_is_not_the_leader_is_an_invalid_request(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        r = await c.alter(c.change((1, 2)), sender=2)
        assert r.error_code == Errors.INVALID_REQUEST

    run(tmp_path, body)


def test_an_older_partition_epoch_is_an_invalid_update_version(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        old = c.info.partition_epoch
        assert (await c.alter(c.change((1, 2)))).error_code == Errors.NONE
        r = await c.alter(c.change((1, 2, 3), partition_epoch=old))
        assert r.error_code == Errors.INVALID_UPDATE_VERSION

    run(tmp_path, body)


@pytest.mark.parametrize(
    "isr",
    [
        (1, 2, 4),  # 4 is not a replica
        (2, 3),  # the leader is missing
        (1, 2, 2),  # a member twice
    ],
)
def test_an_isr_that_cannot_be_is_an_invalid_request(tmp_path: Path, isr: tuple[int, ...]) -> None:
    async def body(c: Cluster) -> None:
        r = await c.alter(c.change(isr))
        assert r.error_code == Errors.INVALID_REQUEST

    run(tmp_path, body)


def test_a_member_with_another_broker_epoch_is_ineligible(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        await c.alter(c.change((1, 2)))
        r = await c.alter(c.change((1, 2, 3), epochs={3: c.epochs[3] + 1}))
        assert r.error_code == Errors.INELIGIBLE_REPLICA
        # v2 sends no broker epochs: -1 skips that check
        r = await c.alter(c.change((1, 2, 3), epochs={3: -1}))
        assert r.error_code == Errors.NONE

    run(tmp_path, body)


def test_a_fenced_or_shutting_down_member_is_ineligible(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        await c.heartbeat(3, want_fence=True)
        assert c.loader.image.brokers[3].fenced and 3 not in c.info.isr
        r = await c.alter(c.change((1, 2, 3)))
        assert r.error_code == Errors.INELIGIBLE_REPLICA
        # broker 2 leads another partition, so its shutdown is a controlled one
        await c.controller.create_topics([CreateTopicSpec("u", assignments={0: [2, 1]})], False)
        await c.heartbeat(2, want_shutdown=True)
        assert c.loader.image.brokers[2].in_controlled_shutdown and c.info.isr == (1,)
        r = await c.alter(c.change((1, 2)))
        assert r.error_code == Errors.INELIGIBLE_REPLICA

    run(tmp_path, body)


def test_completing_a_reassignment_finishes_it_in_the_same_record(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        await c.controller.alter_partition_reassignments([("t", 0, [1, 2, 4])])
        moving = c.info
        assert moving.adding_replicas == (4,) and moving.removing_replicas == (3,)
        r = await c.alter(c.change((1, 2, 3, 4)))
        done = c.info
        assert r.error_code == Errors.NONE
        assert (done.replicas, done.isr, done.leader) == ((1, 2, 4), (1, 2, 4), 1)
        assert done.adding_replicas == () and done.removing_replicas == ()
        assert done.leader_epoch == moving.leader_epoch + 1  # removing replicas bumps it
        assert (r.leader_epoch, r.isr, r.partition_epoch) == (
            done.leader_epoch,
            done.isr,
            done.partition_epoch,
        )

    run(tmp_path, body)


def test_completing_a_reassignment_that_moves_the_leader_says_so(tmp_path: Path) -> None:
    async def body(c: Cluster) -> None:
        await c.controller.alter_partition_reassignments([("t", 0, [2, 3, 4])])
        r = await c.alter(c.change((1, 2, 3, 4)))
        assert r.error_code == Errors.NEW_LEADER_ELECTED
        done = c.info  # the record is written all the same
        assert (done.replicas, done.leader) == ((2, 3, 4), 2)
        assert 1 not in done.isr and done.adding_replicas == ()

    run(tmp_path, body)
