"""Fetch requests built from session rounds (names up to v12, topic ids from v13, forgotten
partitions) and Fetch responses read back, KIP-951 hints included."""

from __future__ import annotations

import uuid

import pytest

from brook.client.cluster import TopicPartition
from brook.client.consumer.fetch_request import (
    FetchSettings,
    decode_fetch_response,
    encode_fetch_request,
)
from brook.client.fetch_session import FetchSessionHandler, PartitionData
from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio

A_ID, B_ID = uuid.UUID(int=11), uuid.UUID(int=22)
A0, A1, B0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0)
SETTINGS = FetchSettings(max_wait_ms=500, min_bytes=1, max_bytes=1000, isolation_level=1)


def pd(topic_id: uuid.UUID, offset: int) -> PartitionData:
    return PartitionData(topic_id, offset, -1, 4096, 3, -1)


def decoded(version: int, body: bytes) -> object:
    return decode_kio(request_class(ApiKey.FETCH, version), body)


@pytest.mark.parametrize("version", [4, 7, 12])
def test_a_full_request_names_topics_up_to_v12(version: int) -> None:
    handler = FetchSessionHandler(1)
    request = handler.build({A0: pd(A_ID, 5), B0: pd(B_ID, 9), A1: pd(A_ID, 6)})
    req = decoded(version, encode_fetch_request(version, request, SETTINGS))
    got = [(t.topic, [(p.partition, p.fetch_offset) for p in t.partitions]) for t in req.topics]
    assert got == [("a", [(0, 5), (1, 6)]), ("b", [(0, 9)])]
    assert (req.max_bytes, req.min_bytes, req.isolation_level) == (1000, 1, 1)
    assert req.topics[0].partitions[0].partition_max_bytes == 4096
    if version >= 7:
        assert (req.session_id, req.session_epoch) == (0, 0)
    if version >= 9:
        assert req.topics[0].partitions[0].current_leader_epoch == 3


def test_an_incremental_request_sends_changes_and_forgets_by_id_from_v13() -> None:
    handler = FetchSessionHandler(1)
    first = handler.build({A0: pd(A_ID, 5), A1: pd(A_ID, 6), B0: pd(B_ID, 9)})
    assert handler.handle_response(
        error_code=0, session_id=42, partitions=[A0, A1, B0], request=first
    )
    request = handler.build({A0: pd(A_ID, 8), B0: pd(B_ID, 9)})
    req = decoded(16, encode_fetch_request(16, request, SETTINGS))
    assert (req.session_id, req.session_epoch) == (42, 1)
    assert [(t.topic_id, [p.partition for p in t.partitions]) for t in req.topics] == [(A_ID, [0])]
    assert [(t.topic_id, list(t.partitions)) for t in req.forgotten_topics_data] == [(A_ID, [1])]
    by_name = decoded(12, encode_fetch_request(12, request, SETTINGS))
    assert [(t.topic, list(t.partitions)) for t in by_name.forgotten_topics_data] == [("a", [1])]


def test_a_replaced_topic_id_is_forgotten_under_the_old_id_only_from_v13() -> None:
    handler = FetchSessionHandler(1)
    first = handler.build({A0: pd(A_ID, 5)})
    handler.handle_response(error_code=0, session_id=42, partitions=[A0], request=first)
    new_id = uuid.UUID(int=99)
    request = handler.build({A0: pd(new_id, 0)})
    req = decoded(13, encode_fetch_request(13, request, SETTINGS))
    assert [t.topic_id for t in req.topics] == [new_id]
    assert [(t.topic_id, list(t.partitions)) for t in req.forgotten_topics_data] == [(A_ID, [0])]


def _response(version: int, data: dict) -> bytes:
    return encode_kio(build(response_class(ApiKey.FETCH, version), data))


def _partition(index: int, **fields: object) -> dict:
    base = {
        "partition_index": index,
        "error_code": 0,
        "high_watermark": 10,
        "last_stable_offset": 9,
        "log_start_offset": 2,
        "aborted_transactions": [{"producer_id": 7, "first_offset": 3}],
        "preferred_read_replica": -1,
        "records": b"abc",
    }
    base.update(fields)
    return base


def test_a_v16_response_yields_records_leader_hints_and_node_endpoints() -> None:
    body = _response(
        16,
        {
            "throttle_time": 0,
            "error_code": 0,
            "session_id": 42,
            "responses": [
                {
                    "topic_id": A_ID,
                    "partitions": [
                        _partition(0),
                        _partition(
                            1,
                            error_code=6,
                            records=b"",
                            current_leader={"leader_id": 2, "leader_epoch": 5},
                        ),
                    ],
                },
                {"topic_id": uuid.UUID(int=5), "partitions": [_partition(0)]},
            ],
            "node_endpoints": [{"node_id": 2, "host": "h2", "port": 9093, "rack": "r"}],
        },
    )
    resp = decode_fetch_response(16, body, {A_ID: "a"})
    assert (resp.error_code, resp.session_id) == (0, 42)
    first, second = resp.partitions
    assert (first.tp, first.records, first.high_watermark) == (A0, b"abc", 10)
    assert (first.last_stable_offset, first.log_start_offset) == (9, 2)
    assert first.aborted_transactions == [(7, 3)] and first.current_leader is None
    assert (second.tp, second.error_code, second.current_leader) == (A1, 6, (2, 5))
    assert resp.node_endpoints == {2: ("h2", 9093, "r")}
    assert resp.unknown_topic_ids == [uuid.UUID(int=5)]


def test_hints_below_v16_are_not_read() -> None:
    body = _response(
        12,
        {
            "throttle_time": 0,
            "error_code": 0,
            "session_id": 0,
            "responses": [
                {
                    "topic": "a",
                    "partitions": [
                        _partition(
                            0, error_code=6, current_leader={"leader_id": 2, "leader_epoch": 5}
                        )
                    ],
                }
            ],
        },
    )
    (only,) = decode_fetch_response(12, body, {}).partitions
    assert (only.tp, only.error_code, only.current_leader) == (A0, 6, None)


def test_a_v4_response_has_no_session_fields() -> None:
    body = _response(
        4,
        {"throttle_time": 0, "responses": [{"topic": "b", "partitions": [_partition(0)]}]},
    )
    resp = decode_fetch_response(4, body, {})
    assert (resp.error_code, resp.session_id) == (0, 0)
    assert [p.tp for p in resp.partitions] == [B0]
