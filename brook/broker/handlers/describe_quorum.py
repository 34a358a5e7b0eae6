"""DescribeQuorum (55), v0-2: the metadata quorum as its leader sees it (kafka-metadata-quorum
describe --status / --replication): leader, epoch, high watermark, and each voter's and
observer's log end offset with its last fetch and last caught-up times (v1+). Only the leader
answers; another controller says NOT_LEADER_OR_FOLLOWER for the partition. A broker forwards the
request to the active controller, as Kafka's brokers do. v2 adds the voters' controller
endpoints (Nodes).

Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.metadata.controller_api import ControllerError
from brook.metadata.records import METADATA_TOPIC
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.protocol.framing import encode_kio
from brook.security.acl import AclOperation

from .. import authz
from ..registry import BROKER, CONTROLLER, RequestContext, handler

REMOTE_VERSION = 2


def request_of() -> dict[str, Any]:
    return {"topics": [{"topic_name": METADATA_TOPIC, "partitions": [{"partition_index": 0}]}]}


def high_watermark_of(response: Any) -> int:
    """The high watermark of a DescribeQuorum answer; ControllerError for an error."""
    if response.error_code:
        raise ControllerError(response.error_code, response.error_message)
    (topic,) = response.topics
    (partition,) = topic.partitions
    if partition.error_code:
        raise ControllerError(partition.error_code, partition.error_message)
    return int(partition.high_watermark)


def _replicas(rows: Any) -> list[dict[str, Any]]:
    return [
        {
            "replica_id": r.replica_id,
            "replica_directory_id": None,
            "log_end_offset": r.log_end_offset,
            "last_fetch_timestamp": r.last_fetch_timestamp,
            "last_caught_up_timestamp": r.last_caught_up_timestamp,
        }
        for r in rows
    ]


def _error(code: int, message: str | None = None) -> dict[str, Any]:
    return {"error_code": code, "error_message": message, "topics": [], "nodes": []}


@handler(ApiKey.DESCRIBE_QUORUM, (0, 2), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    if not ctx.on_controller_listener and not authz.authorize_cluster(ctx, AclOperation.DESCRIBE):
        return _error(Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    wanted = [(t.topic_name, p.partition_index) for t in request.topics for p in t.partitions]
    if wanted != [(METADATA_TOPIC, 0)]:
        return _error(Errors.INVALID_REQUEST, "DescribeQuorum names __cluster_metadata-0 only")
    if not ctx.on_controller_listener and not broker.quorum.describes_locally:
        try:
            return encode_kio(await broker.forward_describe_quorum(ctx.api_version, request))
        except ControllerError as exc:
            return _error(exc.error_code, exc.message)
    info = broker.quorum.describe(broker.clock())
    partition = {
        "partition_index": 0,
        "error_code": info.error,
        "error_message": None,
        "leader_id": info.leader_id,
        "leader_epoch": info.leader_epoch,
        "high_watermark": info.high_watermark,
        "current_voters": _replicas(info.voters),
        "observers": _replicas(info.observers),
    }
    nodes = [
        {
            "node_id": node_id,
            "listeners": [{"name": name, "host": host, "port": port}],
        }
        for node_id, (name, host, port) in sorted(broker.voter_endpoints().items())
    ]
    return {
        "error_code": Errors.NONE,
        "error_message": None,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
        "nodes": nodes,
    }
