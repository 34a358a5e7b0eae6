"""Frames, request headers and response headers, for both ends of a connection.

A frame is a 4-byte big-endian size followed by that many bytes. Request headers are v1
(non-flexible APIs) or v2 (flexible: adds tagged fields); response headers are v0 or v1,
except that ApiVersions always answers with header v0 (KIP-511).
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from kio.serial import entity_reader, entity_writer

from .api import ApiKey, is_flexible
from .primitives import INT16, INT32, legacy_string, skip_tagged_fields
from .schema_walk import walk_message
from .unknown_tags import apply_tag_edits

HEADER_PREFIX = 8  # api_key int16, api_version int16, correlation_id int32


class FrameError(ValueError):
    """A frame that cannot be parsed: the connection must be closed."""


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body_offset: int


def parse_request_header(frame: bytes, flexible: bool) -> RequestHeader:
    """Parse a request header; ``flexible`` selects header v2 (tagged fields after client id)."""
    if len(frame) < HEADER_PREFIX + 2:
        raise FrameError("frame shorter than a request header")
    api_key, api_version = INT16.unpack_from(frame, 0)[0], INT16.unpack_from(frame, 2)[0]
    correlation_id = INT32.unpack_from(frame, 4)[0]
    size = INT16.unpack_from(frame, 8)[0]
    pos = 10
    client_id: str | None = None
    if size >= 0:
        if pos + size > len(frame):
            raise FrameError("client id runs past the frame")
        client_id = frame[pos : pos + size].decode("utf-8", "replace")
        pos += size
    if flexible:
        try:
            pos = skip_tagged_fields(frame, pos)
        except ValueError as exc:
            raise FrameError(str(exc)) from None
    return RequestHeader(api_key, api_version, correlation_id, client_id, pos)


def peek_api(frame: bytes) -> tuple[int, int, int]:
    """(api_key, api_version, correlation_id) from the fixed prefix of a request frame."""
    if len(frame) < HEADER_PREFIX:
        raise FrameError("frame shorter than a request header")
    return (
        INT16.unpack_from(frame, 0)[0],
        INT16.unpack_from(frame, 2)[0],
        INT32.unpack_from(frame, 4)[0],
    )


def response_header(correlation_id: int, api_key: int, api_version: int) -> bytes:
    """Response header bytes (without the frame size) for the given request."""
    if api_key != ApiKey.API_VERSIONS and is_flexible(api_key, api_version):
        return INT32.pack(correlation_id) + b"\x00"
    return INT32.pack(correlation_id)


def encode_kio(entity: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(entity))(buf, entity)
    return buf.getvalue()


def decode_kio(cls: Any, data: bytes | memoryview, offset: int = 0) -> Any:
    """``cls`` read from ``data[offset:]``, for requests (broker) and responses (client).

    The bytes are walked along the schema first (schema_walk.py): kio's native reader would
    abort the process on an array count larger than memory, so a length or count beyond the
    bytes that remain, or a null where the schema has none, raises MalformedMessage (a
    ValueError) before kio sees the body. Tagged fields the schema does not know are dropped,
    as Kafka skips them (kio refuses them: see unknown_tags.py).
    """
    edits = walk_message(cls, data, offset)
    if edits:
        data, offset = apply_tag_edits(data, offset, edits), 0
    value, _size = entity_reader(cls)(data, offset)
    return value


def frame(*parts: bytes) -> bytes:
    size = sum(len(p) for p in parts)
    return INT32.pack(size) + b"".join(parts)


def encode_request(
    api_key: int, api_version: int, correlation_id: int, client_id: str | None, body: bytes
) -> bytes:
    """A whole request frame (size prefix included) around an encoded body."""
    head = INT16.pack(api_key) + INT16.pack(api_version) + INT32.pack(correlation_id)
    head += legacy_string(client_id)
    if is_flexible(api_key, api_version):
        head += b"\x00"
    return frame(head, body)


def response_body_offset(frame_bytes: bytes, api_key: int, api_version: int) -> int:
    """Where the body starts in a response frame (size prefix removed)."""
    if api_key != ApiKey.API_VERSIONS and is_flexible(api_key, api_version):
        return skip_tagged_fields(frame_bytes, 4)
    return 4


class FrameAssembler:
    """Cuts a byte stream into frames for ``asyncio.BufferedProtocol`` users, copying as little
    as possible: small frames are cut from a shared read buffer; a frame larger than what the
    buffer holds gets a ``bytearray`` of its own that the socket reads straight into.

    ``get_buffer`` / ``buffer_updated`` mirror the BufferedProtocol calls; complete frames
    (without their size prefix) come out of ``buffer_updated``.
    """

    def __init__(self, max_frame_size: int, buffer_size: int = 256 * 1024) -> None:
        self.max_frame_size = max_frame_size
        self._buf = bytearray(buffer_size)
        self._view = memoryview(self._buf)
        self._start = 0
        self._end = 0
        self._big: bytearray | None = None
        self._big_pos = 0

    def get_buffer(self) -> memoryview:
        if self._big is not None:
            return memoryview(self._big)[self._big_pos :]
        if self._end == len(self._buf):
            pending = self._end - self._start
            self._buf[:pending] = self._buf[self._start : self._end]
            self._start, self._end = 0, pending
        return self._view[self._end :]

    def buffer_updated(self, nbytes: int) -> list[bytes | bytearray]:
        """Account for ``nbytes`` received; return the frames now complete.

        Raises FrameError for a size prefix that is negative or above ``max_frame_size``.
        """
        frames: list[bytes | bytearray] = []
        if self._big is not None:
            self._big_pos += nbytes
            if self._big_pos < len(self._big):
                return frames
            frames.append(self._big)
            self._big = None
            return frames
        self._end += nbytes
        buf, start, end = self._buf, self._start, self._end
        while end - start >= 4:
            size = int.from_bytes(buf[start : start + 4], "big", signed=True)
            if size < 0 or size > self.max_frame_size:
                raise FrameError(
                    f"frame of {size} bytes exceeds the limit of {self.max_frame_size}"
                    if size > 0
                    else f"invalid frame size {size}"
                )
            have = end - start - 4
            if have >= size:
                frames.append(bytes(self._view[start + 4 : start + 4 + size]))
                start += 4 + size
                continue
            if size > len(buf) - start - 4:
                big = bytearray(size)
                big[:have] = self._view[start + 4 : end]
                self._big, self._big_pos = big, have
                start = end
            break
        if start == end:
            start = end = 0
        self._start, self._end = start, end
        return frames
