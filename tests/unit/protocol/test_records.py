"""Record encoding and decoding, checked against kio's independent reader."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from kio.records.readers import read_batch

from brook.protocol.records import build_batch, encode_record, iter_records

keys = st.one_of(st.none(), st.binary(max_size=40))
header_lists = st.lists(
    st.tuples(st.text(max_size=10), st.one_of(st.none(), st.binary(max_size=10))), max_size=3
)
records = st.lists(st.tuples(keys, keys, header_lists), min_size=1, max_size=10)


@given(records, st.integers(0, 2**41), st.integers(0, 4))
def test_round_trip(recs: list, base_ts: int, codec: int) -> None:
    encoded = [encode_record(i, i * 7, k, v, h) for i, (k, v, h) in enumerate(recs)]
    batch = build_batch(
        encoded,
        base_timestamp=base_ts,
        max_timestamp=base_ts + 7 * len(recs),
        codec=codec,
        producer_id=5,
        producer_epoch=1,
        base_sequence=9,
    )
    out = [r for _, r in iter_records(batch)]
    assert [(r.key, r.value, list(r.headers)) for r in out] == [(k, v, list(h)) for k, v, h in recs]
    assert [r.timestamp for r in out] == [base_ts + i * 7 for i in range(len(recs))]


@given(records)
def test_uncompressed_batches_match_kio(recs: list) -> None:
    encoded = [encode_record(i, 0, k, v, h) for i, (k, v, h) in enumerate(recs)]
    batch = build_batch(encoded, base_timestamp=1000, max_timestamp=1000)
    parsed, size = read_batch(batch, 0)  # kio verifies the CRC itself
    assert size == len(batch)
    assert [(r.key, r.value) for r in parsed.records] == [(k, v) for k, v, _ in recs]
    assert [tuple((h.key.decode(), h.value) for h in r.headers) for r in parsed.records] == [
        tuple(h) for _, _, h in recs
    ]


def test_partial_trailing_batch_is_ignored() -> None:
    a = build_batch([encode_record(0, 0, None, b"a")], base_timestamp=0, max_timestamp=0)
    b = build_batch([encode_record(0, 0, None, b"b")], base_timestamp=0, max_timestamp=0)
    assert [r.value for _, r in iter_records(a + b[:-3])] == [b"a"]
