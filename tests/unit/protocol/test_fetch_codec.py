"""The hand-written FetchResponse encoder is byte-identical to kio's, for every version."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from brook.protocol.api import response_class
from brook.protocol.build import build
from brook.protocol.fetch_codec import encode_fetch_response
from brook.protocol.framing import encode_kio
from brook.protocol.records import build_simple_batch


@dataclass
class Part:
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes
    preferred_read_replica: int = -1
    diverging_epoch: tuple[int, int] | None = None
    current_leader: tuple[int, int] | None = None
    aborted_transactions: tuple[tuple[int, int], ...] = ()


parts = st.builds(
    Part,
    error_code=st.sampled_from([0, 1, 6, 74]),
    high_watermark=st.integers(-1, 2**40),
    last_stable_offset=st.integers(-1, 2**40),
    log_start_offset=st.integers(-1, 2**40),
    records=st.one_of(
        st.just(b""),
        st.lists(st.binary(max_size=30), min_size=1, max_size=3).map(build_simple_batch),
    ),
    preferred_read_replica=st.integers(-1, 3),
    diverging_epoch=st.one_of(st.none(), st.tuples(st.integers(0, 9), st.integers(0, 999))),
    current_leader=st.one_of(st.none(), st.tuples(st.integers(0, 9), st.integers(0, 99))),
    aborted_transactions=st.lists(
        st.tuples(st.integers(0, 2**62), st.integers(0, 2**40)), max_size=3
    ).map(tuple),
)


def _reference(
    version: int, topic: Any, ps: list[Part], session: int, committed: bool, eps: list
) -> bytes:
    data = {
        "throttle_time": 0,
        "error_code": 0,
        "session_id": session,
        "responses": [
            {
                "topic": topic,
                "topic_id": topic,
                "partitions": [
                    {
                        "partition_index": i,
                        "error_code": p.error_code,
                        "high_watermark": p.high_watermark,
                        "last_stable_offset": p.last_stable_offset,
                        "log_start_offset": p.log_start_offset,
                        "aborted_transactions": (
                            [
                                {"producer_id": pid, "first_offset": first}
                                for pid, first in p.aborted_transactions
                            ]
                            if committed
                            else None
                        ),
                        "preferred_read_replica": p.preferred_read_replica,
                        "records": p.records,
                        **(
                            {
                                "diverging_epoch": {
                                    "epoch": p.diverging_epoch[0],
                                    "end_offset": p.diverging_epoch[1],
                                }
                            }
                            if p.diverging_epoch
                            else {}
                        ),
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
                    for i, p in enumerate(ps)
                ],
            }
        ],
        "node_endpoints": [
            {"node_id": n, "host": h, "port": port, "rack": r} for n, h, port, r in eps
        ],
    }
    return encode_kio(build(response_class(1, version), data))


@given(st.integers(4, 18), st.lists(parts, max_size=4), st.integers(0, 2**31 - 1), st.booleans())
def test_matches_kio(version: int, ps: list[Part], session: int, committed: bool) -> None:
    if version < 12:
        for p in ps:
            p.diverging_epoch = p.current_leader = None
    if version < 11:
        for p in ps:
            p.preferred_read_replica = -1
    if version < 7:
        session = 0
    eps = [(1, "h", 9092, None)] if version >= 16 else []
    topic: Any = uuid.uuid4() if version >= 13 else "t"
    chunks = encode_fetch_response(
        version,
        [(topic, list(enumerate(ps)))],
        session_id=session,
        node_endpoints=eps,
        read_committed=committed,
    )
    assert b"".join(chunks) == _reference(version, topic, ps, session, committed, eps)


def test_record_blobs_are_passed_through_uncopied() -> None:
    blob = build_simple_batch([b"x" * 100])
    chunks = encode_fetch_response(12, [("t", [(0, Part(0, 1, 1, 0, blob))])])
    assert any(c is blob for c in chunks)
