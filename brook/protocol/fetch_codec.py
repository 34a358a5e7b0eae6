"""Hand-written FetchResponse encoder (v4-18) that leaves record blobs where they are.

The response is returned as a list of parts: small framing pieces built with struct, and
each partition's stored records as its own element, so the blobs read from the log go to
the socket (``transport.writelines``) without being copied into a response buffer. A records
element may be any sized object standing for stored bytes (the log's ``StoredSpan``, which
the connection reads from the segment as the socket drains); only its length is used here.
Tests compare the joined bytes with kio's encoder for every version.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Sequence, Sized
from typing import Protocol

from .primitives import compact_string, legacy_string, uvarint

_TOP_V7 = struct.Struct(">ihi")  # throttle, error, session id
_PART = struct.Struct(">ihqqq")  # index, error, hw, lso, log start (v5+)
_PART_V4 = struct.Struct(">ihqq")
_INT32 = struct.Struct(">i")
_EPOCH_END = struct.Struct(">iq")
_LEADER = struct.Struct(">ii")
_ABORTED = struct.Struct(">qq")  # producer id, first offset


class FetchPartitionData(Protocol):
    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: Sized
    preferred_read_replica: int
    diverging_epoch: tuple[int, int] | None
    current_leader: tuple[int, int] | None
    # (producer id, first offset) pairs; sent only to read_committed fetches
    aborted_transactions: Sequence[tuple[int, int]]


NodeEndpoint = tuple[int, str, int, str | None]


def encode_fetch_response(
    version: int,
    topics: Sequence[tuple[str | uuid.UUID, Sequence[tuple[int, FetchPartitionData]]]],
    *,
    error_code: int = 0,
    session_id: int = 0,
    node_endpoints: Sequence[NodeEndpoint] = (),
    read_committed: bool = False,
    throttle_ms: int = 0,
) -> list[Sized]:
    flexible = version >= 12
    parts: list[Sized] = []
    head = bytearray()
    if version >= 7:
        head += _TOP_V7.pack(throttle_ms, error_code, session_id)
    else:
        head += _INT32.pack(throttle_ms)
    head += uvarint(len(topics) + 1) if flexible else _INT32.pack(len(topics))
    none_aborted = (
        (b"\x01" if flexible else b"\x00\x00\x00\x00")
        if read_committed
        else (b"\x00" if flexible else b"\xff\xff\xff\xff")
    )
    for topic, partitions in topics:
        if version >= 13:
            assert isinstance(topic, uuid.UUID)
            head += topic.bytes
        elif flexible:
            head += compact_string(str(topic))
        else:
            head += legacy_string(str(topic))
        head += uvarint(len(partitions) + 1) if flexible else _INT32.pack(len(partitions))
        for index, p in partitions:
            if version >= 5:
                head += _PART.pack(
                    index, p.error_code, p.high_watermark, p.last_stable_offset, p.log_start_offset
                )
            else:
                head += _PART_V4.pack(index, p.error_code, p.high_watermark, p.last_stable_offset)
            txns = p.aborted_transactions if read_committed else ()
            if txns:
                head += uvarint(len(txns) + 1) if flexible else _INT32.pack(len(txns))
                for producer_id, first_offset in txns:
                    head += _ABORTED.pack(producer_id, first_offset)
                    if flexible:
                        head += b"\x00"
            else:
                head += none_aborted
            if version >= 11:
                head += _INT32.pack(p.preferred_read_replica)
            records = p.records
            size = len(records)
            head += uvarint(size + 1) if flexible else _INT32.pack(size)
            if size:
                parts.append(bytes(head))
                parts.append(records)
                head = bytearray()
            if flexible:
                tags = []
                if p.diverging_epoch is not None and p.diverging_epoch != (-1, -1):
                    tags.append(b"\x00\x0d" + _EPOCH_END.pack(*p.diverging_epoch) + b"\x00")
                if p.current_leader is not None and p.current_leader != (-1, -1):
                    tags.append(b"\x01\x09" + _LEADER.pack(*p.current_leader) + b"\x00")
                head += uvarint(len(tags))
                for tag in tags:
                    head += tag
        if flexible:
            head += b"\x00"
    if flexible:
        if version >= 16 and node_endpoints:
            body = bytearray(uvarint(len(node_endpoints) + 1))
            for node_id, host, port, rack in node_endpoints:
                body += _INT32.pack(node_id)
                body += compact_string(host)
                body += _INT32.pack(port)
                body += compact_string(rack)
                body += b"\x00"
            head += b"\x01\x00" + uvarint(len(body)) + body
        else:
            head += b"\x00"
    parts.append(bytes(head))
    return parts
