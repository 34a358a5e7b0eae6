"""The consumer's fetcher against scripted loopback brokers (real framing): fetch-session
rounds and their error reactions, partition errors, and KIP-951 leader hints on Fetch v16."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable
from typing import Any

import pytest
from scripted_broker import DEFAULT_RANGES, Request, ScriptedBroker, metadata_response

from brook.client.cluster import TopicPartition
from brook.client.consumer import AsyncConsumer, OffsetOutOfRangeError
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch

TOPIC_ID = uuid.UUID(int=0xB0)
T0, T1 = TopicPartition("t", 0), TopicPartition("t", 1)
RANGES = {**DEFAULT_RANGES, 1: (4, 16), 2: (1, 7)}


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))  # type: ignore[arg-type]


class FakeCluster:
    """Scripted brokers sharing one view of topic "t" (two partitions, leader per partition).

    Fetch serves ``per_fetch`` records from each requested offset (log end ``end``), keeps one
    session per broker like Kafka (ids, epochs, errors 70/71), and can be told to answer a
    partition with an error (and a leader hint) instead.
    """

    def __init__(self, topic_id: uuid.UUID | None = TOPIC_ID) -> None:
        self.topic_id = topic_id
        self.ports: dict[int, int] = {}
        self.leaders = {0: 1, 1: 1}
        self.epochs = {0: 5, 1: 5}
        self.end = 1000
        self.per_fetch = 3
        self.errors: dict[tuple[int, int], tuple[int, tuple[int, int] | None]] = {}
        self.sessions: dict[int, tuple[int, int, dict[int, int]]] = {}  # node -> id, epoch, parts
        self.forget_sessions = False
        self.corrupt: set[int] = set()  # partitions whose batches arrive with a bad CRC
        self.fetches: list[tuple[int, Any]] = []  # (node, decoded request)
        self.versions: list[int] = []
        self.metadata_requests = 0

    def node_of(self, broker: ScriptedBroker) -> int:
        return next(n for n, p in self.ports.items() if p == broker.port)

    def script(self, broker: ScriptedBroker, req: Request) -> None:
        if req.api_key == ApiKey.METADATA:
            self.metadata_requests += 1
            broker.respond(req, self.metadata())
        elif req.api_key == ApiKey.FETCH:
            self.fetch(broker, req)
        elif req.api_key == ApiKey.LIST_OFFSETS:
            self.list_offsets(broker, req)

    def list_offsets(self, broker: ScriptedBroker, req: Request) -> None:
        topics = [
            {
                "name": t.name,
                "partitions": [
                    {
                        "partition_index": p.partition_index,
                        "error_code": 0,
                        "timestamp": -1,
                        "offset": 0 if p.timestamp == -2 else self.end,
                        "leader_epoch": self.epochs[p.partition_index],
                    }
                    for p in t.partitions
                ],
            }
            for t in req.decode().topics
        ]
        broker.respond(req, {"throttle_time": 0, "topics": topics})

    def metadata(self) -> dict[str, Any]:
        topic = {
            "error_code": 0,
            "name": "t",
            "topic_id": self.topic_id,
            "is_internal": False,
            "partitions": [
                {
                    "error_code": 0,
                    "partition_index": p,
                    "leader_id": n,
                    "leader_epoch": self.epochs[p],
                    "replica_nodes": [n],
                    "isr_nodes": [n],
                    "offline_replicas": [],
                }
                for p, n in self.leaders.items()
            ],
            "topic_authorized_operations": -2147483648,
        }
        brokers = [(n, "127.0.0.1", p) for n, p in self.ports.items()]
        return metadata_response("fake", brokers, [topic], 1)

    def fetch(self, broker: ScriptedBroker, req: Request) -> None:
        node = self.node_of(broker)
        request = req.decode()
        self.fetches.append((node, request))
        self.versions.append(req.version)
        sid, epoch = request.session_id, request.session_epoch
        session = self.sessions.get(node)
        wanted = {p.partition: p.fetch_offset for t in request.topics for p in t.partitions}
        if self.forget_sessions:
            self.sessions.clear()
            session = None
        top_error = 0
        if epoch > 0:
            if session is None or session[0] != sid:
                top_error = Errors.FETCH_SESSION_ID_NOT_FOUND
            elif session[1] != epoch:
                top_error = Errors.INVALID_FETCH_SESSION_EPOCH
        if top_error:
            body = {"throttle_time": 0, "error_code": top_error, "session_id": 0, "responses": []}
            broker.respond(req, body)
            return
        if epoch > 0:
            parts = dict(session[2])
            for t in request.forgotten_topics_data:
                for p in t.partitions:
                    parts.pop(p, None)
            parts.update(wanted)
            new_id = sid
        else:
            parts = wanted
            new_id = 77 + node if epoch == 0 else 0
        if new_id:
            self.sessions[node] = (new_id, epoch + 1 if epoch > 0 else 1, parts)
        partitions = []
        for index, offset in parts.items():
            code, hint = self.errors.get((node, index), (0, None))
            records = b""
            if not code and offset < self.end:
                count = min(self.per_fetch, self.end - offset)
                records = build_simple_batch([b"%d" % (offset + i) for i in range(count)],
                                             base_offset=offset)  # fmt: skip
                if index in self.corrupt:
                    records = records[:-1] + bytes([records[-1] ^ 0xFF])
            part = {
                "partition_index": index,
                "error_code": code,
                "high_watermark": self.end,
                "last_stable_offset": self.end,
                "log_start_offset": 0,
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": records,
            }
            if hint is not None:
                part["current_leader"] = {"leader_id": hint[0], "leader_epoch": hint[1]}
            partitions.append(part)
        endpoints = [{"node_id": n, "host": "127.0.0.1", "port": p, "rack": None}
                     for n, p in self.ports.items()]  # fmt: skip
        body = {
            "throttle_time": 0,
            "error_code": 0,
            "session_id": new_id,
            "responses": [{"topic": "t", "topic_id": self.topic_id, "partitions": partitions}],
            "node_endpoints": endpoints,
        }

        async def later() -> None:
            if not any(p["records"] or p["error_code"] for p in partitions):
                await asyncio.sleep(0.05)  # a long poll that found nothing
            broker.respond(req, body)

        broker.spawn(later())


async def two_brokers(cluster: FakeCluster) -> tuple[ScriptedBroker, ScriptedBroker]:
    b1 = await ScriptedBroker(cluster.script, ranges=RANGES).__aenter__()
    b2 = await ScriptedBroker(cluster.script, ranges=RANGES).__aenter__()
    cluster.ports = {1: b1.port, 2: b2.port}
    return b1, b2


async def poll_until(consumer: AsyncConsumer, count: int, timeout: float = 10) -> list[Any]:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    out: list[Any] = []
    while len(out) < count and loop.time() < deadline:
        out += await consumer.poll(200)
    return out


def consumer_for(broker: ScriptedBroker, **extra: Any) -> AsyncConsumer:
    return AsyncConsumer({"bootstrap.servers": broker.address, "retry.backoff.ms": 20, **extra})


@contextlib.asynccontextmanager
async def scripted(cluster: FakeCluster, **config: Any) -> AsyncIterator[AsyncConsumer]:
    """Two scripted brokers for ``cluster`` and a started consumer bootstrapped from node 1."""
    b1, b2 = await two_brokers(cluster)
    try:
        async with consumer_for(b1, **config) as consumer:
            yield consumer
    finally:
        await b1.__aexit__(None, None, None)
        await b2.__aexit__(None, None, None)


async def reading(consumer: AsyncConsumer, **positions: int) -> None:
    """Assign partitions of "t" by name (p0=, p1=) and seek each to its position."""
    tps = {TopicPartition("t", int(k[1:])): v for k, v in positions.items()}
    await consumer.assign(list(tps))
    for tp, offset in tps.items():
        await consumer.seek(tp, offset)


def test_fetches_become_incremental_and_records_arrive_in_order() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        async with scripted(cluster) as consumer:
            await reading(consumer, p0=10, p1=20)
            records = await poll_until(consumer, 24)
            by_tp: dict[int, list[int]] = {0: [], 1: []}
            for r in records:
                by_tp[r.partition].append(r.offset)
                assert r.value == b"%d" % r.offset
            assert by_tp[0][:6] == list(range(10, 16)) and by_tp[1][:6] == list(range(20, 26))
            versions = {req.session_epoch for _, req in cluster.fetches}
            first = cluster.fetches[0][1]
            assert (first.session_id, first.session_epoch) == (0, 0)
            assert [t.topic_id for t in first.topics] == [TOPIC_ID]  # v16 names topics by id
            second = cluster.fetches[1][1]
            assert (second.session_id, second.session_epoch) == (78, 1)
            assert max(versions) >= 3
            stats = consumer.fetcher.stats
            assert stats.full_requests == 1 and stats.incremental_requests >= 2
            assert consumer.fetcher.session(1).session_id == 78

    run(main())


def test_a_lost_session_restarts_with_a_full_fetch_without_gaps_or_duplicates() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        async with scripted(cluster) as consumer:
            await reading(consumer, p0=0)
            got = await poll_until(consumer, 6)
            cluster.forget_sessions = True  # the broker restarted: session 78 is gone
            got += await poll_until(consumer, 6)
            cluster.forget_sessions = False
            got += await poll_until(consumer, 12)
            offsets = [r.offset for r in got]
            assert offsets == list(range(len(offsets))) and len(offsets) >= 24
            epochs = [(req.session_id, req.session_epoch) for _, req in cluster.fetches]
            # After error 70 the next request asks for a new session: (0, 0).
            i = epochs.index((0, 0), 1)
            assert epochs[i - 1][1] > 0
            assert consumer.fetcher.stats.session_errors >= 1

    run(main())


def test_sessions_off_sends_sessionless_full_fetches() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        async with scripted(cluster, **{"brook.fetch.sessions.enable": False}) as consumer:
            await reading(consumer, p0=0, p1=0)
            await poll_until(consumer, 9)
            assert {(r.session_id, r.session_epoch) for _, r in cluster.fetches} == {(0, -1)}
            stats = consumer.fetcher.stats
            assert stats.sessionless_requests >= len(cluster.fetches) >= 2
            assert stats.full_requests == stats.incremental_requests == 0

    run(main())


def test_out_of_range_resets_by_policy_or_raises_with_none() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        cluster.errors[(1, 0)] = (Errors.OFFSET_OUT_OF_RANGE, None)
        async with scripted(cluster, **{"auto.offset.reset": "none"}) as consumer:
            await reading(consumer, p0=4000)
            with pytest.raises(OffsetOutOfRangeError, match="t-0 at offset 4000") as info:
                await poll_until(consumer, 1)
            assert info.value.offsets == {T0: 4000}

    run(main())


def test_a_leader_hint_sends_the_next_fetch_to_the_new_leader_at_once() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        async with scripted(cluster, **{"metadata.max.age.ms": 600000}) as consumer:
            await reading(consumer, p0=0)
            await poll_until(consumer, 3)
            # Leadership moves to node 2; node 1 answers with the hint, metadata lags behind.
            cluster.errors[(1, 0)] = (Errors.NOT_LEADER_OR_FOLLOWER, (2, 6))
            got = await poll_until(consumer, 6)
            assert [r.offset for r in got][:3] == [3, 4, 5]
            nodes = [n for n, _ in cluster.fetches]
            assert 2 in nodes and nodes[nodes.index(2) :] == [2] * len(nodes[nodes.index(2) :])
            assert consumer.network.cluster.leader_for(T0) == 2
            assert consumer.network.cluster.leader_epoch(T0) == 6
            assert consumer.fetcher.stats.leader_hints_applied == 1
            assert cluster.metadata_requests >= 2  # metadata is still refreshed
            v = cluster.fetches[-1][1]
            assert v.topics[0].partitions[0].current_leader_epoch == 6

    run(main())


def test_a_stale_leader_hint_is_ignored() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        async with scripted(cluster) as consumer:
            await reading(consumer, p0=0)
            await poll_until(consumer, 3)
            cluster.errors[(1, 0)] = (Errors.NOT_LEADER_OR_FOLLOWER, (2, 5))  # epoch not newer
            await consumer.poll(300)
            assert consumer.network.cluster.leader_for(T0) == 1
            assert consumer.fetcher.stats.leader_hints_applied == 0
            assert all(n == 1 for n, _ in cluster.fetches)

    run(main())


def test_with_leader_discovery_off_the_fetch_waits_for_metadata() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        config = {"brook.leader.discovery.enable": False}
        async with scripted(cluster, **config) as consumer:
            await reading(consumer, p0=0)
            await poll_until(consumer, 3)
            cluster.errors[(1, 0)] = (Errors.NOT_LEADER_OR_FOLLOWER, (2, 6))
            await consumer.poll(300)
            # The hint was not applied: node 2 has seen no fetch while metadata says node 1.
            assert consumer.network.cluster.leader_for(T0) == 1
            assert all(n == 1 for n, _ in cluster.fetches)
            assert consumer.fetcher.stats.leader_hints_applied == 0
            # Once metadata names node 2, fetching moves there.
            cluster.leaders[0], cluster.epochs[0] = 2, 6
            got = await poll_until(consumer, 3)
            assert [r.offset for r in got][:3] == [3, 4, 5]
            assert cluster.fetches[-1][0] == 2

    run(main())


@pytest.mark.parametrize(
    "code", [Errors.REPLICA_NOT_AVAILABLE, Errors.KAFKA_STORAGE_ERROR, Errors.OFFSET_NOT_AVAILABLE]
)
def test_other_retriable_partition_errors_request_metadata(code: int) -> None:
    async def main() -> None:
        cluster = FakeCluster()
        async with scripted(cluster) as consumer:
            await reading(consumer, p0=0)
            before = cluster.metadata_requests
            cluster.errors[(1, 0)] = (code, None)
            await consumer.poll(300)
            assert cluster.metadata_requests > before
            del cluster.errors[(1, 0)]
            got = await poll_until(consumer, 3)
            assert [r.offset for r in got][:3] == [0, 1, 2]

    run(main())


def test_without_topic_ids_the_fetch_falls_back_to_v12_and_names() -> None:
    async def main() -> None:
        cluster = FakeCluster(topic_id=None)
        async with scripted(cluster) as consumer:
            await reading(consumer, p0=0)
            got = await poll_until(consumer, 6)
            assert [r.offset for r in got][:6] == list(range(6))
            assert set(cluster.versions) == {12}
            assert all(t.topic == "t" for _, req in cluster.fetches for t in req.topics)

    run(main())


def test_with_topic_ids_the_newest_shared_version_is_used() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        async with scripted(cluster) as consumer:
            await reading(consumer, p0=0)
            await poll_until(consumer, 3)
            assert set(cluster.versions) == {16}

    run(main())


def test_a_corrupt_batch_fails_the_poll_after_the_good_records_were_handed_out() -> None:
    async def main() -> None:
        cluster = FakeCluster()
        cluster.corrupt.add(1)
        async with scripted(cluster) as consumer:
            await reading(consumer, p0=0, p1=0)
            got = await consumer.poll(2000)
            assert [(r.partition, r.offset) for r in got] == [(0, 0), (0, 1), (0, 2)]
            with pytest.raises(KafkaError, match="offset 0 of t-1 is corrupt") as info:
                await consumer.poll(2000)
            assert info.value.code == Errors.CORRUPT_MESSAGE
            assert await consumer.position(T1) == 0 and await consumer.position(T0) >= 3

    run(main())
