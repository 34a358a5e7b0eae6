"""The C record decoder and the broker's record validation against their pure-Python
references: same results, same errors, on valid record data and on every kind of damage; and
the producer's C record encoding against its Python reference and the protocol's encoder."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brook.client.consumer.record import ConsumerRecord
from brook.client.producer.batch import _append_record_py, _encode_record_body_py, encode_headers
from brook.protocol import records
from brook.protocol.batch import CorruptBatch
from brook.protocol.records import _decode_records_into_py, encode_record

crecords = records._crecords

keys = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=20)), max_size=3)
record_lists = st.lists(
    st.tuples(keys, keys, headers, st.integers(-(2**40), 2**40)), min_size=1, max_size=12
)


def encode(items: list[tuple[Any, ...]]) -> bytes:
    return b"".join(
        encode_record(i, ts, key, value, hdrs) for i, (key, value, hdrs, ts) in enumerate(items)
    )


def decode(impl: Any, data: bytes, count: int, **kw: Any) -> tuple[list[Any], str | None]:
    """(records decoded, the error's type name or None)."""
    out: list[Any] = []
    args = dict(
        base_offset=1000,
        base_timestamp=1_700_000_000_000,
        topic="t",
        partition=3,
        timestamp_type=0,
        leader_epoch=7,
        min_offset=0,
        log_append_time=None,
        start=0,
        end=None,
    )
    args.update(kw)
    try:
        if impl is None:
            _decode_records_into_py(out, ConsumerRecord, data, count, **args)
        else:
            impl.decode_into(out, ConsumerRecord, data, count, *args.values())
    except CorruptBatch:
        return out, "CorruptBatch"
    return out, None


def test_the_c_decoder_is_built() -> None:
    # CI builds it (the project installs with a C compiler present); a missing build would
    # silently leave the consumer on the slower decoder.
    if os.environ.get("BROOK_NO_SPEEDUPS"):
        pytest.skip("speedups turned off")
    assert crecords is not None


needs_c = pytest.mark.skipif(crecords is None, reason="the C decoder is not built")


@needs_c
@settings(max_examples=300, deadline=None)
@given(
    record_lists,
    st.binary(max_size=5),
    st.binary(max_size=5),
    st.integers(0, 14),
    st.none() | st.integers(0, 2**41),
)
def test_same_records_on_valid_data(
    items: list[tuple[Any, ...]], before: bytes, after: bytes, skip: int, append_time: int | None
) -> None:
    body = encode(items)
    data = before + body + after
    kw = dict(
        start=len(before),
        end=len(before) + len(body),
        min_offset=1000 + skip,
        log_append_time=append_time,
    )
    py = decode(None, data, len(items), **kw)
    c = decode(crecords, data, len(items), **kw)
    assert c == py
    assert c[1] is None
    assert [r.offset for r in c[0]] == [1000 + i for i in range(skip, len(items))]


def damage(items: list[tuple[Any, ...]], data: st.DataObject) -> bytes:
    """The records of ``items``, encoded, with a few bytes changed and the tail cut off."""
    body = bytearray(encode(items))
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(body) - 1))
        body[at] = data.draw(st.integers(0, 255))
    return bytes(body[: data.draw(st.integers(0, len(body)))])


@needs_c
@settings(max_examples=500, deadline=None)
@given(record_lists, st.data())
def test_same_outcome_on_damaged_data(items: list[tuple[Any, ...]], data: st.DataObject) -> None:
    damaged = damage(items, data)
    assert decode(crecords, damaged, len(items)) == decode(None, damaged, len(items))


@needs_c
def test_bad_arguments_are_type_errors_not_crashes() -> None:
    with pytest.raises(TypeError):
        crecords.decode_into([], ConsumerRecord, b"")
    with pytest.raises(TypeError):
        crecords.decode_into((), ConsumerRecord, b"", 0, 0, 0, "t", 0, 0, -1, 0, None, 0, None)
    with pytest.raises(ValueError):
        crecords.decode_into([], ConsumerRecord, b"abc", 1, 0, 0, "t", 0, 0, -1, 0, None, 2, 9)


@needs_c
@pytest.mark.parametrize(
    ("offset_delta", "ts_delta", "base_offset", "base_timestamp"),
    [
        (2**31 - 1, 0, 2**63 - 2**30, 0),  # the offset leaves int64
        (-(2**31), 0, -(2**63) + 1, 0),
        (0, 2**62, 0, 2**62),  # the timestamp leaves int64
        (2**40, 0, 0, 0),  # an offset delta in six bytes: too long for a 32-bit varint
    ],
)
def test_out_of_range_fields_are_corrupt_in_both(
    offset_delta: int, ts_delta: int, base_offset: int, base_timestamp: int
) -> None:
    data = encode_record(offset_delta, ts_delta, None, b"v")
    kw = dict(base_offset=base_offset, base_timestamp=base_timestamp, min_offset=-(2**63))
    assert decode(crecords, data, 1, **kw) == decode(None, data, 1, **kw) == ([], "CorruptBatch")


# -- the broker's side: validate_records ------------------------------------------------


def validate(
    impl: Any,
    data: bytes | memoryview,
    count: int,
    low: int,
    high: int,
    key_required: bool = False,
    reject_timestamps: bool = False,
) -> Any:
    """validate_records' result, or "CorruptBatch"."""
    args = (data, count, 1_700_000_000_000, low, high, key_required, reject_timestamps)
    try:
        if impl is None:
            return records._validate_records_py(*args)
        return impl.validate_records(*args)
    except CorruptBatch:
        return "CorruptBatch"


bounds = st.tuples(st.integers(-(2**41), 2**41), st.integers(0, 2**42)).map(
    lambda b: (1_700_000_000_000 + b[0], 1_700_000_000_000 + b[0] + b[1])
)


@needs_c
@settings(max_examples=300, deadline=None)
@given(record_lists, bounds, st.booleans(), st.booleans())
def test_validation_agrees_on_valid_data(
    items: list[tuple[Any, ...]], lh: tuple[int, int], key_required: bool, reject: bool
) -> None:
    data = encode(items)
    low, high = lh
    largest, problems = validate(crecords, data, len(items), low, high, key_required, reject)
    assert (largest, problems) == validate(None, data, len(items), low, high, key_required, reject)
    stamps = [1_700_000_000_000 + ts for _, _, _, ts in items]
    assert largest == max([-1, *stamps])
    # Every invalid record, in order, one problem each, the key first (Kafka's LogValidator).
    expected = []
    for i, ((key, value, _, _), stamp) in enumerate(zip(items, stamps, strict=True)):
        if key_required and key is None:
            problem = records.RECORD_NULL_KEY
        elif reject or (stamp != -1 and not low <= stamp <= high):
            problem = records.RECORD_BAD_TIMESTAMP
        else:
            continue
        sizes = (-1 if key is None else len(key), -1 if value is None else len(value))
        expected.append((i, problem, i, stamp, *sizes))
    assert problems == (expected or None)
    # One record fewer or more than the data holds is malformed.
    assert validate(crecords, data, len(items) - 1, low, high) == "CorruptBatch"
    assert validate(crecords, data, len(items) + 1, low, high) == "CorruptBatch"


@needs_c
@settings(max_examples=500, deadline=None)
@given(record_lists, st.data())
def test_validation_agrees_on_damaged_data(
    items: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    damaged = damage(items, data)
    count = len(items)
    required = data.draw(st.booleans())
    assert validate(crecords, damaged, count, 0, 2**62, required) == validate(
        None, damaged, count, 0, 2**62, required
    )
    view = memoryview(damaged)
    assert validate(crecords, view, count, 0, 2**62, required) == validate(
        None, view, count, 0, 2**62, required
    )


@needs_c
def test_validation_arguments_are_checked() -> None:
    with pytest.raises(TypeError):
        crecords.validate_records(b"", 0, 0, 0, 0)
    with pytest.raises(TypeError):
        crecords.validate_records(object(), 0, 0, 0, 0, False, False)


# -- the producer's side: encode_record_body and append_record ------------------------------


@needs_c
@given(keys, keys, headers)
def test_record_bodies_match_the_python_encoder(
    key: bytes | None, value: bytes | None, hdrs: list[tuple[str, bytes | None]]
) -> None:
    section = encode_headers(hdrs) if hdrs else None
    assert crecords.encode_record_body(key, value, section) == _encode_record_body_py(
        key, value, section
    )


appends = st.lists(
    st.tuples(keys, keys, headers, st.integers(-(2**40), 2**40)), min_size=1, max_size=20
)


@needs_c
@given(appends, st.integers(0, 3000), st.sampled_from([0.0, 0.4, 1.05, 2.5]))
def test_appends_match_the_python_encoder_and_the_protocol(
    items: list[tuple[Any, ...]], limit: int, factor: float
) -> None:
    c_buf, py_buf = bytearray(), bytearray()
    appended: list[tuple[Any, ...]] = []
    for key, value, hdrs, ts in items:
        body = _encode_record_body_py(key, value, encode_headers(hdrs) if hdrs else None)
        delta = len(appended)
        got = crecords.append_record(c_buf, delta, ts, body, limit, factor)
        assert got == _append_record_py(py_buf, delta, ts, body, limit, factor)
        assert c_buf == py_buf
        if got < 0:
            # Refused for the limit: never the first record, and nothing was written.
            assert delta > 0
            break
        appended.append((key, value, hdrs, ts))
        written = len(c_buf)
        assert got == (int(written * factor) if factor > 0 else written)
        assert got <= limit or delta == 0
    # What was appended is exactly the protocol's records, offset deltas 0, 1, 2, ...
    assert bytes(c_buf) == encode(appended)


@needs_c
def test_bad_append_arguments_are_type_errors_not_crashes() -> None:
    with pytest.raises(TypeError):
        crecords.encode_record_body("key", b"v", None)
    with pytest.raises(TypeError):
        crecords.encode_record_body(None, b"v")
    with pytest.raises(TypeError):
        crecords.append_record(b"not a bytearray", 0, 0, b"body", 100, 0.0)
    with pytest.raises(TypeError):
        crecords.append_record(bytearray(), 0, 0, bytearray(b"body"), 100, 0.0)
    with pytest.raises(OverflowError):
        crecords.append_record(bytearray(), 2**64, 0, b"body", 100, 0.0)
