"""ProducerBatch: records encoded at append decode back exactly, the v2 header and CRC are
right, and the size estimate (KIP-794 counts it) includes the 61-byte header and, with
compression, the estimated ratio x 1.05 as Java's MemoryRecordsBuilder."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brook.client.producer.batch import (
    CompressionRatioEstimator,
    ProducerBatch,
    encode_headers,
    encode_record_body,
)
from brook.protocol.batch import HEADER_SIZE, check_batch
from brook.protocol.compression import Codec
from brook.protocol.records import batch_records, encode_record

records = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=300)),
        st.one_of(st.none(), st.binary(max_size=20000)),
        st.lists(
            st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=8))), max_size=3
        ),
        st.integers(0, 100000),
    ),
    min_size=1,
    max_size=40,
)


def append_all(batch: ProducerBatch, items: list) -> list:
    futures = []
    for key, value, headers, delta in items:
        body = encode_record_body(key, value, encode_headers(headers) if headers else None)
        futures.append(
            batch.try_append(
                1_700_000_000_000 + delta,
                body,
                -1 if key is None else len(key),
                -1 if value is None else len(value),
                None,
            )
        )
    return futures


@settings(max_examples=60, deadline=None)
@given(items=records, codec=st.sampled_from(list(Codec)))
def test_records_decode_back_exactly(items: list, codec: Codec) -> None:
    batch = ProducerBatch(("t", 0), 0.0, 1 << 30, codec)
    futures = append_all(batch, items)
    assert all(f is not None for f in futures)
    batch.set_producer_state(7, 3, 11)
    header, payload = batch.wire()
    data = bytes(header) + bytes(payload)
    parsed = check_batch(data, 0, len(data))  # length, magic, CRC
    assert (parsed.producer_id, parsed.producer_epoch, parsed.base_sequence) == (7, 3, 11)
    assert parsed.records_count == len(items) and parsed.codec == codec
    timestamps = [1_700_000_000_000 + d for *_, d in items]
    assert parsed.base_timestamp == timestamps[0] and parsed.max_timestamp == max(timestamps)
    decoded = batch_records(data)
    assert [(r.key, r.value, list(r.headers), r.timestamp) for r in decoded] == [
        (k, v, list(h), t) for (k, v, h, _), t in zip(items, timestamps, strict=True)
    ]
    if codec == Codec.NONE:
        # Byte for byte what the reference encoder writes.
        assert bytes(payload) == b"".join(
            encode_record(i, t - timestamps[0], k, v, h)
            for i, ((k, v, h, _), t) in enumerate(zip(items, timestamps, strict=True))
        )


def test_estimated_size_counts_the_header_and_fills_to_the_limit() -> None:
    batch = ProducerBatch(("t", 0), 0.0, 1000)
    assert batch.estimated_size() == HEADER_SIZE and not batch.is_full()
    body = encode_record_body(None, b"x" * 100, None)
    future = batch.try_append(0, body, -1, 100, None)
    assert future is not None
    assert batch.estimated_size() == HEADER_SIZE + len(batch.buf)
    count = 1
    while batch.try_append(0, body, -1, 100, None) is not None:
        count += 1
    assert batch.closed and batch.is_full() and batch.count == count
    assert batch.estimated_size() <= 1000 < batch.estimated_size() + len(body) + 3


def test_first_record_always_fits_even_over_the_limit() -> None:
    batch = ProducerBatch(("t", 0), 0.0, 100)
    assert batch.try_append(0, encode_record_body(None, b"x" * 500, None), -1, 500, None)
    assert batch.is_full()


def test_compressed_estimate_uses_ratio_and_factor() -> None:
    batch = ProducerBatch(("t", 0), 0.0, 1 << 20, Codec.GZIP, ratio_estimate=0.5)
    batch.try_append(0, encode_record_body(None, b"a" * 1000, None), -1, 1000, None)
    assert batch.estimated_size() == HEADER_SIZE + int(len(batch.buf) * 0.5 * 1.05)
    batch.close()
    assert batch.compression_ratio() < 0.1  # 1000 equal bytes compress well


def test_compression_ratio_estimator_moves_like_javas() -> None:
    est = CompressionRatioEstimator()
    assert est.estimate("t", Codec.LZ4) == 1.0
    assert est.update("t", Codec.LZ4, 0.3) == pytest.approx(0.995)  # improves slowly
    assert est.update("t", Codec.LZ4, 2.0) == 2.0  # deteriorates to the observation
    assert est.update("t", Codec.LZ4, 2.01) == pytest.approx(2.05)
    assert est.estimate("u", Codec.LZ4) == 1.0


def test_restamping_a_retried_batch_changes_only_the_header() -> None:
    batch = ProducerBatch(("t", 0), 0.0, 1 << 20)
    batch.try_append(0, encode_record_body(b"k", b"v", None), 1, 1, None)
    batch.set_producer_state(5, 0, 40)
    first_header, payload = batch.wire()
    batch.reset_producer_state(5, 1, 0)
    header, same = batch.wire()
    assert same is payload and header != first_header and batch.sequence_reset
    data = bytes(header) + bytes(payload)
    assert check_batch(data, 0, len(data)).producer_epoch == 1


def test_leader_change_marks_the_retry_that_skips_backoff() -> None:
    batch = ProducerBatch(("t", 0), 0.0, 1 << 20)
    assert batch.maybe_update_leader_epoch(5) and not batch.leader_changed_for_ongoing_retry()
    batch.reenqueued(10.0, 100.0)
    assert not batch.leader_changed_for_ongoing_retry()
    assert batch.maybe_update_leader_epoch(6)
    assert batch.leader_changed_for_ongoing_retry()  # first retry toward epoch 6
    assert not batch.maybe_update_leader_epoch(6)
    batch.reenqueued(20.0, 100.0)
    assert not batch.leader_changed_for_ongoing_retry()  # later retries back off again
