"""Fetch on the wire for the consumer: the request a session round needs (v4-18; topic ids
from v13) and the response read back into plain per-partition results, KIP-951 leader hints
and node endpoints included. No I/O."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio

from ..cluster import TopicPartition
from ..fetch_session import ZERO_UUID, FetchRequestData

__all__ = [
    "FETCH_MAX_VERSION",
    "FETCH_MAX_VERSION_NAMES",
    "FETCH_MIN_VERSION",
    "FetchResponse",
    "FetchSettings",
    "FetchedPartition",
    "decode_fetch_response",
    "encode_fetch_request",
]

FETCH_MIN_VERSION = 4  # RecordBatch v2 (Kafka 4.0's floor)
FETCH_MAX_VERSION = 18
FETCH_MAX_VERSION_NAMES = 12  # the newest version that names topics (v13+ uses ids)
LEADER_HINT_VERSION = 16  # KIP-951: the broker fills CurrentLeader / NodeEndpoints from v16
_TOPIC_KEY = {False: "topic", True: "topic_id"}


@dataclass(frozen=True, slots=True)
class FetchSettings:
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int  # 0 read_uncommitted, 1 read_committed
    rack_id: str = ""


@dataclass(slots=True)
class FetchedPartition:
    tp: TopicPartition
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes
    aborted_transactions: list[tuple[int, int]]  # (producer id, first offset)
    current_leader: tuple[int, int] | None = None  # (leader id, epoch) when the broker gave one


@dataclass(slots=True)
class FetchResponse:
    error_code: int
    session_id: int
    throttle_time_ms: int
    partitions: list[FetchedPartition]
    node_endpoints: dict[int, tuple[str, int, str | None]] = field(default_factory=dict)
    # Partitions named by an id this client cannot map back to a name (dropped from above).
    unknown_topic_ids: list[uuid.UUID] = field(default_factory=list)


def encode_fetch_request(version: int, request: FetchRequestData, settings: FetchSettings) -> bytes:
    """The request body for one session round (``to_send`` and ``to_forget`` of ``request``)."""
    uses_ids = version >= 13
    topics: dict[str, list[dict[str, int]]] = {}
    ids: dict[str, uuid.UUID] = {}
    for tp, pd in request.to_send.items():
        topics.setdefault(tp[0], []).append(
            {
                "partition": tp[1],
                "current_leader_epoch": pd.current_leader_epoch,
                "fetch_offset": pd.fetch_offset,
                "last_fetched_epoch": pd.last_fetched_epoch,
                "log_start_offset": pd.log_start_offset,
                "partition_max_bytes": pd.max_bytes,
            }
        )
        ids.setdefault(tp[0], pd.topic_id)
    forgotten: dict[Any, list[int]] = {}
    # v13+ also forgets a partition under its old id when its topic id changed.
    gone = request.to_forget + (request.to_replace if uses_ids else [])
    for tp in gone:
        key = request.forgotten_topic_ids.get(tp, ZERO_UUID) if uses_ids else tp[0]
        forgotten.setdefault(key, []).append(tp[1])
    data = {
        "cluster_id": None,
        "replica_id": -1,
        "replica_state": {"replica_id": -1, "replica_epoch": -1},
        "max_wait": settings.max_wait_ms,
        "min_bytes": settings.min_bytes,
        "max_bytes": settings.max_bytes,
        "isolation_level": settings.isolation_level,
        "session_id": request.session_id,
        "session_epoch": request.epoch,
        "topics": [
            {_TOPIC_KEY[uses_ids]: ids[name] if uses_ids else name, "partitions": parts}
            for name, parts in topics.items()
        ],
        "forgotten_topics_data": [
            {_TOPIC_KEY[uses_ids]: key, "partitions": parts} for key, parts in forgotten.items()
        ],
        "rack_id": settings.rack_id,
    }
    return encode_kio(build(request_class(ApiKey.FETCH, version), data))


def decode_fetch_response(
    version: int, body: bytes, names_by_id: Mapping[uuid.UUID, str]
) -> FetchResponse:
    """Read a Fetch response; v13+ topic ids are named through ``names_by_id``."""
    resp = decode_kio(response_class(ApiKey.FETCH, version), body)
    hints = version >= LEADER_HINT_VERSION
    partitions: list[FetchedPartition] = []
    unknown: list[uuid.UUID] = []
    for t in resp.responses:
        if version >= 13:
            name = names_by_id.get(t.topic_id)
            if name is None:
                unknown.append(t.topic_id)
                continue
        else:
            name = t.topic
        for p in t.partitions:
            leader = None
            if hints:
                cl = p.current_leader
                if cl is not None and int(cl.leader_id) >= 0 and int(cl.leader_epoch) >= 0:
                    leader = (int(cl.leader_id), int(cl.leader_epoch))
            aborted = getattr(p, "aborted_transactions", None) or ()
            partitions.append(
                FetchedPartition(
                    TopicPartition(name, int(p.partition_index)),
                    int(p.error_code),
                    int(p.high_watermark),
                    int(getattr(p, "last_stable_offset", -1)),
                    int(getattr(p, "log_start_offset", -1)),
                    p.records or b"",
                    [(int(a.producer_id), int(a.first_offset)) for a in aborted],
                    leader,
                )
            )
    endpoints = (
        {
            int(n.node_id): (n.host, int(n.port), n.rack)
            for n in (getattr(resp, "node_endpoints", None) or ())
        }
        if hints
        else {}
    )
    throttle = resp.throttle_time
    return FetchResponse(
        int(getattr(resp, "error_code", 0)),
        int(getattr(resp, "session_id", 0)),
        int(throttle.total_seconds() * 1000) if hasattr(throttle, "total_seconds") else 0,
        partitions,
        endpoints,
        unknown,
    )
