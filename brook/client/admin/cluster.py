"""The admin client's view of the cluster: its id, controller and brokers (DescribeCluster, or
Metadata on brokers without it), and the KRaft metadata quorum (DescribeQuorum, Java's
``Admin.describeMetadataQuorum``).

DescribeQuorum goes to the least loaded broker, which forwards it to the active controller,
as Java's client does with a broker bootstrap. The answer is checked as Java checks it (one
topic, ``__cluster_metadata``, one partition, 0; else UNKNOWN_SERVER_ERROR) and a top-level or
partition error raises its KafkaError; retriable ones (NOT_LEADER_OR_FOLLOWER while the
quorum elects a leader, NOT_CONTROLLER while the controller moves) are retried within the
call's timeout.
"""

from __future__ import annotations

import uuid
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from ..cluster import BrokerNode
from .core import AdminCore
from .types import ClusterDescription, QuorumInfo, QuorumNode, RaftVoterEndpoint, ReplicaState

__all__ = ["METADATA_PARTITION", "METADATA_TOPIC", "describe_cluster", "describe_metadata_quorum"]

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0


async def describe_cluster(core: AdminCore, *, timeout_ms: int | None = None) -> ClusterDescription:
    """Cluster id, controller and brokers (DescribeCluster when the broker has it, else
    Metadata)."""
    deadline = core.deadline(timeout_ms)

    async def attempt() -> ClusterDescription:
        conn = await core.network.any_connection()
        if conn.supports(ApiKey.DESCRIBE_CLUSTER):
            data = {
                "include_cluster_authorized_operations": False,
                "endpoint_type": 1,
                "include_fenced_brokers": False,
            }
            resp = await conn.send(ApiKey.DESCRIBE_CLUSTER, data)
            code = int(resp.error_code)
            if code:
                raise KafkaError(code, resp.error_message)
            brokers = tuple(
                BrokerNode(int(b.broker_id), b.host, int(b.port), b.rack) for b in resp.brokers
            )
            return ClusterDescription(resp.cluster_id, int(resp.controller_id), brokers)
        resp = await core.network.fetch_metadata([])
        brokers = tuple(
            BrokerNode(int(b.node_id), b.host, int(b.port), b.rack) for b in resp.brokers
        )
        return ClusterDescription(
            getattr(resp, "cluster_id", None), int(resp.controller_id), brokers
        )

    result = await core.call(attempt, deadline)
    return ClusterDescription(
        result.cluster_id,
        result.controller_id,
        tuple(sorted(result.brokers, key=lambda b: b.node_id)),
    )


async def describe_metadata_quorum(core: AdminCore, *, timeout_ms: int | None = None) -> QuorumInfo:
    """The metadata quorum: leader, epoch, high watermark, voters, observers, voter endpoints."""
    deadline = core.deadline(timeout_ms)
    data = {
        "topics": [
            {
                "topic_name": METADATA_TOPIC,
                "partitions": [{"partition_index": METADATA_PARTITION}],
            }
        ]
    }

    async def attempt() -> QuorumInfo:
        resp = await core.send_any(
            ApiKey.DESCRIBE_QUORUM, data, timeout_ms=core.op_timeout(deadline)
        )
        return quorum_info(resp)

    return await core.call(attempt, deadline)


def quorum_info(resp: Any) -> QuorumInfo:
    """A DescribeQuorum response (any version) as QuorumInfo; its errors as KafkaError."""
    code = int(resp.error_code)
    if code:
        raise KafkaError(code, getattr(resp, "error_message", None))
    if len(resp.topics) != 1:
        raise _unexpected(f"received {len(resp.topics)} topics when 1 was expected")
    topic = resp.topics[0]
    if topic.topic_name != METADATA_TOPIC:
        raise _unexpected(
            f"received a topic with name {topic.topic_name} when {METADATA_TOPIC} was expected"
        )
    if len(topic.partitions) != 1:
        raise _unexpected(
            f"received a topic {topic.topic_name} with {len(topic.partitions)} partitions "
            "when 1 was expected"
        )
    partition = topic.partitions[0]
    if int(partition.partition_index) != METADATA_PARTITION:
        raise _unexpected(
            f"received a single partition with index {partition.partition_index} "
            f"when {METADATA_PARTITION} was expected"
        )
    code = int(partition.error_code)
    if code:
        raise KafkaError(code, getattr(partition, "error_message", None))
    nodes = {
        int(n.node_id): QuorumNode(
            int(n.node_id),
            tuple(RaftVoterEndpoint(e.name, e.host, int(e.port)) for e in n.listeners),
        )
        for n in getattr(resp, "nodes", ())
    }
    return QuorumInfo(
        int(partition.leader_id),
        int(partition.leader_epoch),
        int(partition.high_watermark),
        tuple(_replica(r) for r in partition.current_voters),
        tuple(_replica(r) for r in partition.observers),
        nodes,
    )


def _replica(r: Any) -> ReplicaState:
    directory = getattr(r, "replica_directory_id", None)
    return ReplicaState(
        int(r.replica_id),
        directory if directory is not None else uuid.UUID(int=0),
        int(r.log_end_offset),
        _known(getattr(r, "last_fetch_timestamp", -1)),
        _known(getattr(r, "last_caught_up_timestamp", -1)),
    )


def _known(timestamp: int) -> int | None:
    return None if timestamp == -1 else int(timestamp)


def _unexpected(what: str) -> KafkaError:
    return KafkaError(Errors.UNKNOWN_SERVER_ERROR, f"DescribeMetadataQuorum {what}")
