"""AsyncAdmin against scripted loopback brokers: what goes on the wire, where it goes, and how
per-item errors, controller moves and leader moves are handled."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest
from scripted_broker import DEFAULT_RANGES, Request, ScriptedBroker, metadata_response

from brook.client.admin import AdminError, AsyncAdmin, NewTopic, OffsetSpec
from brook.client.cluster import TopicPartition
from brook.protocol.api import ApiKey


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))  # type: ignore[arg-type]


RANGES = {**DEFAULT_RANGES, 2: (1, 9), 19: (2, 7)}


class FakeCluster:
    """Two scripted brokers sharing one view: node ids, controller, partition leaders."""

    def __init__(self) -> None:
        self.ports: dict[int, int] = {}
        self.controller = 1
        self.leaders = {0: 1, 1: 2}  # partition -> node of topic "t"
        self.create_errors: dict[str, int] = {}
        self.not_controller_once = False
        self.not_leader_once: set[int] = set()

    def node_of(self, broker: ScriptedBroker) -> int:
        return next(n for n, p in self.ports.items() if p == broker.port)

    def script(self, broker: ScriptedBroker, req: Request) -> None:
        handler = getattr(self, f"on_{ApiKey(req.api_key).name.lower()}")
        handler(broker, req)

    def on_metadata(self, broker: ScriptedBroker, req: Request) -> None:
        topic = {
            "error_code": 0,
            "name": "t",
            "topic_id": None,
            "is_internal": False,
            "partitions": [
                {
                    "error_code": 0,
                    "partition_index": p,
                    "leader_id": n,
                    "leader_epoch": 1,
                    "replica_nodes": [n],
                    "isr_nodes": [n],
                    "offline_replicas": [],
                }
                for p, n in self.leaders.items()
            ],
            "topic_authorized_operations": -2147483648,
        }
        brokers = [(n, "127.0.0.1", p) for n, p in self.ports.items()]
        broker.respond(req, metadata_response("fake", brokers, [topic], self.controller))

    def on_create_topics(self, broker: ScriptedBroker, req: Request) -> None:
        request = req.decode()
        results = []
        for t in request.topics:
            code = self.create_errors.get(t.name, 0)
            if self.node_of(broker) != self.controller or self.not_controller_once:
                code = 41  # NOT_CONTROLLER
            results.append(
                {
                    "name": t.name,
                    "topic_id": None,
                    "error_code": code,
                    "error_message": "no" if code else None,
                    "num_partitions": 3,
                    "replication_factor": 1,
                    "configs": [],
                }
            )
        self.not_controller_once = False
        broker.respond(req, {"throttle_time": 0, "topics": results})

    def on_list_offsets(self, broker: ScriptedBroker, req: Request) -> None:
        request = req.decode()
        node = self.node_of(broker)
        topics = []
        for t in request.topics:
            parts = []
            for p in t.partitions:
                index = int(p.partition_index)
                code = 0
                if index in self.not_leader_once:
                    self.not_leader_once.discard(index)
                    self.leaders[index] = 3 - self.leaders[index]
                    code = 6  # NOT_LEADER_OR_FOLLOWER
                elif self.leaders[index] != node:
                    code = 6
                parts.append(
                    {
                        "partition_index": index,
                        "error_code": code,
                        "timestamp": -1,
                        "offset": 100 * node + index,
                        "leader_epoch": 1,
                    }
                )
            topics.append({"name": t.name, "partitions": parts})
        broker.respond(req, {"throttle_time": 0, "topics": topics})


async def started(cluster: FakeCluster, *brokers: ScriptedBroker) -> AsyncAdmin:
    cluster.ports = {i + 1: b.port for i, b in enumerate(brokers)}
    admin = AsyncAdmin({"bootstrap.servers": brokers[0].address, "retry.backoff.ms": 10})
    await admin.start()
    return admin


def test_create_topics_request_goes_to_controller() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        cluster.controller = 2
        async with (
            ScriptedBroker(cluster.script, ranges=RANGES) as a,
            ScriptedBroker(cluster.script, ranges=RANGES) as b,
        ):
            admin = await started(cluster, a, b)
            topics = [
                NewTopic("x", 3, 1, configs={"retention.ms": "10"}),
                NewTopic("y", replica_assignment={0: [2, 1], 1: [1, 2]}),
            ]
            created = await admin.create_topics(topics, validate_only=True, timeout_ms=5000)
            assert set(created) == {"x", "y"} and created["x"].num_partitions == 3
            assert a.requests_for(ApiKey.CREATE_TOPICS) == []
            (sent,) = b.requests_for(ApiKey.CREATE_TOPICS)
            request = sent.decode()
            assert request.validate_only is True
            assert 0 < request.timeout.total_seconds() <= 5
            x, y = request.topics
            assert (x.num_partitions, x.replication_factor) == (3, 1)
            assert [(c.name, c.value) for c in x.configs] == [("retention.ms", "10")]
            assert (y.num_partitions, y.replication_factor) == (-1, -1)
            assert [(r.partition_index, tuple(r.broker_ids)) for r in y.assignments] == [
                (0, (2, 1)),
                (1, (1, 2)),
            ]
            await admin.close()

    run(main())


def test_per_item_errors_and_controller_move() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        cluster.create_errors = {"bad": 36}
        async with (
            ScriptedBroker(cluster.script, ranges=RANGES) as a,
            ScriptedBroker(cluster.script, ranges=RANGES) as b,
        ):
            admin = await started(cluster, a, b)
            with pytest.raises(AdminError) as info:
                await admin.create_topics(["good", "bad"])
            assert info.value.name == "TOPIC_ALREADY_EXISTS"
            assert set(info.value.errors) == {"bad"} and set(info.value.results) == {"good"}
            assert "topic 'bad': no" in str(info.value)

            # The controller moves: NOT_CONTROLLER, a metadata refresh, then node 2 answers.
            cluster.controller = 2
            cluster.not_controller_once = True
            created = await admin.create_topics(["later"])
            assert set(created) == {"later"}
            assert [r.decode().topics[0].name for r in b.requests_for(ApiKey.CREATE_TOPICS)] == [
                "later"
            ]
            await admin.close()

    run(main())


def test_list_offsets_to_each_leader_and_after_a_leader_move() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        async with (
            ScriptedBroker(cluster.script, ranges=RANGES) as a,
            ScriptedBroker(cluster.script, ranges=RANGES) as b,
        ):
            admin = await started(cluster, a, b)
            specs = {("t", 0): OffsetSpec.LATEST, ("t", 1): OffsetSpec.EARLIEST}
            offsets = await admin.list_offsets(specs)
            assert offsets == {
                TopicPartition("t", 0): offsets[("t", 0)],
                TopicPartition("t", 1): offsets[("t", 1)],
            }
            assert offsets[("t", 0)].offset == 100 and offsets[("t", 1)].offset == 201
            (to_a,) = a.requests_for(ApiKey.LIST_OFFSETS)
            (to_b,) = b.requests_for(ApiKey.LIST_OFFSETS)
            assert [p.partition_index for p in to_a.decode().topics[0].partitions] == [0]
            assert [p.timestamp for p in to_b.decode().topics[0].partitions] == [-2]
            assert to_a.decode().replica_id == -1

            # Partition 0 moves to node 2: NOT_LEADER_OR_FOLLOWER, refresh, retried there.
            cluster.not_leader_once = {0}
            offsets = await admin.list_offsets({("t", 0): OffsetSpec.LATEST})
            assert offsets[("t", 0)].offset == 200
            await admin.close()

    run(main())


def test_describe_cluster_falls_back_to_metadata() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        async with ScriptedBroker(cluster.script, ranges=RANGES) as a:
            assert ApiKey.DESCRIBE_CLUSTER not in RANGES
            admin = await started(cluster, a)
            description = await admin.describe_cluster()
            assert description.cluster_id == "fake" and description.controller_id == 1
            assert [(n.node_id, n.port) for n in description.brokers] == [(1, a.port)]
            await admin.close()

    run(main())
