"""Request and response headers for flexible and non-flexible versions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brook.protocol.api import ApiKey
from brook.protocol.framing import (
    FrameAssembler,
    FrameError,
    encode_request,
    parse_request_header,
    response_body_offset,
    response_header,
)


def test_request_header_round_trip_v1_and_v2() -> None:
    for version, flexible in ((5, False), (12, True)):
        frame = encode_request(ApiKey.METADATA, version, 42, "client-1", b"BODY")[4:]
        header = parse_request_header(frame, flexible)
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            ApiKey.METADATA,
            version,
            42,
            "client-1",
        )
        assert frame[header.body_offset :] == b"BODY"


def test_null_client_id_and_truncated_frames() -> None:
    frame = encode_request(ApiKey.METADATA, 1, 7, None, b"")[4:]
    assert parse_request_header(frame, False).client_id is None
    with pytest.raises(FrameError):
        parse_request_header(frame[:6], False)
    bad = bytearray(encode_request(ApiKey.METADATA, 1, 7, "abc", b"")[4:])
    bad[9] = 50  # client id length beyond the frame
    with pytest.raises(FrameError):
        parse_request_header(bytes(bad), False)


def test_api_versions_responses_always_use_header_v0() -> None:
    assert response_header(9, ApiKey.API_VERSIONS, 3) == b"\x00\x00\x00\x09"
    assert response_header(9, ApiKey.METADATA, 12) == b"\x00\x00\x00\x09\x00"
    assert response_header(9, ApiKey.METADATA, 8) == b"\x00\x00\x00\x09"
    assert response_body_offset(b"\x00\x00\x00\x09\x00rest", ApiKey.METADATA, 12) == 5
    assert response_body_offset(b"\x00\x00\x00\x09rest", ApiKey.API_VERSIONS, 3) == 4


@given(st.lists(st.binary(max_size=3000), max_size=30), st.data())
def test_frame_assembler_reassembles_any_chunking(
    payloads: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(len(p).to_bytes(4, "big") + p for p in payloads)
    asm = FrameAssembler(max_frame_size=4000, buffer_size=1024)
    out: list[bytes] = []
    pos = 0
    while pos < len(stream):
        view = asm.get_buffer()
        assert len(view) > 0
        n = min(len(view), data.draw(st.integers(1, 2500)), len(stream) - pos)
        view[:n] = stream[pos : pos + n]
        pos += n
        out.extend(bytes(f) for f in asm.buffer_updated(n))
    assert out == payloads


def test_frame_assembler_refuses_oversized_and_negative_sizes() -> None:
    for prefix in ((5000).to_bytes(4, "big"), (-1).to_bytes(4, "big", signed=True)):
        asm = FrameAssembler(max_frame_size=4000)
        asm.get_buffer()[:4] = prefix
        with pytest.raises(FrameError):
            asm.buffer_updated(4)
