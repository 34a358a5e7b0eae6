"""The schema walk that every message goes through before kio reads it: valid messages of every
schema pass untouched; a length or count beyond the bytes that remain, a null where the schema
has none, a tagged field that lies about its size, a varint of more than 5 bytes are refused
with MalformedMessage naming the field, before kio could reserve memory for them.

The walk has a C fast path (``_cwalk``) that may only ever say "fine" where the Python walk
would: the tests run with it and without it, and compare the two on valid and mutated
messages of every schema."""

from __future__ import annotations

import random
import struct
import uuid
from typing import Any

import pytest
from frame_fuzz import Env, Generator, Slot, rewrite_slot

from brook.broker.registry import HANDLERS
from brook.protocol import schema_walk
from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio
from brook.protocol.primitives import compact_string, uvarint
from brook.protocol.schema_walk import MalformedMessage, walk_message
from brook.protocol.unknown_tags import strip_unknown_tags

ENV = Env(["orders", "fuzz-b"], [uuid.uuid4()], ["g"])


def _requests() -> list[Any]:
    import brook.broker.handlers  # noqa: F401 - registers the handlers

    return [
        request_class(key, v)
        for key, spec in sorted(HANDLERS.items())
        for v in range(spec.min_version, spec.max_version + 1)
        if request_class(key, v) is not None
    ]


def _responses() -> list[Any]:
    return [
        cls for key in ApiKey for v in range(20) if (cls := response_class(int(key), v)) is not None
    ]


SCHEMAS = [
    pytest.param(cls, id=f"{kind}-{cls.__name__}-v{cls.__version__}")
    for kind, classes in (("request", _requests()), ("response", _responses()))
    for cls in classes
]


@pytest.fixture(params=["c", "python"])
def walk_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The walk with its C fast path, and the Python walk alone (as without a C compiler)."""
    if request.param == "python":
        monkeypatch.setattr(schema_walk, "_cwalk", None)
    elif schema_walk._cwalk is None:
        pytest.skip("the C fast path is not built")
    return str(request.param)


def _with(data: bytes, slot: Slot, raw: bytes) -> bytes:
    return data[: slot.pos] + raw + data[slot.pos + slot.width :]


def _huge(slot: Slot) -> bytes:
    if slot.form == "uvarint":
        return uvarint(2**33 + 1)
    return struct.pack(">h", 0x7FFF) if slot.form == "int16" else struct.pack(">i", 2**31 - 1)


def _null(slot: Slot) -> bytes:
    if slot.form == "uvarint":
        return b"\x00"
    return struct.pack(">h" if slot.form == "int16" else ">i", -1)


@pytest.mark.parametrize("cls", SCHEMAS)
def test_valid_messages_pass_and_read_as_kio_reads_them(cls: Any, walk_path: str) -> None:
    gen = Generator(ENV, random.Random(cls.__name__ + str(cls.__version__)))
    for _ in range(5):
        body = gen.body_of(cls)
        assert walk_message(cls, body.data) == []
        assert walk_message(cls, b"\x00" * 3 + body.data, 3) == []
        assert decode_kio(cls, b"\x01\x02" + body.data, 2) == decode_kio(cls, body.data)


@pytest.mark.parametrize("cls", SCHEMAS)
def test_every_count_and_length_beyond_the_message_is_refused(cls: Any, walk_path: str) -> None:
    gen = Generator(ENV, random.Random(7))
    gen._count = lambda name: 1  # type: ignore[method-assign]  # every array has an element
    body = gen.body_of(cls)
    for slot in body.slots:
        mutated = _with(body.data, slot, _huge(slot))
        with pytest.raises(MalformedMessage, match=slot.where) as refused:
            decode_kio(cls, mutated)
        if slot.is_count:
            assert "tried to allocate a collection of size" in str(refused.value)


@pytest.mark.parametrize("cls", SCHEMAS)
def test_null_is_refused_where_the_schema_has_none(cls: Any, walk_path: str) -> None:
    gen = Generator(ENV, random.Random(11))
    gen._count = lambda name: 1  # type: ignore[method-assign]
    body = gen.body_of(cls)
    for slot in body.slots:
        # the null replaces the whole value: prefix and contents
        mutated = body.data[: slot.pos] + _null(slot) + body.data[slot.end :]
        if slot.nullable:
            walk_message(cls, mutated)  # a null where one is allowed is read
        else:
            with pytest.raises(MalformedMessage, match=f"{slot.where}: non-nullable field"):
                walk_message(cls, mutated)


@pytest.mark.parametrize("cls", SCHEMAS)
def test_mutated_messages_are_refused_or_read_never_more(cls: Any, walk_path: str) -> None:
    """Whatever the walk lets through, kio reads (or refuses with an ordinary exception)
    without being asked for more memory than the message could describe."""
    rng = random.Random(cls.__name__)
    gen = Generator(ENV, rng)
    for _ in range(10):
        body = gen.body_of(cls)
        data = body.data
        if body.slots and rng.random() < 0.6:
            data, _ = rewrite_slot(data, rng.choice(body.slots), rng)
        else:
            flipped = bytearray(data)
            for _ in range(rng.randrange(1, 4)):
                if flipped:
                    flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
            data = bytes(flipped[: rng.randrange(len(flipped) + 1)])
        try:
            walk_message(cls, data)
        except MalformedMessage:
            continue
        try:
            decode_kio(cls, data)
        except Exception as exc:  # kio's own refusals (UTF-8, booleans, ...) are fine
            assert not isinstance(exc, MemoryError), exc


def test_the_regression_frames_are_refused_by_name() -> None:
    join = request_class(ApiKey.JOIN_GROUP, 6)
    body = (
        compact_string("g")
        + struct.pack(">ii", 10000, 10000)
        + compact_string("")
        + b"\x00"
        + compact_string("consumer")
        + uvarint(2**33 + 1)
        + b"\x00" * 8
    )
    with pytest.raises(MalformedMessage) as refused:
        decode_kio(join, body)
    assert str(refused.value) == (
        "JoinGroupRequest.protocols: tried to allocate a collection of size 8589934592, "
        "but there are only 8 bytes remaining"
    )
    with pytest.raises(MalformedMessage, match="varint is longer than 5 bytes"):
        decode_kio(join, body.replace(uvarint(2**33 + 1), uvarint(2**40)))


def test_a_known_tagged_field_must_take_the_size_it_declares() -> None:
    cls = request_class(ApiKey.FETCH, 12)
    original = build(
        cls,
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
    tag = uvarint(1) + uvarint(0) + uvarint(10) + compact_string("cluster-a")
    assert body.endswith(tag)
    assert decode_kio(cls, body) == original
    for size, problem in ((9, "length 9 but only 8 bytes remain"), (11, "declares 11 bytes")):
        lying = body[: -len(tag)] + uvarint(1) + uvarint(0) + uvarint(size)
        lying += compact_string("cluster-a") + b"\x00" * max(0, size - 10)
        with pytest.raises(MalformedMessage, match=r"FetchRequest\.cluster_id: ") as refused:
            walk_message(cls, lying)
        assert problem in str(refused.value)


def test_unknown_tags_inside_a_known_tagged_struct_are_dropped() -> None:
    # Fetch v15's ReplicaState is itself a tagged field (tag 1) and carries an unknown tag.
    cls = request_class(ApiKey.FETCH, 15)
    data = {
        "replica_state": {"replica_id": 3, "replica_epoch": 9},
        "max_wait": 500,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    clean = encode_kio(build(cls, data))
    state = struct.pack(">iq", 3, 9)
    known = uvarint(1) + uvarint(1) + uvarint(len(state) + 1) + state + b"\x00"
    assert clean.endswith(known)
    inner = state + uvarint(1) + uvarint(77) + uvarint(2) + b"zz"
    tagged = clean[: -len(known)] + uvarint(2) + uvarint(1) + uvarint(len(inner)) + inner
    tagged += uvarint(500) + uvarint(1) + b"q"
    assert strip_unknown_tags(cls, tagged) == clean
    request = decode_kio(cls, tagged)
    assert (request.replica_state.replica_id, request.replica_state.replica_epoch) == (3, 9)


def test_strings_longer_than_kafka_allows_are_refused() -> None:
    cls = request_class(ApiKey.FIND_COORDINATOR, 4)
    body = b"\x00" + uvarint(2) + uvarint(0x8001) + b"k" * 0x8000 + b"\x00"
    with pytest.raises(MalformedMessage, match="string field had invalid length 32768"):
        walk_message(cls, body)


@pytest.mark.parametrize("length", [0, 1, 126, 127, 16382, 16383, 2**21 - 2, 2**21 - 1])
def test_lengths_of_every_varint_width_are_read_as_kio_reads_them(length: int) -> None:
    # compact lengths are length + 1: 1, 2, 3 and 4 bytes, each side of each boundary
    cls = request_class(ApiKey.PRODUCE, 9)
    records = bytes(range(256)) * (length // 256) + bytes(length % 256)
    partition = struct.pack(">i", 0) + uvarint(length + 1) + records + b"\x00"
    topic = compact_string("t") + uvarint(2) + partition + b"\x00"
    body = compact_string(None) + struct.pack(">hi", 1, 1000) + uvarint(2) + topic + b"\x00"
    assert walk_message(cls, body) == []
    assert decode_kio(cls, body).topic_data[0].partition_data[0].records == records
    if length > 10:  # one record byte short (smaller ones fail the element count first)
        with pytest.raises(MalformedMessage, match=r"PartitionProduceData\.records: length"):
            walk_message(cls, body[:-4])


@pytest.mark.skipif(schema_walk._cwalk is None, reason="the C fast path is not built")
@pytest.mark.parametrize("cls", SCHEMAS)
def test_the_c_walk_passes_only_what_the_python_walk_passes(cls: Any) -> None:
    shape = schema_walk._shape(cls)
    program = schema_walk._program(shape)
    rng = random.Random(cls.__name__ + "/c")
    gen = Generator(ENV, rng)
    gen.tag_rate = 0.0
    for _ in range(5):  # valid, no tagged field: the fast path takes them
        body = gen.body_of(cls)
        assert schema_walk._cwalk.walk(program, body.data, 0)
        assert schema_walk._python_walk(shape, body.data, 0) == []
    gen.tag_rate = 0.3
    for i in range(40):
        body = gen.body_of(cls, unknown_tags=i % 4 == 0)
        data = body.data
        pick = rng.random()
        if body.slots and pick < 0.5:
            data, _ = rewrite_slot(data, rng.choice(body.slots), rng)
        elif pick < 0.8:
            flipped = bytearray(data)
            if flipped:
                flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
            data = bytes(flipped)
        elif pick < 0.9:
            data = data[: rng.randrange(len(data) + 1)]
        if schema_walk._cwalk.walk(program, data, 0):
            assert schema_walk._python_walk(shape, data, 0) == [], data.hex()
        offset_data = b"\xff" * 7 + data
        assert schema_walk._cwalk.walk(program, offset_data, 7) == schema_walk._cwalk.walk(
            program, data, 0
        )
