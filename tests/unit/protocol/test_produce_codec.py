"""The hand-written ProduceResponse encoder is byte-identical to kio's, for every version."""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from brook.protocol.api import response_class
from brook.protocol.build import build
from brook.protocol.framing import encode_kio
from brook.protocol.produce_codec import PartitionProduceResult, encode_produce_response

results = st.builds(
    PartitionProduceResult,
    index=st.integers(0, 1000),
    error_code=st.sampled_from([0, 1, 6, 10, 87]),
    base_offset=st.integers(-1, 2**40),
    log_append_time_ms=st.integers(-1, 2**41),
    log_start_offset=st.integers(-1, 2**40),
    error_message=st.one_of(st.none(), st.text(max_size=20)),
    current_leader=st.one_of(st.none(), st.tuples(st.integers(0, 5), st.integers(0, 99))),
    record_errors=st.one_of(
        st.none(),
        st.lists(
            st.tuples(st.integers(0, 2**31 - 1), st.one_of(st.none(), st.text(max_size=30))),
            max_size=4,
        ),
    ),
)
endpoints = st.lists(
    st.tuples(
        st.integers(0, 9),
        st.text(min_size=1, max_size=9),
        st.integers(1, 65535),
        st.one_of(st.none(), st.text(max_size=4)),
    ),
    max_size=2,
    unique_by=lambda e: e[0],
)


def _reference(
    version: int,
    topic: Any,
    parts: list[PartitionProduceResult],
    eps: list[tuple[int, str, int, str | None]],
) -> bytes:
    data = {
        "responses": [
            {
                "name": topic,
                "topic_id": topic,
                "partition_responses": [
                    {
                        "index": p.index,
                        "error_code": p.error_code,
                        "base_offset": p.base_offset,
                        "log_append_time": p.log_append_time_ms,
                        "log_start_offset": p.log_start_offset,
                        "record_errors": [
                            {"batch_index": i, "batch_index_error_message": m}
                            for i, m in p.record_errors or ()
                        ],
                        "error_message": p.error_message,
                        **(
                            {
                                "current_leader": {
                                    "leader_id": p.current_leader[0],
                                    "leader_epoch": p.current_leader[1],
                                }
                            }
                            if p.current_leader
                            else {}
                        ),
                    }
                    for p in parts
                ],
            }
        ],
        "throttle_time": 0,
        "node_endpoints": [
            {"node_id": n, "host": h, "port": port, "rack": r} for n, h, port, r in eps
        ],
    }
    return encode_kio(build(response_class(0, version), data))


@given(st.integers(3, 13), st.lists(results, max_size=4), endpoints)
def test_matches_kio(version: int, parts: list[PartitionProduceResult], eps: list) -> None:
    if version < 10:
        eps = []
        for p in parts:
            p.current_leader = None
    if version < 8:
        for p in parts:
            p.error_message = None
            p.record_errors = None
    topic: Any = uuid.uuid4() if version >= 13 else "topic-a"
    mine = encode_produce_response(version, [(topic, parts)], eps)
    assert mine == _reference(version, topic, parts, eps)
