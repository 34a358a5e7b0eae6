"""NetworkClient against scripted loopback brokers: bootstrap, per-node connections, backoff,
least-loaded choice and the metadata refresher."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable
from typing import Any

import pytest
from scripted_broker import Request, ScriptedBroker, metadata_response

from brook.client.config import parse_admin_config
from brook.client.connection import NetworkError
from brook.client.network import NetworkClient, backoff_ms

METADATA = 3


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))  # type: ignore[arg-type]


def dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Cluster:
    """What the scripted brokers report: node id -> port, plus one topic."""

    def __init__(self) -> None:
        self.nodes: dict[int, int] = {}
        self.hold: set[int] = set()  # ports whose brokers never answer Metadata

    def script(self, broker: ScriptedBroker, req: Request) -> None:
        if broker.port in self.hold:
            return
        asked = req.decode().topics
        topics = [
            {
                "error_code": 0,
                "name": t.name,
                "topic_id": None,
                "is_internal": False,
                "partitions": [
                    {
                        "error_code": 0,
                        "partition_index": 0,
                        "leader_id": 1,
                        "leader_epoch": 0,
                        "replica_nodes": [1],
                        "isr_nodes": [1],
                        "offline_replicas": [],
                    }
                ],
                "topic_authorized_operations": -2147483648,
            }
            for t in asked or ()
        ]
        brokers = [(n, "127.0.0.1", p) for n, p in self.nodes.items()]
        broker.respond(req, metadata_response("scripted", brokers, topics, controller_id=1))


ALL = {
    "topics": None,
    "allow_auto_topic_creation": False,
    "include_cluster_authorized_operations": False,
    "include_topic_authorized_operations": False,
}


def client(bootstrap: str, **extra: Any) -> NetworkClient:
    config = parse_admin_config({"bootstrap.servers": bootstrap, **extra})
    return NetworkClient(config, kind="test")


def test_bootstrap_skips_dead_address_and_adopts_connection() -> None:
    async def main() -> None:
        cluster = Cluster()
        async with ScriptedBroker(cluster.script) as broker:
            cluster.nodes = {1: broker.port}
            net = client(f"127.0.0.1:{dead_port()},{broker.address}")
            await net.start()
            assert net.client_id.startswith("test-")
            assert set(net.cluster.brokers) == {1} and net.cluster.cluster_id == "scripted"
            # The bootstrap connection is node 1's advertised address: it is kept, not redone.
            assert net.is_ready(1)
            conn = await net.connection(1)
            assert len(broker.requests_for(18)) == 1 and conn.node_id == 1
            await net.close()

    run(main())


def test_bootstrap_failure_names_each_address() -> None:
    ports = [dead_port(), dead_port()]

    async def main() -> None:
        net = client(",".join(f"127.0.0.1:{p}" for p in ports))
        with pytest.raises(NetworkError) as info:
            await net.start()
        text = str(info.value)
        for port in ports:
            assert f"connection to 127.0.0.1:{port} failed: [Errno 111] Connection refused" in text
        assert "bootstrap.servers" in text

    run(main())


def test_reconnect_backoff_grows() -> None:
    async def main() -> None:
        cluster = Cluster()
        async with ScriptedBroker(cluster.script) as broker:
            gone = dead_port()
            cluster.nodes = {1: broker.port, 2: gone}
            net = client(
                broker.address, **{"reconnect.backoff.ms": 200, "reconnect.backoff.max.ms": 2000}
            )
            await net.start()
            with pytest.raises(NetworkError, match=f"127.0.0.1:{gone} failed"):
                await net.connection(2)
            first = net.connection_delay_ms(2)
            assert 100 < first <= 240
            assert not net.maybe_connect(2)  # backing off: nothing started
            loop = asyncio.get_running_loop()
            start = loop.time()
            with pytest.raises(NetworkError):
                await net.connection(2)  # waits out the backoff, then fails again
            assert loop.time() - start >= first / 1000 * 0.9
            assert net.connection_delay_ms(2) > first  # doubled (with jitter)
            # The broken node does not stop requests to the healthy one.
            assert (await net.send_to(1, METADATA, ALL)).cluster_id == "scripted"
            await net.close()

    run(main())


def test_least_loaded_node_prefers_idle_connection() -> None:
    async def main() -> None:
        cluster = Cluster()
        async with ScriptedBroker(cluster.script) as a, ScriptedBroker(cluster.script) as b:
            cluster.nodes = {1: a.port, 2: b.port}
            net = client(a.address)
            await net.start()
            await net.connection(2)
            cluster.hold = {a.port}
            busy = asyncio.ensure_future(net.send_to(1, METADATA, ALL))
            await asyncio.sleep(0.05)
            assert net.least_loaded_node() == 2
            response = await net.send_any(METADATA, ALL)
            assert response.cluster_id == "scripted"
            assert len(b.requests_for(METADATA)) == 1
            busy.cancel()
            await net.close()

    run(main())


def test_metadata_refresh_on_request_and_by_age() -> None:
    async def main() -> None:
        cluster = Cluster()
        async with ScriptedBroker(cluster.script) as broker:
            cluster.nodes = {1: broker.port}
            net = client(broker.address, **{"metadata.max.age.ms": 300})
            await net.start()
            assert net.cluster.partitions_for("t") == ()
            assert net.add_topics(["t"]) and not net.add_topics(["t"])
            await net.await_update(timeout_ms=2000)
            assert net.cluster.partitions_for("t") == (0,)
            asked = [r.decode().topics for r in broker.requests_for(METADATA)]
            assert [t.name for t in asked[-1]] == ["t"]
            before = len(broker.requests_for(METADATA))
            await asyncio.sleep(0.8)
            assert len(broker.requests_for(METADATA)) >= before + 2  # metadata.max.age.ms
            await net.close()
            with pytest.raises(NetworkError, match="closed"):
                await net.send_any(METADATA, ALL)

    run(main())


def test_refresh_asks_for_tracked_topics() -> None:
    async def main() -> None:
        cluster = Cluster()
        async with ScriptedBroker(cluster.script) as broker:
            cluster.nodes = {1: broker.port}
            config = parse_admin_config({"bootstrap.servers": broker.address})
            net = NetworkClient(config, kind="producer", all_topics=False)
            await net.start()
            net.set_topics(["b", "a"])
            await net.await_update(timeout_ms=2000)
            last = broker.requests_for(METADATA)[-1].decode()
            assert [t.name for t in last.topics] == ["a", "b"]
            assert not last.allow_auto_topic_creation
            assert net.cluster.available_partitions_for("a") == (0,)
            await net.close()

    run(main())


def test_backoff_ms_bounds() -> None:
    assert backoff_ms(100, 1000, 0, 0.0) == 100
    assert backoff_ms(100, 1000, 3, 0.0) == 800
    assert backoff_ms(100, 1000, 10, 0.0) == 1000
    assert 80 <= backoff_ms(100, 1000, 0) <= 120
    assert backoff_ms(0, 1000, 5) == 0
