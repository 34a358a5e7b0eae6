"""Group requests the consumer and the admin client share: FindCoordinator (batched v4+ or one
key), a dedicated connection to a coordinator, and OffsetCommit / OffsetFetch bodies and
answers in every version this client speaks (OffsetFetch v8+ per group)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from .cluster import BrokerNode, TopicPartition
from .connection import BrokerConnection
from .consumer.coordinator import OffsetAndMetadata
from .network import NetworkClient

__all__ = [
    "OFFSET_COMMIT_MAX",
    "OFFSET_FETCH_MAX",
    "connect_coordinator",
    "find_coordinator",
    "offset_commit_errors",
    "offset_commit_request",
    "offset_fetch_request",
    "parse_offset_fetch",
]

GROUP_KEY_TYPE = 0
# v10 of both names topics by id; Brook speaks names.
OFFSET_COMMIT_MAX = 9
OFFSET_FETCH_MAX = 9


async def find_coordinator(
    network: NetworkClient, group_id: str, timeout_ms: int | None = None
) -> BrokerNode:
    """The group's coordinator; KafkaError with the broker's code when it has none."""
    body = {"key": group_id, "key_type": GROUP_KEY_TYPE, "coordinator_keys": [group_id]}
    conn = await network.any_connection()
    version = conn.version_for(ApiKey.FIND_COORDINATOR)
    response = await conn.send(
        ApiKey.FIND_COORDINATOR, body, version=version, timeout_ms=timeout_ms
    )
    answer = response.coordinators[0] if version >= 4 else response
    error = int(answer.error_code)
    if error:
        message = getattr(answer, "error_message", None)
        raise KafkaError(error, f"FindCoordinator for group {group_id}: {message or ''}".strip())
    return BrokerNode(int(answer.node_id), str(answer.host), int(answer.port))


async def connect_coordinator(network: NetworkClient, node: BrokerNode) -> BrokerConnection:
    """A connection of its own to the coordinator, as Java keeps one: a JoinGroup parked for a
    rebalance must not hold up fetches on the broker's shared connection."""
    cfg = network.config
    conn = BrokerConnection(
        node.host,
        node.port,
        node_id=node.node_id,
        client_id=network.client_id,
        request_timeout_ms=int(cfg["request.timeout.ms"]),
        connect_timeout_ms=int(cfg["socket.connection.setup.timeout.ms"]),
        send_buffer_bytes=int(cfg["send.buffer.bytes"]),
        receive_buffer_bytes=int(cfg["receive.buffer.bytes"]),
        security=network.security,
    )
    await conn.connect()
    return conn


def offset_commit_request(
    group_id: str,
    offsets: Mapping[TopicPartition, OffsetAndMetadata],
    *,
    generation_id: int = -1,
    member_id: str = "",
    group_instance_id: str | None = None,
) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for tp, value in offsets.items():
        topics.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "committed_offset": value.offset,
                "committed_leader_epoch": value.leader_epoch,
                "commit_timestamp": -1,
                "committed_metadata": value.metadata,
            }
        )
    return {
        "group_id": group_id,
        "generation_id_or_member_epoch": generation_id,
        "member_id": member_id,
        "group_instance_id": group_instance_id,
        "retention_time": -1,
        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
    }


def offset_commit_errors(response: Any) -> dict[TopicPartition, int]:
    return {
        TopicPartition(t.name, int(p.partition_index)): int(p.error_code)
        for t in response.topics
        for p in t.partitions
    }


def offset_fetch_request(
    group_id: str, partitions: Iterable[TopicPartition] | None, *, require_stable: bool = True
) -> dict[str, Any]:
    """Every committed offset when ``partitions`` is None (v2+)."""
    topics: list[dict[str, Any]] | None = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for tp in partitions:
            by_topic.setdefault(tp.topic, []).append(tp.partition)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
    return {
        "group_id": group_id,
        "topics": topics,
        "groups": [{"group_id": group_id, "member_id": None, "member_epoch": -1, "topics": topics}],
        "require_stable": require_stable,
    }


def parse_offset_fetch(
    response: Any, version: int
) -> tuple[int, dict[TopicPartition, tuple[OffsetAndMetadata | None, int]]]:
    """(group error, tp -> (committed offset or None, partition error))."""
    if version >= 8:
        group = response.groups[0]
        error, topics = int(group.error_code), group.topics
    else:
        error, topics = int(getattr(response, "error_code", 0)), response.topics
    out: dict[TopicPartition, tuple[OffsetAndMetadata | None, int]] = {}
    for t in topics:
        for p in t.partitions:
            offset = int(p.committed_offset)
            value = (
                OffsetAndMetadata(
                    offset, p.metadata or "", int(getattr(p, "committed_leader_epoch", -1))
                )
                if offset >= 0
                else None
            )
            out[TopicPartition(t.name, int(p.partition_index))] = (value, int(p.error_code))
    if version < 2 and not error:
        # v1 has no group error: a group-level failure shows on every partition.
        codes = {code for _, code in out.values()}
        if len(codes) == 1 and (code := codes.pop()) in (
            Errors.COORDINATOR_LOAD_IN_PROGRESS,
            Errors.COORDINATOR_NOT_AVAILABLE,
            Errors.NOT_COORDINATOR,
            Errors.GROUP_AUTHORIZATION_FAILED,
        ):
            error = code
    return error, out
