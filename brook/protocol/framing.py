"""Frames, request headers and response headers, for both ends of a connection.

A frame is a 4-byte big-endian size followed by that many bytes. Request headers are v1
(non-flexible APIs) or v2 (flexible: adds tagged fields); response headers are v0 or v1,
except that ApiVersions always answers with header v0 (KIP-511).
"""

from __future__ import annotations

import io
from collections.abc import Callable
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


READ_BUFFER_SIZE = 256 * 1024
"""The most one read takes from a socket: the size of the read buffer connections share."""

_FIRST_BODY_BYTES = 64 * 1024

Reserve = Callable[[int, bool], bool]
"""``reserve(size, force)``: take ``size`` bytes from a memory pool; ``force`` takes them even
when the pool is exhausted. False means refused (the frame waits)."""


class FrameAssembler:
    """Cuts a byte stream into frames for ``asyncio.BufferedProtocol`` users, holding memory
    only for bytes that have arrived.

    Between frames a connection holds nothing: the socket reads into ``read_buffer``, which
    every connection of an event loop may share (BufferedProtocol's ``get_buffer`` and
    ``buffer_updated`` come in pairs, nothing runs between them), and the frames complete in
    it are copied out. Only an incomplete frame is kept: its bytes as they are while its size
    prefix is incomplete or the frame is small (at most a quarter of the read buffer: they
    go back to the front of the read buffer for the next read), else a ``bytearray`` of its
    own that the socket reads straight into and that doubles as the body arrives (from
    64 KiB up to the declared size). A size prefix declaring 100 MiB and nothing after it
    therefore costs 64 KiB, not 100 MiB.

    ``reserve`` (queued.max.request.bytes) is asked for every frame when its size is known
    (a small frame's once it is complete), as Kafka's memory pool is when it allocates a
    request's buffer. Frames complete in the read buffer, and frames no larger than it, are
    taken with ``force``: their bytes are
    already here or nearly so, and small requests (metadata, heartbeats, fetches) must not
    wait behind large ones that a few clients declare and never finish. A larger frame whose
    reservation is refused waits: ``waiting_for_memory`` is set, its bytes so far are kept,
    and the owner stops reading until :meth:`retry` succeeds. Every frame returned holds a
    reservation of ``len(frame)`` that the owner releases once the frame is handled;
    ``reserved`` is what the incomplete frame holds.
    """

    def __init__(
        self,
        max_frame_size: int,
        read_buffer: bytearray | None = None,
        reserve: Reserve | None = None,
    ) -> None:
        self.max_frame_size = max_frame_size
        self._shared = read_buffer
        self._reserve = reserve
        # An incomplete frame without a buffer of its own (size prefix included): a partial
        # prefix, a small frame, or a frame waiting for memory.
        self._head = b""
        self._body: bytearray | None = None
        self._filled = 0
        self._size = 0
        self.reserved = 0
        self.waiting_for_memory = False

    @property
    def buffered(self) -> int:
        """Bytes held for the incomplete frame (its buffer's capacity)."""
        return len(self._head) + (len(self._body) if self._body is not None else 0)

    def _read_buffer(self) -> bytearray:
        if self._shared is None:
            self._shared = bytearray(READ_BUFFER_SIZE)
        return self._shared

    def get_buffer(self) -> memoryview:
        if self.waiting_for_memory:
            # The owner stopped reading; if one more read comes anyway, the frame goes ahead
            # rather than lose bytes.
            self._start_body(force=True)
        body = self._body
        if body is not None:
            if self._filled == len(body):
                body = self._grow(body)
            return memoryview(body)[self._filled :]
        buf = self._read_buffer()
        head = self._head
        if head:
            buf[: len(head)] = head
        return memoryview(buf)[len(head) :]

    def _grow(self, body: bytearray) -> bytearray:
        """Double the frame's buffer (up to its size): in place (realloc, zeros only where the
        next reads land) unless a view of it is still alive (the event loop drops its view
        after ``buffer_updated``), then into a copy."""
        size = min(self._size, 2 * len(body))
        try:
            body += bytes(size - len(body))
        except BufferError:
            grown = bytearray(size)
            grown[: self._filled] = body
            self._body = body = grown
        return body

    def buffer_updated(self, nbytes: int) -> list[bytes | bytearray]:
        """Account for ``nbytes`` received; return the frames now complete.

        Raises FrameError for a size prefix that is negative or above ``max_frame_size``.
        """
        body = self._body
        if body is not None:
            self._filled += nbytes
            if self._filled < self._size:
                return []
            self._body = None
            self.reserved = 0
            return [body]
        buf = self._read_buffer()
        end = len(self._head) + nbytes
        self._head = b""
        frames: list[bytes | bytearray] = []
        start = 0
        with memoryview(buf) as view:
            while end - start >= 4:
                size = int.from_bytes(buf[start : start + 4], "big", signed=True)
                if size < 0 or size > self.max_frame_size:
                    raise FrameError(
                        f"frame of {size} bytes exceeds the limit of {self.max_frame_size}"
                        if size > 0
                        else f"invalid frame size {size}"
                    )
                if end - start - 4 >= size:
                    frames.append(bytes(view[start + 4 : start + 4 + size]))
                    start += 4 + size
                    continue
                if 4 + size <= len(buf) // 4:
                    # A small frame cut by the end of the read: carried to the front of
                    # the next one, so that one read goes on serving many frames.
                    break
                self._head, self._size = bytes(view[start:end]), size
                start = end
                self._start_body(force=size <= len(buf))
            if start < end:
                self._head = bytes(view[start:end])
        if frames and self._reserve is not None:
            self._reserve(sum(len(f) for f in frames), True)
        return frames

    def _start_body(self, force: bool) -> None:
        """Give the frame in ``_head`` its own buffer, if the pool lets it."""
        size = self._size
        if self._reserve is not None and not self._reserve(size, force):
            self.waiting_for_memory = True
            return
        self.waiting_for_memory = False
        self.reserved = size
        have = len(self._head) - 4
        body = bytearray(min(size, max(_FIRST_BODY_BYTES, 2 * have)))
        body[:have] = memoryview(self._head)[4:]
        self._body, self._filled, self._head = body, have, b""

    def retry(self) -> bool:
        """Ask the pool again for a waiting frame; True when reading may go on."""
        if self.waiting_for_memory:
            self._start_body(force=False)
        return not self.waiting_for_memory

    def discard(self) -> int:
        """Drop the incomplete frame (the connection is gone); returns its reservation."""
        reserved = self.reserved
        self._head, self._body, self._filled, self._size = b"", None, 0, 0
        self.reserved = 0
        self.waiting_for_memory = False
        return reserved
