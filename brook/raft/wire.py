"""The Raft RPCs on the wire: the core's messages (``messages.py``) to and from the kio
entities of Vote (52) v0-2, BeginQuorumEpoch (53) v0-1, EndQuorumEpoch (54) v0-1, Fetch (1)
v13-17 and FetchSnapshot (59) v0-1.

Nodes send the newest versions (Vote v2 carries KIP-996's PreVote); a request that names a
partition other than ``__cluster_metadata-0`` is refused with INVALID_REQUEST (as Kafka
does). Fetch on the controller listener names the metadata topic by its fixed id
(``Uuid(0, 1)``). Record batches travel as the log's own bytes.
"""

from __future__ import annotations

import uuid
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms

from .messages import (
    METADATA_PARTITION,
    METADATA_TOPIC,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    Request,
    Response,
    TopLevelError,
    VoteRequest,
    VoteResponse,
)

METADATA_TOPIC_ID = uuid.UUID(int=1)
NO_DIRECTORY = uuid.UUID(int=0)

# The version each request is sent with.
VERSIONS = {
    VoteRequest: (ApiKey.VOTE, 2),
    BeginQuorumEpochRequest: (ApiKey.BEGIN_QUORUM_EPOCH, 1),
    EndQuorumEpochRequest: (ApiKey.END_QUORUM_EPOCH, 1),
    FetchRequest: (ApiKey.FETCH, 17),
    FetchSnapshotRequest: (ApiKey.FETCH_SNAPSHOT, 1),
}


class WrongPartition(ValueError):
    """The request names another partition than ``__cluster_metadata-0``."""


def _only_partition(topics: Any, topic_of: Any, index_of: Any) -> Any:
    entries = [(topic_of(t), p) for t in topics for p in t.partitions]
    if len(entries) != 1:
        raise WrongPartition(f"{len(entries)} partitions named")
    topic, partition = entries[0]
    if topic not in (METADATA_TOPIC, METADATA_TOPIC_ID) or index_of(partition) != 0:
        raise WrongPartition(f"{topic}-{index_of(partition)} is not the metadata partition")
    return partition


# ---------------------------------------------------------------------- requests out


def encode_request(request: Request, endpoints: dict[str, Any] | None = None) -> dict[str, Any]:
    """The kio request fields for ``request`` at the version of ``VERSIONS``."""
    if isinstance(request, VoteRequest):
        return {
            "cluster_id": request.cluster_id,
            "voter_id": request.voter_id,
            "topics": [
                {
                    "topic_name": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partition_index": METADATA_PARTITION,
                            "replica_epoch": request.replica_epoch,
                            "replica_id": request.replica_id,
                            "replica_directory_id": NO_DIRECTORY,
                            "voter_directory_id": NO_DIRECTORY,
                            "last_offset_epoch": request.last_offset_epoch,
                            "last_offset": request.last_offset,
                            "pre_vote": request.pre_vote,
                        }
                    ],
                }
            ],
        }
    if isinstance(request, BeginQuorumEpochRequest):
        return {
            "cluster_id": request.cluster_id,
            "voter_id": request.voter_id,
            "topics": [
                {
                    "topic_name": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partition_index": METADATA_PARTITION,
                            "voter_directory_id": NO_DIRECTORY,
                            "leader_id": request.leader_id,
                            "leader_epoch": request.leader_epoch,
                        }
                    ],
                }
            ],
            "leader_endpoints": [],
        }
    if isinstance(request, EndQuorumEpochRequest):
        return {
            "cluster_id": request.cluster_id,
            "topics": [
                {
                    "topic_name": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partition_index": METADATA_PARTITION,
                            "leader_id": request.leader_id,
                            "leader_epoch": request.leader_epoch,
                            "preferred_candidates": [
                                {"candidate_id": c, "candidate_directory_id": NO_DIRECTORY}
                                for c in request.preferred_candidates
                            ],
                        }
                    ],
                }
            ],
            "leader_endpoints": [],
        }
    if isinstance(request, FetchRequest):
        return {
            "cluster_id": request.cluster_id,
            "replica_state": {"replica_id": request.replica_id, "replica_epoch": -1},
            "max_wait": request.max_wait_ms,
            "min_bytes": 0,
            "max_bytes": request.max_bytes,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [
                {
                    "topic_id": METADATA_TOPIC_ID,
                    "partitions": [
                        {
                            "partition": METADATA_PARTITION,
                            "current_leader_epoch": request.current_leader_epoch,
                            "fetch_offset": request.fetch_offset,
                            "last_fetched_epoch": request.last_fetched_epoch,
                            "log_start_offset": -1,
                            "partition_max_bytes": request.max_bytes,
                            "replica_directory_id": NO_DIRECTORY,
                        }
                    ],
                }
            ],
            "forgotten_topics_data": [],
            "rack_id": "",
        }
    if isinstance(request, FetchSnapshotRequest):
        return {
            "cluster_id": request.cluster_id,
            "replica_id": request.replica_id,
            "max_bytes": request.max_bytes,
            "topics": [
                {
                    "name": METADATA_TOPIC,
                    "partitions": [
                        {
                            "partition": METADATA_PARTITION,
                            "current_leader_epoch": request.current_leader_epoch,
                            "snapshot_id": {
                                "end_offset": request.snapshot_id.offset,
                                "epoch": request.snapshot_id.epoch,
                            },
                            "position": request.position,
                            "replica_directory_id": NO_DIRECTORY,
                        }
                    ],
                }
            ],
        }
    raise TypeError(f"not a Raft request: {request!r}")


# ---------------------------------------------------------------------- requests in


def decode_request(api_key: int, version: int, entity: Any, replica_id: int) -> Request:
    """The core's request from a kio request entity. ``replica_id`` is the sender's id for a
    Fetch (its ReplicaState, or the top-level field before v15). Raises WrongPartition."""
    cluster = getattr(entity, "cluster_id", None) or None
    if api_key == ApiKey.VOTE:
        p = _only_partition(entity.topics, lambda t: t.topic_name, lambda p: p.partition_index)
        return VoteRequest(
            cluster,
            p.replica_id if version >= 2 else p.candidate_id,
            p.replica_epoch if version >= 2 else p.candidate_epoch,
            p.last_offset_epoch,
            p.last_offset,
            bool(getattr(p, "pre_vote", False)),
            getattr(entity, "voter_id", -1),
        )
    if api_key == ApiKey.BEGIN_QUORUM_EPOCH:
        p = _only_partition(entity.topics, lambda t: t.topic_name, lambda p: p.partition_index)
        return BeginQuorumEpochRequest(
            cluster, p.leader_id, p.leader_epoch, getattr(entity, "voter_id", -1)
        )
    if api_key == ApiKey.END_QUORUM_EPOCH:
        p = _only_partition(entity.topics, lambda t: t.topic_name, lambda p: p.partition_index)
        if version >= 1:
            preferred = tuple(c.candidate_id for c in p.preferred_candidates)
        else:
            preferred = tuple(p.preferred_successors)
        return EndQuorumEpochRequest(cluster, p.leader_id, p.leader_epoch, preferred)
    if api_key == ApiKey.FETCH:
        p = _only_partition(
            entity.topics,
            lambda t: getattr(t, "topic_id", None) or getattr(t, "topic", None),
            lambda p: p.partition,
        )
        return FetchRequest(
            cluster,
            replica_id,
            p.current_leader_epoch,
            p.fetch_offset,
            p.last_fetched_epoch,
            to_ms(entity.max_wait),
            entity.max_bytes,
        )
    if api_key == ApiKey.FETCH_SNAPSHOT:
        p = _only_partition(entity.topics, lambda t: t.name, lambda p: p.partition)
        return FetchSnapshotRequest(
            cluster,
            entity.replica_id,
            p.current_leader_epoch,
            OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch),
            p.position,
            entity.max_bytes,
        )
    raise TypeError(f"api {api_key} is not a Raft RPC")


# ---------------------------------------------------------------------- responses out


def _top(error: int, topic_key: str) -> dict[str, Any]:
    return {"error_code": error, "topics": []} if topic_key else {"error_code": error}


def encode_response(api_key: int, response: Response) -> dict[str, Any]:
    """The kio response fields for the core's ``response`` to a request of ``api_key``."""
    if isinstance(response, TopLevelError):
        if api_key == ApiKey.FETCH:
            return {
                "throttle_time": 0,
                "error_code": response.error,
                "session_id": 0,
                "responses": [],
                "node_endpoints": [],
            }
        if api_key == ApiKey.FETCH_SNAPSHOT:
            return {"throttle_time": 0, "error_code": response.error, "topics": []}
        return {"error_code": response.error, "topics": [], "node_endpoints": []}
    if isinstance(response, VoteResponse | BeginQuorumEpochResponse | EndQuorumEpochResponse):
        partition: dict[str, Any] = {
            "partition_index": METADATA_PARTITION,
            "error_code": response.error,
            "leader_id": response.leader_id,
            "leader_epoch": response.leader_epoch,
        }
        if isinstance(response, VoteResponse):
            partition["vote_granted"] = response.vote_granted
        return {
            "error_code": Errors.NONE,
            "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
            "node_endpoints": [],
        }
    if isinstance(response, FetchResponse):
        part: dict[str, Any] = {
            "partition_index": METADATA_PARTITION,
            "error_code": response.error,
            "high_watermark": response.high_watermark,
            "last_stable_offset": response.high_watermark,
            "log_start_offset": response.log_start_offset,
            "current_leader": {
                "leader_id": response.leader_id,
                "leader_epoch": response.leader_epoch,
            },
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": b"".join(bytes(b) for b in response.records) or None,  # type: ignore[arg-type]
        }
        if response.diverging_epoch is not None:
            part["diverging_epoch"] = {
                "epoch": response.diverging_epoch.epoch,
                "end_offset": response.diverging_epoch.offset,
            }
        if response.snapshot_id is not None:
            part["snapshot_id"] = {
                "end_offset": response.snapshot_id.offset,
                "epoch": response.snapshot_id.epoch,
            }
        return {
            "throttle_time": 0,
            "error_code": Errors.NONE,
            "session_id": 0,
            "responses": [{"topic_id": METADATA_TOPIC_ID, "partitions": [part]}],
            "node_endpoints": [],
        }
    if isinstance(response, FetchSnapshotResponse):
        snap: dict[str, Any] = {
            "index": METADATA_PARTITION,
            "error_code": response.error,
            "snapshot_id": {
                "end_offset": response.snapshot_id.offset if response.snapshot_id else -1,
                "epoch": response.snapshot_id.epoch if response.snapshot_id else -1,
            },
            "current_leader": {
                "leader_id": response.leader_id,
                "leader_epoch": response.leader_epoch,
            },
            "size": response.size,
            "position": response.position,
            "unaligned_records": response.data,
        }
        return {
            "throttle_time": 0,
            "error_code": Errors.NONE,
            "topics": [{"name": METADATA_TOPIC, "partitions": [snap]}],
            "node_endpoints": [],
        }
    raise TypeError(f"not a Raft response: {response!r}")


# ---------------------------------------------------------------------- responses in


def decode_response(request: Request, entity: Any) -> Response:
    """The core's response from the kio entity answering ``request``."""
    if entity.error_code != Errors.NONE:
        return TopLevelError(entity.error_code)
    if isinstance(request, FetchRequest):
        parts = [p for t in entity.responses for p in t.partitions]
        if len(parts) != 1:
            return TopLevelError(Errors.INVALID_REQUEST)
        (p,) = parts
        leader = p.current_leader
        diverging = p.diverging_epoch
        snapshot = p.snapshot_id
        return FetchResponse(
            p.error_code,
            leader.leader_id if leader is not None else -1,
            leader.leader_epoch if leader is not None else -1,
            p.high_watermark,
            p.log_start_offset,
            None
            if diverging is None or diverging.epoch < 0
            else OffsetAndEpoch(diverging.end_offset, diverging.epoch),
            None
            if snapshot is None or snapshot.end_offset < 0
            else OffsetAndEpoch(snapshot.end_offset, snapshot.epoch),
            [p.records] if p.records else [],
        )
    if isinstance(request, FetchSnapshotRequest):
        parts = [p for t in entity.topics for p in t.partitions]
        if len(parts) != 1:
            return TopLevelError(Errors.INVALID_REQUEST)
        (p,) = parts
        leader = p.current_leader
        return FetchSnapshotResponse(
            p.error_code,
            leader.leader_id if leader is not None else -1,
            leader.leader_epoch if leader is not None else -1,
            OffsetAndEpoch(p.snapshot_id.end_offset, p.snapshot_id.epoch),
            p.size,
            p.position,
            bytes(p.unaligned_records or b""),
        )
    parts = [p for t in entity.topics for p in t.partitions]
    if len(parts) != 1:
        return TopLevelError(Errors.INVALID_REQUEST)
    (p,) = parts
    if isinstance(request, VoteRequest):
        return VoteResponse(p.error_code, p.leader_id, p.leader_epoch, bool(p.vote_granted))
    if isinstance(request, BeginQuorumEpochRequest):
        return BeginQuorumEpochResponse(p.error_code, p.leader_id, p.leader_epoch)
    if isinstance(request, EndQuorumEpochRequest):
        return EndQuorumEpochResponse(p.error_code, p.leader_id, p.leader_epoch)
    raise TypeError(f"not a Raft request: {request!r}")


__all__ = [
    "METADATA_TOPIC_ID",
    "VERSIONS",
    "WrongPartition",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
]
