"""A follower's Fetch v17 on the wire: the hand-written request is byte-identical to kio's
for any session round (hypothesis), kio reads it back with the follower's ReplicaState, and
a response decodes to one tuple per partition carried, DivergingEpoch included."""

from __future__ import annotations

import uuid

from hypothesis import example, given, settings
from hypothesis import strategies as st

from brook.broker.replica_fetcher.codec import (
    FETCH_VERSION,
    FetchSettings,
    decode_fetch_response,
    encode_fetch_request,
    encode_fetch_request_kio,
)
from brook.broker.replica_fetcher.session import FetchPosition, SessionRequest
from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio

INT32 = st.integers(-(2**31), 2**31 - 1)
INT64 = st.integers(-(2**63), 2**63 - 1)
TOPIC_IDS = [uuid.UUID(int=i + 1) for i in range(4)]
positions = st.builds(
    FetchPosition,
    st.sampled_from(TOPIC_IDS),
    INT64,
    INT64,
    INT32,
    INT32,
    INT32,
)
keys = st.tuples(st.sampled_from(["a", "b", "c"]), st.integers(0, 2**31 - 1))
requests = st.builds(
    SessionRequest,
    INT32,
    INT32,
    st.booleans(),
    st.dictionaries(keys, positions, max_size=40),
    st.dictionaries(keys, st.sampled_from(TOPIC_IDS), max_size=10),
)
fetch_settings = st.builds(FetchSettings, INT32, INT32, INT32, INT32, INT32)


@settings(max_examples=300, deadline=None)
@given(requests, fetch_settings, INT64)
@example(SessionRequest(0, 0, True, {}), FetchSettings(-1), -1)  # ReplicaState at its default
def test_the_hand_written_request_is_kios(
    request: SessionRequest, fetch: FetchSettings, broker_epoch: int
) -> None:
    assert encode_fetch_request(request, fetch, broker_epoch) == encode_fetch_request_kio(
        request, fetch, broker_epoch
    )


def test_a_follower_names_itself_in_replica_state() -> None:
    tid = uuid.uuid4()
    request = SessionRequest(
        9,
        4,
        False,
        {("t", 3): FetchPosition(tid, 120, 7, 1 << 20, 5, 4)},
        {("t", 1): tid},
    )
    body = encode_fetch_request(request, FetchSettings(2, 500, 1, 10 << 20, 1 << 20), 88)
    decoded = decode_kio(request_class(ApiKey.FETCH, FETCH_VERSION), body)
    assert (decoded.replica_state.replica_id, decoded.replica_state.replica_epoch) == (2, 88)
    assert (decoded.session_id, decoded.session_epoch, decoded.min_bytes) == (9, 4, 1)
    assert decoded.max_wait.total_seconds() == 0.5
    part = decoded.topics[0].partitions[0]
    assert (decoded.topics[0].topic_id, part.partition, part.fetch_offset) == (tid, 3, 120)
    assert (part.current_leader_epoch, part.last_fetched_epoch, part.log_start_offset) == (
        5,
        4,
        7,
    )
    assert decoded.forgotten_topics_data[0].topic_id == tid
    assert list(decoded.forgotten_topics_data[0].partitions) == [1]


def test_a_response_decodes_to_one_tuple_per_partition() -> None:
    tid = uuid.uuid4()

    def part(index: int, diverging: tuple[int, int], records: bytes | None) -> dict:
        return {
            "partition_index": index,
            "error_code": 0 if index else 6,
            "high_watermark": 10 + index,
            "last_stable_offset": 10,
            "log_start_offset": index,
            "diverging_epoch": {"epoch": diverging[0], "end_offset": diverging[1]},
            "current_leader": {"leader_id": -1, "leader_epoch": -1},
            "snapshot_id": {"end_offset": -1, "epoch": -1},
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": records,
        }

    body = encode_kio(
        build(
            response_class(ApiKey.FETCH, FETCH_VERSION),
            {
                "throttle_time": 0,
                "error_code": 0,
                "session_id": 12,
                "responses": [
                    {
                        "topic_id": tid,
                        "partitions": [
                            part(0, (-1, -1), None),
                            part(1, (3, 40), None),
                            part(2, (-1, -1), b"batch"),
                        ],
                    }
                ],
                "node_endpoints": [],
            },
        )
    )
    result = decode_fetch_response(body)
    assert (result.error_code, result.session_id) == (0, 12)
    assert [
        (p.partition, p.error_code, p.diverging_epoch, p.records) for p in result.partitions
    ] == [
        (0, 6, None, b""),
        (1, 0, (3, 40), b""),
        (2, 0, None, b"batch"),
    ]
    assert [(p.topic_id, p.high_watermark, p.log_start_offset) for p in result.partitions] == [
        (tid, 10, 0),
        (tid, 11, 1),
        (tid, 12, 2),
    ]
