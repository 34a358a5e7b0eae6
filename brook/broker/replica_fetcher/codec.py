"""A follower's Fetch on the wire (v17, facts §4.2): the request for one session round, and
the response read back into one small tuple per partition it carries. No I/O.

The top-level ReplicaId is -1 and the follower names itself in the tagged ReplicaState
{broker id, broker epoch} (KIP-903); partitions are named by topic id. An incremental
response carries only the partitions that changed, so reading it costs what changed.
"""

from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any, NamedTuple

from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio
from brook.protocol.primitives import compact_string, uvarint

from .session import SessionRequest

FETCH_VERSION = 17


@dataclass(frozen=True, slots=True)
class FetchSettings:
    """The replica.fetch.* settings a follower's Fetch carries."""

    replica_id: int
    max_wait_ms: int = 500
    min_bytes: int = 1
    max_bytes: int = 10 * 1024 * 1024
    partition_max_bytes: int = 1024 * 1024


class FetchedPartition(NamedTuple):
    topic_id: uuid.UUID
    partition: int
    error_code: int
    high_watermark: int
    log_start_offset: int
    # (epoch, end offset) when the leader says this log diverged, else None
    diverging_epoch: tuple[int, int] | None
    records: bytes


class FetchResult(NamedTuple):
    error_code: int
    session_id: int
    partitions: list[FetchedPartition]


_HEAD = struct.Struct(">iiibii")  # MaxWait, MinBytes, MaxBytes, IsolationLevel, Session
_PARTITION = struct.Struct(">iiqiqi")  # Partition .. PartitionMaxBytes, then no tags
_REPLICA_STATE = struct.Struct(">iq")
_REPLICA_STATE_TAG = 1
_INT32 = struct.Struct(">i")


def encode_fetch_request(
    session: SessionRequest, settings: FetchSettings, broker_epoch: int
) -> bytes:
    """The Fetch v17 body for one session round, written by hand: kio's builder costs about
    6 us a partition, which a round pays for every partition that changed
    (bench/replica_fetch_rounds.py). Byte-identical to kio's encoding (tested)."""
    topics: dict[uuid.UUID, list[bytes]] = {}
    pack = _PARTITION.pack
    for (_, index), pos in session.to_send.items():
        part = pack(
            index,
            pos.current_leader_epoch,
            pos.fetch_offset,
            pos.last_fetched_epoch,
            pos.log_start_offset,
            pos.max_bytes,
        )
        topics.setdefault(pos.topic_id, []).append(part + b"\x00")
    forgotten: dict[uuid.UUID, list[int]] = {}
    for (_, index), topic_id in session.to_forget.items():
        forgotten.setdefault(topic_id, []).append(index)
    out = [
        _HEAD.pack(
            settings.max_wait_ms,
            settings.min_bytes,
            settings.max_bytes,
            0,
            session.session_id,
            session.epoch,
        ),
        uvarint(len(topics) + 1),
    ]
    for topic_id, parts in topics.items():
        out += (topic_id.bytes, uvarint(len(parts) + 1), *parts, b"\x00")
    out.append(uvarint(len(forgotten) + 1))
    for topic_id, indexes in forgotten.items():
        out += (topic_id.bytes, uvarint(len(indexes) + 1))
        out += [_INT32.pack(i) for i in indexes]
        out.append(b"\x00")
    out.append(compact_string(""))  # RackId
    if settings.replica_id == -1 and broker_epoch == -1:
        out.append(b"\x00")  # ReplicaState at its default is not written
    else:
        state = _REPLICA_STATE.pack(settings.replica_id, broker_epoch) + b"\x00"
        out += (b"\x01", uvarint(_REPLICA_STATE_TAG), uvarint(len(state)), state)
    return b"".join(out)


def encode_fetch_request_kio(
    session: SessionRequest, settings: FetchSettings, broker_epoch: int
) -> bytes:
    """The same body through kio's builder: the reference the hand-written one is tested
    against."""
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (_, index), pos in session.to_send.items():
        topics.setdefault(pos.topic_id, []).append(
            {
                "partition": index,
                "current_leader_epoch": pos.current_leader_epoch,
                "fetch_offset": pos.fetch_offset,
                "last_fetched_epoch": pos.last_fetched_epoch,
                "log_start_offset": pos.log_start_offset,
                "partition_max_bytes": pos.max_bytes,
            }
        )
    forgotten: dict[uuid.UUID, list[int]] = {}
    for (_, index), topic_id in session.to_forget.items():
        forgotten.setdefault(topic_id, []).append(index)
    data = {
        "cluster_id": None,
        "replica_state": {"replica_id": settings.replica_id, "replica_epoch": broker_epoch},
        "max_wait": settings.max_wait_ms,
        "min_bytes": settings.min_bytes,
        "max_bytes": settings.max_bytes,
        "isolation_level": 0,
        "session_id": session.session_id,
        "session_epoch": session.epoch,
        "topics": [{"topic_id": tid, "partitions": parts} for tid, parts in topics.items()],
        "forgotten_topics_data": [
            {"topic_id": tid, "partitions": parts} for tid, parts in forgotten.items()
        ],
        "rack_id": "",
    }
    return encode_kio(build(request_class(ApiKey.FETCH, FETCH_VERSION), data))


def decode_fetch_response(body: bytes | memoryview) -> FetchResult:
    """Read a Fetch v17 response (walked along its schema first: a malformed one raises)."""
    resp = decode_kio(response_class(ApiKey.FETCH, FETCH_VERSION), body)
    partitions: list[FetchedPartition] = []
    for topic in resp.responses:
        topic_id = topic.topic_id
        for p in topic.partitions:
            div = p.diverging_epoch
            diverging = (
                (int(div.epoch), int(div.end_offset))
                if div is not None and int(div.epoch) >= 0
                else None
            )
            partitions.append(
                FetchedPartition(
                    topic_id,
                    int(p.partition_index),
                    int(p.error_code),
                    int(p.high_watermark),
                    int(p.log_start_offset),
                    diverging,
                    p.records or b"",
                )
            )
    return FetchResult(int(resp.error_code), int(resp.session_id), partitions)
