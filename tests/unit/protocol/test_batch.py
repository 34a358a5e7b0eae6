"""RecordBatch v2 header validation and patching, with hypothesis-built batches."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brook.protocol.batch import (
    HEADER_SIZE,
    CorruptBatch,
    check_batch,
    iter_batches,
    iter_whole_batches,
    patch_base_offset,
    patch_leader_epoch,
    read_header,
    set_log_append_time,
)
from brook.protocol.records import build_simple_batch, iter_records

values = st.lists(st.one_of(st.none(), st.binary(max_size=200)), min_size=1, max_size=20)


@given(values, st.integers(0, 4), st.integers(0, 2**40))
def test_built_batches_validate_and_decode(vals: list[bytes | None], codec: int, ts: int) -> None:
    batch = build_simple_batch(vals, codec=codec, timestamp=ts)
    header = check_batch(batch, 0, len(batch))
    assert header.records_count == len(vals)
    assert header.last_offset_delta == len(vals) - 1
    assert header.codec == codec
    assert [r.value for _, r in iter_records(batch)] == vals


@given(values, st.integers(0, 2**62), st.integers(-1, 2**31 - 1))
def test_patching_offsets_and_epoch_keeps_crc_valid(
    vals: list[bytes | None], base: int, epoch: int
) -> None:
    batch = bytearray(build_simple_batch(vals))
    patch_base_offset(batch, 0, base)
    patch_leader_epoch(batch, 0, epoch)
    header = check_batch(batch, 0, len(batch))
    assert header.base_offset == base
    assert header.partition_leader_epoch == epoch
    assert [r.offset for _, r in iter_records(batch)] == list(range(base, base + len(vals)))


@settings(max_examples=200)
@given(values, st.data())
def test_any_flipped_byte_after_the_crc_field_is_detected(
    vals: list[bytes | None], data: st.DataObject
) -> None:
    batch = bytearray(build_simple_batch(vals))
    pos = data.draw(st.integers(21, len(batch) - 1))
    batch[pos] ^= data.draw(st.integers(1, 255))
    with pytest.raises(CorruptBatch):
        check_batch(batch, 0, len(batch))


def test_truncated_and_wrong_magic_batches_are_rejected() -> None:
    batch = build_simple_batch([b"x" * 50])
    with pytest.raises(CorruptBatch, match="past the end"):
        check_batch(batch, 0, len(batch) - 1)
    with pytest.raises(CorruptBatch):
        check_batch(batch[: HEADER_SIZE - 1], 0, HEADER_SIZE - 1)
    bad = bytearray(batch)
    bad[16] = 1
    with pytest.raises(CorruptBatch, match="magic"):
        check_batch(bad, 0, len(bad))


def test_iter_batches_walks_concatenated_batches_and_stops_at_damage() -> None:
    a, b = build_simple_batch([b"a"]), build_simple_batch([b"b", b"c"])
    buf = bytearray(a + b)
    assert [h.records_count for _, h in iter_batches(buf)] == [1, 2]
    buf[-1] ^= 0xFF
    seen = []
    with pytest.raises(CorruptBatch):
        for pos, _ in iter_batches(buf):
            seen.append(pos)
    assert seen == [0]


def test_log_append_time_sets_bit_timestamp_and_a_valid_crc() -> None:
    batch = bytearray(build_simple_batch([b"a", b"b"], timestamp=5))
    set_log_append_time(batch, 0, 123456)
    header = check_batch(batch, 0, len(batch))
    assert header.log_append_time and header.max_timestamp == 123456
    assert [r.timestamp for _, r in iter_records(batch)] == [123456, 123456]
    assert read_header(batch).base_timestamp == 5


def test_whole_batches_skip_a_corrupt_one_and_stop_at_a_partial_one() -> None:
    good = build_simple_batch([b"a"])
    bad = bytearray(build_simple_batch([b"b"]))
    bad[-1] ^= 0xFF  # the CRC no longer matches
    buf = good + bytes(bad) + good + good[:-3]
    corrupt: list[CorruptBatch] = []
    found = [pos for pos, _ in iter_whole_batches(buf, corrupt.append)]
    assert found == [0, 2 * len(good)]
    assert len(corrupt) == 1 and "CRC" in str(corrupt[0])
