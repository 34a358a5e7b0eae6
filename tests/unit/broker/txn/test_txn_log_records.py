"""``__transaction_state`` records in Kafka's formats: TransactionLogKey v0 and
TransactionLogValue v0 / v1 byte for byte as Kafka's schemas lay them out, round trips, the
replay (last value wins, tombstones remove), and damaged bytes refused cleanly."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brook.broker.txn.log_records import (
    RecordFormatError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    replay,
)
from brook.broker.txn.state import TxnMetadata, TxnState

ONGOING = TxnMetadata(
    transactional_id="app",
    producer_id=4000,
    producer_epoch=3,
    timeout_ms=60_000,
    state=TxnState.ONGOING,
    partitions=frozenset({("b", 1), ("a", 0), ("a", 2)}),
    start_ms=1_700_000_000_000,
    last_update_ms=1_700_000_000_500,
)


def test_key_is_version_0_and_a_legacy_string() -> None:
    assert encode_key("app") == b"\x00\x00" + b"\x00\x03app"
    assert decode_key(encode_key("ü-id")) == "ü-id"


def test_value_v1_bytes_follow_kafkas_schema() -> None:
    expected = (
        b"\x00\x01"  # version 1 (flexible)
        + struct.pack(">qhib", 4000, 3, 60_000, 1)  # id, epoch, timeout, status Ongoing
        + b"\x03"  # 2 topics (compact array)
        + b"\x02a" + b"\x03" + struct.pack(">ii", 0, 2) + b"\x00"
        + b"\x02b" + b"\x02" + struct.pack(">i", 1) + b"\x00"
        + struct.pack(">qq", 1_700_000_000_500, 1_700_000_000_000)  # last update, start
        + b"\x00"  # no tagged fields: previous / next producer id at their defaults
    )  # fmt: skip
    assert encode_value(ONGOING) == expected
    assert decode_value("app", expected) == ONGOING


def test_value_v0_bytes_and_tagged_producer_ids() -> None:
    empty = TxnMetadata("app", 7, 0, 1000, TxnState.EMPTY, last_update_ms=5)
    v0 = encode_value(empty, version=0)
    assert v0 == b"\x00\x00" + struct.pack(">qhib", 7, 0, 1000, 0) + struct.pack(">i", -1) + (
        struct.pack(">qq", 5, -1)
    )
    assert decode_value("app", v0) == empty
    rotated = TxnMetadata(
        "app", 8, 0, 1000, TxnState.COMPLETE_COMMIT, start_ms=1, last_update_ms=2,
        prev_producer_id=7, next_producer_id=9,
    )  # fmt: skip
    data = encode_value(rotated)
    assert data.endswith(
        b"\x02" + b"\x00\x08" + struct.pack(">q", 7) + b"\x01\x08" + struct.pack(">q", 9)
    )
    assert decode_value("app", data) == rotated


def test_unknown_tags_are_skipped() -> None:
    data = encode_value(ONGOING)[:-1] + b"\x01" + b"\x02\x02\x00\x02"  # ClientTransactionVersion
    assert decode_value("app", data) == ONGOING


def test_dead_is_a_tombstone() -> None:
    with pytest.raises(ValueError):
        encode_value(TxnMetadata("app", 1, 0, 1, TxnState.DEAD))


def test_replay_keeps_the_last_value_and_drops_tombstones() -> None:
    later = TxnMetadata("app", 4000, 4, 60_000, TxnState.EMPTY, last_update_ms=9)
    other = TxnMetadata("other", 1, 0, 10, TxnState.COMPLETE_ABORT, start_ms=1, last_update_ms=2)
    records = [
        (encode_key("app"), encode_value(ONGOING)),
        (encode_key("other"), encode_value(other)),
        (encode_key("gone"), encode_value(other)),
        (encode_key("app"), encode_value(later)),
        (encode_key("gone"), None),
    ]
    loaded = replay(records)
    assert loaded == {"app": later, "other": other}


def _fields(meta: TxnMetadata) -> dict[str, object]:
    return {f: getattr(meta, f) for f in meta.__slots__}


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00\x02" + encode_value(ONGOING)[2:],  # unknown version
        encode_value(ONGOING)[:-3],  # truncated
        encode_value(ONGOING) + b"\x00",  # trailing
        b"\x00\x01" + struct.pack(">qhib", 1, 0, 1, 9) + b"\x00" + bytes(17),  # status 9
        b"\x00\x01" + struct.pack(">qhib", 1, 0, 1, 1) + b"\xff\xff\xff\x7f",  # huge array
    ],
    ids=["empty", "version", "truncated", "trailing", "status", "huge-array"],
)
def test_damaged_values_are_refused(data: bytes) -> None:
    with pytest.raises(RecordFormatError):
        decode_value("app", data)


@given(st.binary(max_size=80))
def test_any_bytes_decode_or_raise_record_format_error(data: bytes) -> None:
    for decode in (lambda: decode_value("x", data), lambda: decode_key(data)):
        try:
            decode()
        except RecordFormatError:
            pass


@given(
    st.builds(
        TxnMetadata,
        transactional_id=st.just("t"),
        producer_id=st.integers(0, 2**62),
        producer_epoch=st.integers(0, 32767),
        timeout_ms=st.integers(1, 2**31 - 1),
        state=st.sampled_from([s for s in TxnState if s not in (TxnState.DEAD, TxnState.EMPTY)]),
        partitions=st.frozensets(st.tuples(st.sampled_from(["a", "bb", "ü"]), st.integers(0, 99))),
        start_ms=st.integers(-1, 2**41),
        last_update_ms=st.integers(-1, 2**41),
        prev_producer_id=st.integers(-1, 2**62),
        next_producer_id=st.integers(-1, 2**62),
    ),
    st.sampled_from([0, 1]),
)
def test_round_trip(meta: TxnMetadata, version: int) -> None:
    decoded = decode_value("t", encode_value(meta, version))
    if version == 0:  # v0 has no tagged producer ids
        meta = TxnMetadata(**{**_fields(meta), "prev_producer_id": -1, "next_producer_id": -1})
    assert decoded == meta
