"""The broker's AlterPartition sender against a real controller on a quorum of one: a
partition's ISR expansion goes out stamped with the broker epoch, is committed by the
controller and comes back to the partition; updates queued while one request is in flight go
together in the next; an update the controller refuses as ineligible rolls back; a request
failing as a whole is sent again."""

from __future__ import annotations

import asyncio
import random
import uuid
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from brook.broker.alter_partition_manager import AlterPartitionManager
from brook.broker.partition import Partition
from brook.config.server import parse_server_config
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata.controller import CreateTopicSpec
from brook.metadata.controller_api import (
    BrokerHeartbeat,
    BrokerRegistration,
    Committed,
    ControllerError,
    IsrChange,
    IsrChangeResult,
)
from brook.metadata.image import BrokerInfo
from brook.metadata.loader import MetadataLoader
from brook.metadata.quorum import LocalQuorum
from brook.metadata.quorum_controller import QuorumController
from brook.metadata.records import Endpoint
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch

SERVER = parse_server_config({"broker.session.timeout.ms": "9000"})
EP = (Endpoint("PLAINTEXT", "127.0.0.1", 9092),)


class CountingController:
    """The real controller, with each request it is sent recorded (and the first ``fail``
    refused as a whole, as an unreachable controller would be)."""

    def __init__(self, inner: QuorumController, fail: int = 0) -> None:
        self.inner = inner
        self.fail = fail
        self.sent: list[tuple[int, list[IsrChange]]] = []
        self.gate = asyncio.Event()  # requests wait here until the test opens it
        self.gate.set()

    async def alter_partition(
        self, broker_id: int, broker_epoch: int, changes: Sequence[IsrChange]
    ) -> Committed[list[IsrChangeResult]]:
        self.sent.append((broker_epoch, list(changes)))
        await self.gate.wait()
        if self.fail:
            self.fail -= 1
            raise ControllerError(Errors.NOT_CONTROLLER, "no controller")
        return await self.inner.alter_partition(broker_id, broker_epoch, changes)


class Harness:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.meta = PartitionLog.open(tmp / "__cluster_metadata-0", LogConfig.from_topic_config({}))
        self.quorum = LocalQuorum(self.meta, 1, lambda: 1_000_000)
        self.loader = MetadataLoader()
        self.quorum.register_listener(self.loader)
        self.controller = QuorumController(
            1, "c", self.quorum, self.loader, SERVER, lambda: 1_000_000, random.Random(1)
        )
        self.epochs: dict[int, int] = {}
        self.logs: list[PartitionLog] = []

    async def start(self, topics: int) -> None:
        self.quorum.start()
        for b in (1, 2, 3):
            reg = BrokerRegistration(b, "c", uuid.uuid4(), EP)
            self.epochs[b] = (await self.controller.register_broker(reg)).value
        for b in (1, 2, 3):
            hb = BrokerHeartbeat(b, self.epochs[b], self.loader.applied_offset, False, False)
            await self.controller.broker_heartbeat(hb)
        specs = [CreateTopicSpec(f"t{i}", assignments={0: [1, 2, 3]}) for i in range(topics)]
        await self.controller.create_topics(specs, False)

    def partition(self, topic: str, submit: Any) -> Partition:
        info = self.loader.image.partition(topic, 0)
        assert info is not None
        plog = PartitionLog.open(self.tmp / f"{topic}-0", LogConfig.from_topic_config({}))
        self.logs.append(plog)
        p = Partition(
            topic,
            0,
            info.topic_id,
            1,
            plog,
            broker=self.loader.image.brokers.get,
            submit_isr_update=submit,
        )
        # the ISR starts without 3, as after a shrink the controller committed
        p.update(info)
        return p

    def close(self) -> None:
        for plog in self.logs:
            plog.close_files()
        self.meta.close()


async def _shrink_to_leaders(h: Harness, topics: list[str]) -> None:
    for topic in topics:
        info = h.loader.image.partition(topic, 0)
        assert info is not None
        change = IsrChange(info.topic_id, 0, info.leader_epoch, ((1, -1),), info.partition_epoch)
        await h.controller.alter_partition(1, h.epochs[1], [change])


def _catch_up(p: Partition, replica: int, epoch: int) -> None:
    p.append_as_leader(build_simple_batch([b"v"] * 2), 1, 0)
    p.record_follower_fetch(replica, p.log.log_end_offset, 0, epoch)


async def _until(check: Any) -> None:
    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("never happened")


def test_an_expansion_is_committed_and_queued_updates_go_together(tmp_path: Path) -> None:
    h = Harness(tmp_path)

    async def run() -> None:
        await h.start(topics=3)
        await _shrink_to_leaders(h, ["t0", "t1", "t2"])
        counting = CountingController(h.controller)
        manager = AlterPartitionManager(counting, 1, lambda: h.epochs[1], retry_backoff_ms=10)
        parts = [h.partition(f"t{i}", manager.submit) for i in range(3)]
        assert all(p.isr == (1,) for p in parts)
        counting.gate.clear()
        _catch_up(parts[0], 2, h.epochs[2])  # sent at once
        await _until(lambda: len(counting.sent) == 1)
        assert manager.in_flight
        _catch_up(parts[1], 2, h.epochs[2])  # these two wait for the first answer
        _catch_up(parts[2], 3, h.epochs[3])
        await asyncio.sleep(0.05)
        assert len(counting.sent) == 1
        counting.gate.set()
        await _until(lambda: all(len(p.isr) == 2 for p in parts))
        assert [len(changes) for _, changes in counting.sent] == [1, 2]
        assert all(epoch == h.epochs[1] for epoch, _ in counting.sent)
        assert counting.sent[1][1][1].new_isr == ((1, h.epochs[1]), (3, h.epochs[3]))
        for i, p in enumerate(parts):
            info = h.loader.image.partition(f"t{i}", 0)
            assert info is not None and (p.isr, p.partition_epoch) == (
                info.isr,
                info.partition_epoch,
            )

    asyncio.run(run())
    h.close()


def test_an_ineligible_replica_rolls_back_and_a_failed_request_is_sent_again(
    tmp_path: Path,
) -> None:
    h = Harness(tmp_path)

    async def run() -> None:
        await h.start(topics=2)
        await _shrink_to_leaders(h, ["t0", "t1"])
        counting = CountingController(h.controller, fail=1)
        manager = AlterPartitionManager(counting, 1, lambda: h.epochs[1], retry_backoff_ms=10)
        stale = h.partition("t0", manager.submit)
        retried = h.partition("t1", manager.submit)
        _catch_up(retried, 2, h.epochs[2])
        await _until(lambda: retried.isr == (1, 2))
        assert len(counting.sent) == 2  # refused as a whole once, then sent again
        # this broker's metadata says 3 registered again (a newer epoch) before the
        # controller's does: the controller finds 3 ineligible and the leader rolls back
        newer = h.epochs[3] + 5
        image = h.loader.image

        def view(b: int) -> BrokerInfo | None:
            info = image.brokers.get(b)
            return replace(info, broker_epoch=newer) if info and b == 3 else info

        stale.broker = view
        _catch_up(stale, 3, newer)
        state = stale.leader_state
        assert state is not None and state.pending is not None
        assert stale.maximal_isr == (1, 3)
        await _until(lambda: state.pending is None)
        assert stale.isr == (1,) and stale.maximal_isr == (1,)
        assert counting.sent[-1][1][0].new_isr == ((1, h.epochs[1]), (3, newer))

    asyncio.run(run())
    h.close()
