"""Tagged fields a request's schema does not know are dropped (Kafka skips them); the ones it
knows, and everything else, come through unchanged."""

from __future__ import annotations

import dataclasses
import struct
import types
import typing
from typing import Any

import pytest
from kio.schema.fetch.v12.request import FetchRequest
from kio.schema.produce.v9.request import ProduceRequest
from kio.serial import entity_reader

from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio
from brook.protocol.primitives import compact_string, uvarint
from brook.protocol.records import build_simple_batch
from brook.protocol.unknown_tags import UNKNOWN_TAG_ERROR, strip_unknown_tags


def tags(*fields: tuple[int, bytes]) -> bytes:
    return uvarint(len(fields)) + b"".join(uvarint(t) + uvarint(len(v)) + v for t, v in fields)


def produce_body(partition_tags: bytes, topic_tags: bytes, top_tags: bytes) -> bytes:
    records = build_simple_batch([b"hello"])
    partition = struct.pack(">i", 0) + uvarint(len(records) + 1) + records + partition_tags
    topic = compact_string("t") + uvarint(2) + partition + topic_tags
    return compact_string(None) + struct.pack(">hi", 1, 1000) + uvarint(2) + topic + top_tags


def test_unknown_tags_at_every_level_are_dropped() -> None:
    clean = produce_body(b"\x00", b"\x00", b"\x00")
    tagged = produce_body(tags((7, b"p")), tags((3, b"topic"), (9, b"")), tags((40, b"x" * 300)))
    with pytest.raises(KeyError, match=UNKNOWN_TAG_ERROR):
        entity_reader(ProduceRequest)(tagged, 0)  # kio alone refuses them
    stripped = strip_unknown_tags(ProduceRequest, b"head" + tagged, 4)
    assert stripped == clean
    request = decode_kio(ProduceRequest, b"head" + tagged, 4)
    assert request == decode_kio(ProduceRequest, clean)
    assert request.topic_data[0].partition_data[0].records == build_simple_batch([b"hello"])


def test_known_tags_are_kept() -> None:
    # Fetch v12 knows its top-level tag 0 (ClusterId); tag 5 is unknown.
    original = build(
        FetchRequest,
        {
            "cluster_id": "cluster-a",
            "replica_id": -1,
            "max_wait": 500,
            "min_bytes": 1,
            "max_bytes": 1 << 20,
            "isolation_level": 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [],
            "forgotten_topics_data": [],
            "rack_id": "",
        },
    )
    body = encode_kio(original)
    known = tags((0, compact_string("cluster-a")))
    assert body.endswith(known)
    with_unknown = body[: -len(known)] + tags((0, compact_string("cluster-a")), (5, b"zz"))
    stripped = strip_unknown_tags(FetchRequest, with_unknown)
    assert stripped == body
    assert decode_kio(FetchRequest, stripped) == original


def test_bodies_that_do_not_follow_the_schema_are_refused() -> None:
    tagged = produce_body(tags((7, b"p")), b"\x00", b"\x00")
    with pytest.raises(ValueError):
        strip_unknown_tags(ProduceRequest, tagged[:-4])


def test_bytes_after_the_body_are_left_alone_as_kafka_leaves_them() -> None:
    tagged = produce_body(tags((7, b"p")), b"\x00", b"\x00")
    clean = produce_body(b"\x00", b"\x00", b"\x00")
    assert strip_unknown_tags(ProduceRequest, tagged + b"\x07") == clean + b"\x07"
    assert decode_kio(ProduceRequest, tagged + b"\x07") == decode_kio(ProduceRequest, clean)


def flexible_schemas() -> list[Any]:
    return [
        pytest.param(cls, id=f"{cls.__name__}-v{version}")
        for key in ApiKey
        for version in range(20)
        for cls in (request_class(int(key), version), response_class(int(key), version))
        if cls is not None and cls.__flexible__
    ]


@pytest.mark.parametrize("cls", flexible_schemas())
def test_every_flexible_schema_skips_an_unknown_top_level_tag(cls: Any) -> None:
    # The smallest body of each schema: zeros for numbers, empty strings and arrays.
    body = minimal_body(cls)
    expected = decode_kio(cls, body)
    with_unknown = body[:-1] + tags((31_000, b"future"))
    assert strip_unknown_tags(cls, with_unknown) == body
    assert decode_kio(cls, with_unknown) == expected  # decode_kio skips it by itself


def minimal_body(cls: type) -> bytes:
    out = b""
    for f in dataclasses.fields(cls):
        if "tag" in f.metadata:
            continue
        kafka_type = f.metadata.get("kafka_type")
        inner = strip_optional(f.type)
        if typing.get_origin(inner) is tuple:
            out += b"\x01"  # an empty compact array
        elif kafka_type is None:
            # A nested struct: int8 -1 when it may be null, else the struct itself.
            out += b"\xff" if inner is not f.type else minimal_body(inner)  # type: ignore[arg-type]
        elif kafka_type in ("string", "bytes", "records"):
            out += b"\x01"  # an empty compact string / bytes
        else:
            out += bytes(FIXED[kafka_type])
    return out + b"\x00"


def strip_optional(kind: object) -> object:
    if typing.get_origin(kind) in (types.UnionType, typing.Union):
        return next(a for a in typing.get_args(kind) if a is not type(None))
    return kind


FIXED = {
    "bool": 1,
    "int8": 1,
    "int16": 2,
    "uint16": 2,
    "error_code": 2,
    "int32": 4,
    "timedelta_i32": 4,
    "int64": 8,
    "timedelta_i64": 8,
    "datetime_i64": 8,
    "float64": 8,
    "uuid": 16,
}


def test_a_present_nullable_struct_is_walked() -> None:
    # DescribeTopicPartitions v0: topics, response_partition_limit, then a nullable Cursor
    # struct behind an int8 marker (1 = present), which carries an unknown tag here.
    cls = request_class(ApiKey.DESCRIBE_TOPIC_PARTITIONS, 0)
    head = b"\x01" + struct.pack(">i", 100) + b"\x01" + compact_string("t") + struct.pack(">i", 3)
    clean = head + b"\x00" + b"\x00"
    stripped = strip_unknown_tags(cls, head + tags((9, b"q")) + b"\x00")
    assert stripped == clean
    request = decode_kio(cls, stripped)
    assert (request.cursor.topic_name, request.cursor.partition_index) == ("t", 3)
