"""Request and response headers for flexible and non-flexible versions."""

from __future__ import annotations

import pytest

from brook.protocol.api import ApiKey
from brook.protocol.framing import (
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
