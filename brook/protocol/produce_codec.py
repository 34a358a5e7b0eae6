"""Hand-written Produce codecs: the broker's response encoder (v3-13), byte-identical to kio's
but about 14x faster, and the client's request encoder and response decoder (v3-12).

Produce responses are on the hot path of every producer, so they are not built through kio
dataclasses. Tests compare the bytes with kio's encoder for every version.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from .primitives import compact_string, legacy_string, uvarint

_PART_V3 = struct.Struct(">ihqq")  # index, error, base offset, log append time
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_LEADER = struct.Struct(">ii")


@dataclass(slots=True)
class PartitionProduceResult:
    index: int
    error_code: int = 0
    base_offset: int = -1
    log_append_time_ms: int = -1
    log_start_offset: int = -1
    error_message: str | None = None
    current_leader: tuple[int, int] | None = None  # KIP-951 (v10+), only with error 6
    # KIP-467 (v8+): (batch index, message) of each record that made the batch invalid.
    record_errors: list[tuple[int, str | None]] | None = None


NodeEndpoint = tuple[int, str, int, str | None]  # id, host, port, rack


def encode_produce_response(
    version: int,
    topics: Sequence[tuple[str | uuid.UUID, Sequence[PartitionProduceResult]]],
    node_endpoints: Sequence[NodeEndpoint] = (),
    throttle_ms: int = 0,
) -> bytes:
    flexible = version >= 9
    out: list[bytes] = [uvarint(len(topics) + 1) if flexible else _INT32.pack(len(topics))]
    for topic, partitions in topics:
        if version >= 13:
            assert isinstance(topic, uuid.UUID)
            out.append(topic.bytes)
        elif flexible:
            out.append(compact_string(str(topic)))
        else:
            out.append(legacy_string(str(topic)))
        out.append(uvarint(len(partitions) + 1) if flexible else _INT32.pack(len(partitions)))
        for p in partitions:
            out.append(_PART_V3.pack(p.index, p.error_code, p.base_offset, p.log_append_time_ms))
            if version >= 5:
                out.append(_INT64.pack(p.log_start_offset))
            if version >= 8:
                if p.record_errors:
                    _record_errors(out, p.record_errors, flexible)
                else:
                    out.append(b"\x01" if flexible else b"\x00\x00\x00\x00")
                if flexible:
                    out.append(compact_string(p.error_message))
                else:
                    out.append(legacy_string(p.error_message))
            if flexible:
                leader = p.current_leader if version >= 10 else None
                if leader is None or leader == (-1, -1):
                    out.append(b"\x00")
                else:
                    out.append(b"\x01\x00\x09" + _LEADER.pack(*leader) + b"\x00")
        if flexible:
            out.append(b"\x00")
    out.append(_INT32.pack(throttle_ms))
    if flexible:
        if version >= 10 and node_endpoints:
            body = [uvarint(len(node_endpoints) + 1)]
            for node_id, host, port, rack in node_endpoints:
                body.append(_INT32.pack(node_id))
                body.append(compact_string(host))
                body.append(_INT32.pack(port))
                body.append(compact_string(rack))
                body.append(b"\x00")
            payload = b"".join(body)
            out.append(b"\x01\x00" + uvarint(len(payload)) + payload)
        else:
            out.append(b"\x00")
    return b"".join(out)


def _record_errors(
    out: list[bytes], errors: Sequence[tuple[int, str | None]], flexible: bool
) -> None:
    out.append(uvarint(len(errors) + 1) if flexible else _INT32.pack(len(errors)))
    for index, message in errors:
        out.append(_INT32.pack(index))
        if flexible:
            out.append(compact_string(message))
            out.append(b"\x00")
        else:
            out.append(legacy_string(message))


# ---------------------------------------------------------------------------------------------
# Client side: the ProduceRequest encoder and the ProduceResponse decoder (v3-12, topic names).
# Record batches are passed through as buffers: the request comes back as a list of parts to
# write with ``writelines``, never joined into one copy.
# ---------------------------------------------------------------------------------------------

Buffer = bytes | bytearray | memoryview
_INT16 = struct.Struct(">h")
_REQ_HEAD = struct.Struct(">hi")  # acks, timeout
_PARTITION_ERROR = struct.Struct(">ihqq")  # index, error, base offset, log append time


def encode_produce_request(
    version: int,
    acks: int,
    timeout_ms: int,
    topics: Sequence[tuple[str, Sequence[tuple[int, Buffer | Sequence[Buffer]]]]],
    transactional_id: str | None = None,
) -> list[Buffer]:
    """A ProduceRequest body (v3-12) as a list of parts; a partition's records (one buffer, or
    several that together form its batch) are parts of their own."""
    if not 3 <= version <= 12:
        raise ValueError(f"cannot encode Produce v{version} (v3-12 supported)")
    flexible = version >= 9
    head = [
        compact_string(transactional_id) if flexible else legacy_string(transactional_id),
        _REQ_HEAD.pack(acks, timeout_ms),
        uvarint(len(topics) + 1) if flexible else _INT32.pack(len(topics)),
    ]
    out: list[Buffer] = []
    pending = head
    for topic, partitions in topics:
        pending.append(compact_string(topic) if flexible else legacy_string(topic))
        pending.append(uvarint(len(partitions) + 1) if flexible else _INT32.pack(len(partitions)))
        for index, records in partitions:
            pieces = (records,) if isinstance(records, bytes | bytearray | memoryview) else records
            size = sum(len(piece) for piece in pieces)
            pending.append(_INT32.pack(index))
            pending.append(uvarint(size + 1) if flexible else _INT32.pack(size))
            out.append(b"".join(pending))
            out.extend(pieces)
            pending = [b"\x00"] if flexible else []  # partition tagged fields
        if flexible:
            pending.append(b"\x00")  # topic tagged fields
    if flexible:
        pending.append(b"\x00")
    if pending:
        out.append(b"".join(pending))
    return out


@dataclass(slots=True)
class ProduceResponse:
    """A decoded ProduceResponse: per topic its partition results, plus KIP-951 endpoints."""

    topics: list[tuple[str, list[PartitionProduceResult]]]
    throttle_ms: int = 0
    node_endpoints: list[NodeEndpoint] | None = None


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: Buffer) -> None:
        self.data = data
        self.pos = 0

    def uvarint(self) -> int:
        data = self.data
        pos = self.pos
        byte = data[pos]
        if byte < 0x80:
            self.pos = pos + 1
            return byte
        result = 0
        for shift in (0, 7, 14, 21, 28):  # 5 bytes at most, as Kafka reads them
            byte = data[pos]
            pos += 1
            result |= (byte & 0x7F) << shift
            if not byte & 0x80:
                self.pos = pos
                return result
        raise ValueError("varint longer than 5 bytes")

    def int32(self) -> int:
        value = _INT32.unpack_from(self.data, self.pos)[0]
        self.pos += 4
        return int(value)

    def int64(self) -> int:
        value = _INT64.unpack_from(self.data, self.pos)[0]
        self.pos += 8
        return int(value)

    def array_length(self, flexible: bool) -> int:
        """A non-nullable array's count, checked against the bytes that remain."""
        count = self.uvarint() - 1 if flexible else self.int32()
        if count < 0:
            raise ValueError(f"array length {count} in a non-nullable array")
        if count > len(self.data) - self.pos:
            raise ValueError(
                f"array of {count} elements but only {len(self.data) - self.pos} bytes remain"
            )
        return count

    def string(self, flexible: bool) -> str | None:
        if flexible:
            size = self.uvarint() - 1
        else:
            size = _INT16.unpack_from(self.data, self.pos)[0]
            self.pos += 2
        if size < 0:
            return None
        start = self.pos
        self.pos = start + size
        if self.pos > len(self.data):
            raise ValueError("string runs past the end of the response")
        return bytes(self.data[start : self.pos]).decode("utf-8", "replace")

    def skip_tags(self) -> None:
        for _ in range(self.uvarint()):
            self.uvarint()
            self.pos += self.uvarint()


def decode_produce_response(version: int, data: Buffer) -> ProduceResponse:
    """Decode a ProduceResponse body (v3-12); raises ValueError when it is malformed."""
    if not 3 <= version <= 12:
        raise ValueError(f"cannot decode Produce v{version} (v3-12 supported)")
    flexible = version >= 9
    r = _Reader(data)
    try:
        topics: list[tuple[str, list[PartitionProduceResult]]] = []
        for _ in range(r.array_length(flexible)):
            name = r.string(flexible) or ""
            results: list[PartitionProduceResult] = []
            for _ in range(r.array_length(flexible)):
                index, error, base_offset, append_time = _PARTITION_ERROR.unpack_from(r.data, r.pos)
                r.pos += _PARTITION_ERROR.size
                result = PartitionProduceResult(index, error, base_offset, append_time)
                if version >= 5:
                    result.log_start_offset = r.int64()
                if version >= 8:
                    count = r.array_length(flexible)
                    if count > 0:
                        errors: list[tuple[int, str | None]] = []
                        for _ in range(count):
                            batch_index = r.int32()
                            errors.append((batch_index, r.string(flexible)))
                            if flexible:
                                r.skip_tags()
                        result.record_errors = errors
                    result.error_message = r.string(flexible)
                if flexible:
                    for _ in range(r.uvarint()):
                        tag = r.uvarint()
                        size = r.uvarint()
                        if tag == 0 and version >= 10:
                            leader = _LEADER.unpack_from(r.data, r.pos)
                            result.current_leader = (int(leader[0]), int(leader[1]))
                        r.pos += size
                results.append(result)
            if flexible:
                r.skip_tags()
            topics.append((name, results))
        throttle = r.int32()
        endpoints: list[NodeEndpoint] | None = None
        if flexible:
            for _ in range(r.uvarint()):
                tag = r.uvarint()
                size = r.uvarint()
                end = r.pos + size
                if tag == 0 and version >= 10:
                    endpoints = []
                    for _ in range(r.array_length(True)):
                        node_id = r.int32()
                        host = r.string(True) or ""
                        port = r.int32()
                        rack = r.string(True)
                        r.skip_tags()
                        endpoints.append((node_id, host, port, rack))
                r.pos = end
    except (IndexError, struct.error) as exc:
        raise ValueError(f"truncated Produce v{version} response: {exc}") from None
    if r.pos > len(r.data):
        raise ValueError(f"truncated Produce v{version} response")
    return ProduceResponse(topics, throttle, endpoints)
