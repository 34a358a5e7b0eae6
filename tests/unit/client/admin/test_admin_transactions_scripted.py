"""The admin client's transaction calls against two scripted loopback brokers: what goes on the
wire and to whom, and Java's retries (a coordinator loading or moved, a leader moved) against
the errors that are final (a coordinator shutting down, a named broker not hosting the
partition)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest
from scripted_broker import DEFAULT_RANGES, Request, ScriptedBroker, metadata_response

from brook.client.admin import AbortTransactionSpec, AdminError, AsyncAdmin, KafkaError
from brook.client.cluster import TopicPartition
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

RANGES = {**DEFAULT_RANGES, 10: (0, 4), 27: (1, 1), 61: (0, 0), 65: (0, 0), 66: (0, 1)}


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))  # type: ignore[arg-type]


class Fake:
    """Two brokers: topic "t" with partition 0 led by 1 and 1 by 2; errors to answer once."""

    def __init__(self) -> None:
        self.ports: dict[int, int] = {}
        self.leaders = {0: 1, 1: 2}
        self.coordinator = 1
        self.stale: list[int] = []  # what FindCoordinator names before the coordinator
        self.once: dict[tuple[int, int], int] = {}  # (api key, node) -> error, answered once

    def node_of(self, broker: ScriptedBroker) -> int:
        return next(n for n, p in self.ports.items() if p == broker.port)

    def error_once(self, api: int, node: int) -> int:
        return self.once.pop((api, node), 0)

    def script(self, broker: ScriptedBroker, req: Request) -> None:
        node = self.node_of(broker)
        if req.api_key == ApiKey.METADATA:
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
                        "replica_nodes": [1, 2],
                        "isr_nodes": [1, 2],
                        "offline_replicas": [],
                    }
                    for p, n in self.leaders.items()
                ],
                "topic_authorized_operations": -2147483648,
            }
            brokers = [(n, "127.0.0.1", p) for n, p in self.ports.items()]
            broker.respond(req, metadata_response("fake", brokers, [topic], 1))
        elif req.api_key == ApiKey.FIND_COORDINATOR:
            key = req.decode().coordinator_keys[0]
            named = self.stale.pop(0) if self.stale else self.coordinator
            coordinator = {
                "key": key,
                "node_id": named,
                "host": "127.0.0.1",
                "port": self.ports[named],
                "error_code": 0,
                "error_message": None,
            }
            broker.respond(req, {"throttle_time": 0, "coordinators": [coordinator]})
        elif req.api_key == ApiKey.LIST_TRANSACTIONS:
            code = self.error_once(req.api_key, node)
            states = (
                []
                if code
                else [
                    {
                        "transactional_id": f"tx-{node}",
                        "producer_id": node,
                        "transaction_state": "Ongoing",
                    }
                ]
            )
            data = {
                "throttle_time": 0,
                "error_code": code,
                "unknown_state_filters": [],
                "transaction_states": states,
            }
            broker.respond(req, data)
        elif req.api_key == ApiKey.DESCRIBE_TRANSACTIONS:
            states = []
            for tid in req.decode().transactional_ids:
                code = Errors.TRANSACTIONAL_ID_NOT_FOUND if tid == "gone" else 0
                if node != self.coordinator:
                    code = Errors.NOT_COORDINATOR
                states.append(
                    {
                        "error_code": code,
                        "transactional_id": tid,
                        "transaction_state": "Ongoing",
                        "transaction_timeout": 60000,
                        "transaction_start_time": 1000,
                        "producer_id": 7,
                        "producer_epoch": 2,
                        "topics": [{"topic": "t", "partitions": [0]}],
                    }
                )
            broker.respond(req, {"throttle_time": 0, "transaction_states": states})
        elif req.api_key == ApiKey.DESCRIBE_PRODUCERS:
            topics = []
            for t in req.decode().topics:
                parts = []
                for p in t.partition_indexes:
                    code = self.error_once(req.api_key, node)
                    if code == Errors.NOT_LEADER_OR_FOLLOWER:
                        self.leaders[p] = 3 - self.leaders[p]
                    producer = {
                        "producer_id": 7,
                        "producer_epoch": 2,
                        "last_sequence": 4,
                        "last_timestamp": 1000,
                        "coordinator_epoch": -1,
                        "current_txn_start_offset": 40 + node,
                    }
                    parts.append(
                        {
                            "partition_index": p,
                            "error_code": code,
                            "error_message": None,
                            "active_producers": [] if code else [producer],
                        }
                    )
                topics.append({"name": t.name, "partitions": parts})
            broker.respond(req, {"throttle_time": 0, "topics": topics})
        elif req.api_key == ApiKey.WRITE_TXN_MARKERS:
            code = self.error_once(req.api_key, node)
            if code == Errors.NOT_LEADER_OR_FOLLOWER:
                self.leaders[0] = 3 - self.leaders[0]
            (m,) = req.decode().markers
            topics = [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p, "error_code": code} for p in t.partition_indexes
                    ],
                }
                for t in m.topics
            ]
            broker.respond(req, {"markers": [{"producer_id": m.producer_id, "topics": topics}]})


def _with_admin(test: Any) -> None:
    async def main() -> None:
        fake = Fake()
        async with (
            ScriptedBroker(fake.script, ranges=RANGES) as a,
            ScriptedBroker(fake.script, ranges=RANGES) as b,
        ):
            fake.ports = {1: a.port, 2: b.port}
            config = {"bootstrap.servers": a.address, "retry.backoff.ms": 10}
            async with AsyncAdmin(config) as admin:
                await test(fake, admin, a, b)

    run(main())


def test_list_asks_every_broker_and_retries_a_loading_coordinator() -> None:
    async def test(fake: Fake, admin: AsyncAdmin, a: ScriptedBroker, b: ScriptedBroker) -> None:
        fake.once[(ApiKey.LIST_TRANSACTIONS, 1)] = Errors.COORDINATOR_LOAD_IN_PROGRESS
        listed = await admin.list_transactions(
            states=["Ongoing"], producer_ids=[1, 2], duration_ms=500
        )
        assert {n: [t.transactional_id for t in ts] for n, ts in listed.items()} == {
            1: ["tx-1"],
            2: ["tx-2"],
        }
        assert len(a.requests_for(ApiKey.LIST_TRANSACTIONS)) == 2
        (sent,) = b.requests_for(ApiKey.LIST_TRANSACTIONS)
        body = sent.decode()
        assert sent.version == 1  # the duration filter needs v1
        assert (list(body.state_filters), list(body.producer_id_filters)) == (["Ongoing"], [1, 2])
        assert int(body.duration_filter) == 500
        # A coordinator shutting down is final, as Java's handler has it.
        fake.once[(ApiKey.LIST_TRANSACTIONS, 2)] = Errors.COORDINATOR_NOT_AVAILABLE
        with pytest.raises(AdminError) as info:
            await admin.list_transactions()
        assert set(info.value.errors) == {2}
        assert "ListTransactions sent to broker 2" in str(info.value)

    _with_admin(test)


def test_describe_finds_the_coordinator_again_when_it_moved() -> None:
    async def test(fake: Fake, admin: AsyncAdmin, a: ScriptedBroker, b: ScriptedBroker) -> None:
        # FindCoordinator first names node 1, which no longer coordinates: NOT_COORDINATOR,
        # the coordinator is looked up again, node 2 answers.
        fake.coordinator, fake.stale = 2, [1]
        with pytest.raises(AdminError) as info:
            await admin.describe_transactions(["app", "gone"])
        assert set(info.value.errors) == {"gone"}
        assert info.value.errors["gone"].code == Errors.TRANSACTIONAL_ID_NOT_FOUND
        assert "`gone`" in str(info.value.errors["gone"])
        app = info.value.results["app"]
        assert (app.coordinator_id, app.state, app.producer_id, app.producer_epoch) == (
            2,
            "Ongoing",
            7,
            2,
        )
        assert app.topic_partitions == {TopicPartition("t", 0)}
        assert app.transaction_start_time_ms == 1000

        def asked(broker: ScriptedBroker) -> list[list[str]]:
            return [
                list(r.decode().transactional_ids)
                for r in broker.requests_for(ApiKey.DESCRIBE_TRANSACTIONS)
            ]

        assert asked(a) == [["app"]]  # the stale coordinator, once
        assert sorted(asked(b)) == [["app"], ["gone"]]
        finds = [r for r in a.requests + b.requests if r.api_key == ApiKey.FIND_COORDINATOR]
        assert {int(f.decode().key_type) for f in finds} == {1}  # transactional ids

    _with_admin(test)


def test_describe_producers_follows_the_leader_unless_a_broker_is_named() -> None:
    async def test(fake: Fake, admin: AsyncAdmin, a: ScriptedBroker, b: ScriptedBroker) -> None:
        fake.once[(ApiKey.DESCRIBE_PRODUCERS, 1)] = Errors.NOT_LEADER_OR_FOLLOWER
        producers = await admin.describe_producers([("t", 0)])
        (p,) = producers[TopicPartition("t", 0)]
        assert p.current_transaction_start_offset == 42  # answered by node 2, the new leader
        assert p.coordinator_epoch is None
        fake.once[(ApiKey.DESCRIBE_PRODUCERS, 1)] = Errors.NOT_LEADER_OR_FOLLOWER
        with pytest.raises(AdminError) as info:
            await admin.describe_producers([("t", 1)], broker_id=1)
        assert info.value.code == Errors.NOT_LEADER_OR_FOLLOWER
        assert "on brokerId 1" in str(info.value)
        with pytest.raises(AdminError) as unknown:
            await admin.describe_producers([("t", 9)])
        assert unknown.value.code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert "t-9" in str(unknown.value)

    _with_admin(test)


def test_abort_writes_an_abort_marker_to_the_leader() -> None:
    async def test(fake: Fake, admin: AsyncAdmin, a: ScriptedBroker, b: ScriptedBroker) -> None:
        fake.once[(ApiKey.WRITE_TXN_MARKERS, 1)] = Errors.NOT_LEADER_OR_FOLLOWER
        await admin.abort_transaction(AbortTransactionSpec(TopicPartition("t", 0), 7, 2, 5))
        (first,) = a.requests_for(ApiKey.WRITE_TXN_MARKERS)
        (second,) = b.requests_for(ApiKey.WRITE_TXN_MARKERS)
        (m,) = second.decode().markers
        assert (m.producer_id, m.producer_epoch, m.coordinator_epoch) == (7, 2, 5)
        assert m.transaction_result is False
        assert [(t.name, list(t.partition_indexes)) for t in m.topics] == [("t", [0])]
        assert first.body == second.body
        fake.once[(ApiKey.WRITE_TXN_MARKERS, 2)] = Errors.INVALID_PRODUCER_EPOCH
        with pytest.raises(KafkaError) as info:
            await admin.abort_transaction(AbortTransactionSpec(TopicPartition("t", 0), 7, 1, 5))
        assert info.value.code == Errors.INVALID_PRODUCER_EPOCH
        assert "producerEpoch=1" in str(info.value)

    _with_admin(test)
