"""The client's hand-written ProduceRequest encoder and ProduceResponse decoder agree with
kio's generated codecs for every version they cover (v3-12)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from test_produce_codec import endpoints, results

from brook.protocol.api import request_class
from brook.protocol.framing import decode_kio
from brook.protocol.produce_codec import (
    PartitionProduceResult,
    decode_produce_response,
    encode_produce_request,
    encode_produce_response,
)
from brook.protocol.records import build_simple_batch

versions = st.integers(3, 12)
batches = st.lists(st.binary(min_size=0, max_size=30), min_size=1, max_size=4).map(
    lambda values: build_simple_batch(values)
)


@settings(max_examples=150)
@given(
    version=versions,
    acks=st.sampled_from([-1, 0, 1]),
    timeout=st.integers(0, 2**31 - 1),
    topics=st.lists(
        st.tuples(
            st.text(min_size=1, max_size=12),
            st.lists(st.tuples(st.integers(0, 100), batches), min_size=1, max_size=3),
        ),
        min_size=1,
        max_size=3,
    ),
    split=st.booleans(),
)
def test_request_decodes_with_kio(
    version: int, acks: int, timeout: int, topics: list, split: bool
) -> None:
    # A batch may be passed as several buffers (header and records); the bytes are the same,
    # and the buffers themselves are parts of the request, not copied into a bigger one.
    shaped = [
        (name, [(p, (b[:61], b[61:]) if split else b) for p, b in parts]) for name, parts in topics
    ]
    parts = encode_produce_request(version, acks, timeout, shaped)
    ids = {id(part) for part in parts}
    for _, ps in shaped:
        for _, records in ps:
            for piece in records if split else (records,):
                assert id(piece) in ids
    decoded = decode_kio(request_class(0, version), b"".join(bytes(p) for p in parts))
    assert decoded.transactional_id is None
    assert decoded.acks == acks
    assert [t.name for t in decoded.topic_data] == [name for name, _ in topics]
    for topic_data, (_, expected) in zip(decoded.topic_data, topics, strict=True):
        got = [(int(p.index), bytes(p.records)) for p in topic_data.partition_data]
        assert got == [(p, b) for p, b in expected]


@settings(max_examples=150)
@given(
    version=versions,
    topics=st.lists(
        st.tuples(st.text(min_size=1, max_size=10), st.lists(results, max_size=3)), max_size=3
    ),
    nodes=endpoints,
    throttle=st.integers(0, 10000),
)
def test_response_decoder_reads_what_the_encoder_wrote(
    version: int, topics: list, nodes: list, throttle: int
) -> None:
    raw = encode_produce_response(version, topics, nodes, throttle)
    decoded = decode_produce_response(version, raw)
    assert decoded.throttle_ms == throttle
    assert [name for name, _ in decoded.topics] == [name for name, _ in topics]
    for (_, got), (_, sent) in zip(decoded.topics, topics, strict=True):
        for g, s in zip(got, sent, strict=True):
            assert (g.index, g.error_code, g.base_offset, g.log_append_time_ms) == (
                s.index,
                s.error_code,
                s.base_offset,
                s.log_append_time_ms,
            )
            if version >= 5:
                assert g.log_start_offset == s.log_start_offset
            if version >= 8:
                assert g.error_message == s.error_message
                assert g.record_errors == (s.record_errors or None)
            leader = s.current_leader if version >= 10 else None
            assert g.current_leader == (None if leader in (None, (-1, -1)) else leader)
    if version >= 10 and nodes:
        assert decoded.node_endpoints == [tuple(n) for n in nodes]
    else:
        assert not decoded.node_endpoints


def test_truncated_response_is_an_error() -> None:
    raw = encode_produce_response(9, [("t", [PartitionProduceResult(0)])])
    try:
        decode_produce_response(9, raw[:-6])
    except ValueError as exc:
        assert "truncated" in str(exc)
    else:
        raise AssertionError("a truncated response decoded")
