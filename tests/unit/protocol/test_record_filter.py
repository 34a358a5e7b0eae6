"""A stored batch taken apart and rebuilt with some of its records: offsets, timestamps,
producer fields and codec kept; the delete horizon set by rewriting timestamp deltas; the
empty batch Kafka writes."""

from __future__ import annotations

import pytest
from crc32c import crc32c

from brook.protocol.batch import (
    CONTROL_BIT,
    DELETE_HORIZON_BIT,
    TIMESTAMP_TYPE_BIT,
    check_batch,
    read_header,
)
from brook.protocol.record_filter import BatchRecords, empty_batch, rebuild_batch
from brook.protocol.records import (
    batch_records,
    build_batch,
    encode_record,
    leader_change_batch,
)

T = 1_700_000_000_000


def _batch(codec: int = 0, *, log_append_time: bool = False) -> bytes:
    records = [
        encode_record(0, 0, b"a", b"1", ()),
        encode_record(2, 5, b"b", None, (("h", b"v"),)),
        encode_record(4, 9, b"c", b"3" * 100, ()),
    ]
    batch = bytearray(
        build_batch(
            records,
            base_timestamp=T,
            max_timestamp=T + 9,
            codec=codec,
            base_offset=100,
            producer_id=42,
            producer_epoch=3,
            base_sequence=7,
            partition_leader_epoch=5,
            log_append_time=log_append_time,
        )
    )
    batch[23:27] = (6).to_bytes(4, "big")  # last offset delta 6: offsets 100..106, 3 records
    return _recrc(bytes(batch))


def _recrc(batch: bytes) -> bytes:
    return batch[:17] + crc32c(batch[21:]).to_bytes(4, "big") + batch[21:]


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_records_are_read_with_their_offsets_keys_and_values(codec: int) -> None:
    batch = _batch(codec)
    records = BatchRecords.read(batch, 0, read_header(batch))
    assert records.offsets == [100, 102, 104]
    assert records.timestamps == [T, T + 5, T + 9]
    assert records.keys == [b"a", b"b", b"c"]
    assert records.has_value == [True, False, True]
    assert len(records) == 3


@pytest.mark.parametrize("codec", [0, 1, 2, 3, 4])
def test_a_rebuilt_batch_keeps_offsets_producer_and_codec(codec: int) -> None:
    batch = _batch(codec)
    header = read_header(batch)
    rebuilt = rebuild_batch(BatchRecords.read(batch, 0, header), [0, 2])
    new = check_batch(rebuilt, 0, len(rebuilt))
    assert (new.base_offset, new.last_offset_delta, new.records_count) == (100, 6, 2)
    assert (new.producer_id, new.producer_epoch, new.base_sequence) == (42, 3, 7)
    assert (new.partition_leader_epoch, new.codec, new.max_timestamp) == (5, codec, T + 9)
    assert new.delete_horizon_ms is None
    records = batch_records(rebuilt, 0, new)
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (100, b"a", b"1", T),
        (104, b"c", b"3" * 100, T + 9),
    ]


def test_the_max_timestamp_is_that_of_the_records_kept() -> None:
    batch = _batch()
    rebuilt = rebuild_batch(BatchRecords.read(batch, 0, read_header(batch)), [0, 1])
    assert read_header(rebuilt).max_timestamp == T + 5
    appended = _batch(log_append_time=True)
    rebuilt = rebuild_batch(BatchRecords.read(appended, 0, read_header(appended)), [0])
    header = read_header(rebuilt)
    assert header.attributes & TIMESTAMP_TYPE_BIT and header.max_timestamp == T + 9


@pytest.mark.parametrize("codec", [0, 3])
def test_a_delete_horizon_moves_the_base_timestamp_and_keeps_every_timestamp(codec: int) -> None:
    batch = _batch(codec)
    horizon = T + 86_400_000
    rebuilt = rebuild_batch(
        BatchRecords.read(batch, 0, read_header(batch)), [1, 2], delete_horizon_ms=horizon
    )
    header = check_batch(rebuilt, 0, len(rebuilt))
    assert header.attributes & DELETE_HORIZON_BIT
    assert header.delete_horizon_ms == header.base_timestamp == horizon
    records = batch_records(rebuilt, 0, header)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == [
        (102, T + 5, b"b", None, (("h", b"v"),)),
        (104, T + 9, b"c", b"3" * 100, ()),
    ]
    # a batch that has one keeps it
    again = rebuild_batch(BatchRecords.read(rebuilt, 0, header), [1], delete_horizon_ms=horizon + 5)
    assert read_header(again).delete_horizon_ms == horizon


def test_an_empty_batch_keeps_offsets_sequence_and_flags() -> None:
    batch = _batch(3)
    empty = empty_batch(read_header(batch))
    header = check_batch(empty, 0, len(empty))
    assert len(empty) == 61
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (100, 6, 0)
    assert (header.producer_id, header.base_sequence, header.last_sequence) == (42, 7, 13)
    assert header.codec == 0
    assert header.base_timestamp == header.max_timestamp == T + 9
    control = leader_change_batch(1, base_offset=5, leader_epoch=2, timestamp=T)
    assert read_header(empty_batch(read_header(control))).attributes & CONTROL_BIT
