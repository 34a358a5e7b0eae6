"""ClusterMetadata: Metadata responses of any version, stale epochs, and KIP-951 leader hints."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from brook.client.cluster import BrokerNode, ClusterMetadata, TopicPartition
from brook.protocol.api import response_class
from brook.protocol.build import build

TOPIC_ID = uuid.UUID("11111111-2222-3333-4444-555555555555")


def partition(
    index: int, leader: int, epoch: int, replicas: tuple[int, ...] = (1, 2, 3), error: int = 0
) -> dict[str, Any]:
    return {
        "error_code": error,
        "partition_index": index,
        "leader_id": leader,
        "leader_epoch": epoch,
        "replica_nodes": replicas,
        "isr_nodes": replicas[:2],
        "offline_replicas": replicas[2:],
    }


def topic(
    name: str,
    parts: list[dict[str, Any]],
    error: int = 0,
    topic_id: uuid.UUID | None = TOPIC_ID,
    internal: bool = False,
) -> dict[str, Any]:
    return {
        "error_code": error,
        "name": name,
        "topic_id": topic_id,
        "is_internal": internal,
        "partitions": parts,
        "topic_authorized_operations": -2147483648,
    }


def metadata(
    topics: list[dict[str, Any]],
    version: int = 12,
    brokers: tuple[int, ...] = (1, 2, 3),
    controller: int = 2,
) -> Any:
    data = {
        "throttle_time": 0,
        "brokers": [
            {"node_id": n, "host": f"h{n}", "port": 9000 + n, "rack": f"r{n}"} for n in brokers
        ],
        "cluster_id": "c1",
        "controller_id": controller,
        "topics": topics,
        "cluster_authorized_operations": -2147483648,
        "error_code": 0,
    }
    return build(response_class(3, version), data)


def cache_with(leader: int = 1, epoch: int = 5) -> ClusterMetadata:
    cluster = ClusterMetadata()
    cluster.update(metadata([topic("t", [partition(0, leader, epoch), partition(1, 2, 3)])]))
    return cluster


@pytest.mark.parametrize("version", [1, 5, 9, 12, 13])
def test_update_from_any_version(version: int) -> None:
    cluster = ClusterMetadata()
    cluster.update(
        metadata(
            [
                topic("t", [partition(1, 2, 7), partition(0, 1, 4)]),
                topic("__consumer_offsets", [partition(0, 3, 0)], internal=True),
            ],
            version=version,
        )
    )
    assert cluster.brokers[1] == BrokerNode(1, "h1", 9001, "r1")
    assert cluster.controller_id == 2
    assert cluster.cluster_id == (None if version < 2 else "c1")
    assert cluster.partitions_for("t") == (0, 1)
    assert cluster.available_partitions_for("t") == (0, 1)
    info = cluster.partition(("t", 1))
    assert info is not None
    assert (info.leader, info.replicas, info.isr) == (2, (1, 2, 3), (1, 2))
    # Epochs before Metadata v9 are not trusted (Java's hasReliableLeaderEpochs).
    assert info.leader_epoch == (7 if version >= 9 else -1)
    assert info.offline_replicas == ((3,) if version >= 5 else ())
    assert cluster.topic_id("t") == (TOPIC_ID if version >= 10 else None)
    assert cluster.topics["__consumer_offsets"].is_internal
    assert cluster.leader_for(("t", 0)) == 1
    assert cluster.version == 1


def test_unknown_leader_and_missing_broker_are_unavailable() -> None:
    cluster = ClusterMetadata()
    cluster.update(
        metadata([topic("t", [partition(0, -1, 1), partition(1, 9, 1), partition(2, 3, 1)])])
    )
    assert cluster.partitions_for("t") == (0, 1, 2)
    assert cluster.available_partitions_for("t") == (2,)
    assert cluster.leader_for(("t", 0)) is None
    assert cluster.leader_for(("t", 1)) is None  # leader 9 is not a known broker
    assert cluster.partitions_for("nope") == () and cluster.leader_for(("nope", 0)) is None


def test_stale_leader_epoch_is_refused() -> None:
    cluster = cache_with(leader=1, epoch=5)
    cluster.update(metadata([topic("t", [partition(0, 3, 4), partition(1, 3, 4)])]))
    # Partition 0 went back from epoch 5 to 4: keep the cached leader. Partition 1 moved ahead.
    assert (cluster.leader_for(("t", 0)), cluster.leader_epoch(("t", 0))) == (1, 5)
    assert (cluster.leader_for(("t", 1)), cluster.leader_epoch(("t", 1))) == (3, 4)
    # An equal epoch is accepted, as Java's Metadata does.
    cluster.update(metadata([topic("t", [partition(0, 2, 5), partition(1, 3, 4)])]))
    assert cluster.leader_for(("t", 0)) == 2
    assert cluster.last_seen_leader_epoch(("t", 0)) == 5


def test_recreated_topic_resets_epochs() -> None:
    cluster = cache_with(leader=1, epoch=5)
    other = uuid.UUID(int=7)
    cluster.update(metadata([topic("t", [partition(0, 3, 0)], topic_id=other)]))
    assert cluster.leader_for(("t", 0)) == 3 and cluster.leader_epoch(("t", 0)) == 0
    assert cluster.topic_name(other) == "t"


def test_old_version_drops_known_epoch() -> None:
    cluster = cache_with(epoch=5)
    cluster.update(metadata([topic("t", [partition(0, 3, 2)])], version=8))
    assert cluster.leader_for(("t", 0)) == 3
    assert cluster.last_seen_leader_epoch(("t", 0)) is None


def test_partial_update_merges_full_update_replaces() -> None:
    cluster = ClusterMetadata()
    cluster.update(metadata([topic("a", [partition(0, 1, 0)]), topic("b", [partition(0, 1, 0)])]))
    cluster.update(metadata([topic("a", [partition(0, 2, 1)])]), topics=["a"])
    assert set(cluster.topics) == {"a", "b"} and cluster.leader_for(("a", 0)) == 2
    cluster.update(metadata([topic("a", [partition(0, 2, 1)])]))
    assert set(cluster.topics) == {"a"}
    # Topics the request did not name are not taken from the response.
    cluster.update(metadata([topic("a", [partition(0, 2, 1)]), topic("c", [])]), topics=[])
    assert set(cluster.topics) == {"a"}


def test_topic_errors_recorded() -> None:
    cluster = cache_with()
    cluster.update(metadata([topic("t", [], error=3)]), topics=["t"])
    assert "t" not in cluster.topics and cluster.topic_errors == {"t": 3}
    assert cluster.partitions_for("t") == ()
    cluster.update(metadata([topic("t", [partition(0, 1, 6)])]), topics=["t"])
    assert cluster.topic_errors == {} and cluster.partitions_for("t") == (0,)


def test_request_update_and_waiting_for_a_newer_version() -> None:
    cluster = ClusterMetadata()
    calls: list[int] = []
    cluster.on_update_request = lambda: calls.append(1)
    seen = cluster.request_update()
    assert cluster.update_requested and calls == [1]

    async def scenario() -> int:
        waiter = asyncio.create_task(cluster.wait_for_version(seen))
        await asyncio.sleep(0)
        assert not waiter.done()
        cluster.update(metadata([]))
        return await waiter

    assert asyncio.run(scenario()) == seen + 1
    assert not cluster.update_requested

    async def times_out() -> None:
        with pytest.raises(TimeoutError):
            await cluster.wait_for_version(cluster.version, timeout=0.01)

    asyncio.run(times_out())


# ---- KIP-951 hints (kip-facts §2.3) ------------------------------------------------------------


def test_hint_accepted_keeps_replicas_and_isr() -> None:
    cluster = cache_with(leader=1, epoch=5)
    before = cluster.version
    updated = cluster.update_partition_leadership({("t", 0): (2, 6)}, {})
    assert updated == {TopicPartition("t", 0)}
    info = cluster.partition(("t", 0))
    assert info is not None
    assert (info.leader, info.leader_epoch, info.replicas, info.isr, info.offline_replicas) == (
        2,
        6,
        (1, 2, 3),
        (1, 2),
        (3,),
    )
    assert cluster.last_seen_leader_epoch(("t", 0)) == 6
    assert cluster.version == before + 1
    # A later Metadata response with the older epoch cannot undo the hint.
    cluster.update(metadata([topic("t", [partition(0, 1, 5), partition(1, 2, 3)])]))
    assert (cluster.leader_for(("t", 0)), cluster.leader_epoch(("t", 0))) == (2, 6)


@pytest.mark.parametrize("hint", [(-1, 6), (2, -1), (None, 6), (2, None)])
def test_hint_rule1_missing_leader_or_epoch(hint: tuple[Any, Any]) -> None:
    cluster = cache_with(epoch=5)
    assert cluster.update_partition_leadership({("t", 0): hint}, {}) == set()
    assert cluster.leader_for(("t", 0)) == 1


@pytest.mark.parametrize("epoch", [5, 4, 0])
def test_hint_rule2_epoch_not_newer(epoch: int) -> None:
    cluster = cache_with(epoch=5)
    assert cluster.update_partition_leadership({("t", 0): (2, epoch)}, {}) == set()
    assert (cluster.leader_for(("t", 0)), cluster.leader_epoch(("t", 0))) == (1, 5)


def test_hint_rule2_no_known_epoch_accepts() -> None:
    cluster = ClusterMetadata()
    cluster.update(metadata([topic("t", [partition(0, 1, 5)])], version=8))
    assert cluster.update_partition_leadership({("t", 0): (2, 0)}, {}) == {("t", 0)}


def test_hint_rule3_unknown_node() -> None:
    cluster = cache_with(epoch=5)
    assert cluster.update_partition_leadership({("t", 0): (7, 6)}, {}) == set()
    assert cluster.leader_for(("t", 0)) == 1
    # The same hint with the node's endpoint is accepted and the node becomes known.
    updated = cluster.update_partition_leadership({("t", 0): (7, 6)}, {7: ("h7", 9007, None)})
    assert updated == {("t", 0)}
    assert cluster.node(7) == BrokerNode(7, "h7", 9007, None)
    assert cluster.leader_for(("t", 0)) == 7 and 0 in cluster.available_partitions_for("t")


def test_hint_rule4_partition_not_cached() -> None:
    cluster = cache_with()
    hints = {("t", 9): (2, 9), ("other", 0): (2, 9)}
    assert cluster.update_partition_leadership(hints, {}) == set()
    assert "other" not in cluster.topics and cluster.partitions_for("t") == (0, 1)


def test_hint_endpoints_take_precedence_and_no_node_dropped() -> None:
    cluster = cache_with(epoch=5)
    endpoints = {2: ("moved", 1234, "rz"), -1: ("", -1, None)}
    updated = cluster.update_partition_leadership({("t", 0): (2, 6)}, endpoints)
    assert updated == {("t", 0)}
    assert cluster.node(2) == BrokerNode(2, "moved", 1234, "rz")
    assert -1 not in cluster.brokers and set(cluster.brokers) == {1, 2, 3}


def test_hints_mixed_batch() -> None:
    cluster = cache_with(epoch=5)
    hints = {("t", 0): (3, 9), ("t", 1): (1, 3), ("t", 5): (1, 9)}
    assert cluster.update_partition_leadership(hints, {}) == {("t", 0)}
    assert cluster.leader_for(("t", 1)) == 2
