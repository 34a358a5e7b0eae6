"""PartitionRecords and the fast record decoder: every codec, keys, headers and nulls,
positions inside a batch, control batches, aborted transactions, CRCs, deserializers."""

from __future__ import annotations

import gc
import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from brook.client.cluster import TopicPartition
from brook.client.consumer.errors import RecordDeserializationError
from brook.client.consumer.partition_records import PartitionRecords
from brook.client.consumer.record import ConsumerRecord
from brook.protocol.batch import CONTROL_BIT, CorruptBatch
from brook.protocol.compression import Codec
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import batch_records, build_batch, decode_records_into, encode_record

TP = TopicPartition("t", 3)
TS = 1_700_000_000_000


def batch(
    values: list[bytes | None],
    *,
    base_offset: int = 0,
    codec: int = 0,
    keys: list[bytes | None] | None = None,
    headers: tuple[tuple[str, bytes | None], ...] = (),
    **kwargs: int,
) -> bytes:
    keys = keys or [None] * len(values)
    encoded = [
        encode_record(i, i * 250, k, v, headers)
        for i, (k, v) in enumerate(zip(keys, values, strict=True))
    ]
    return build_batch(
        encoded,
        base_timestamp=TS,
        max_timestamp=TS + 250 * (len(values) - 1),
        codec=codec,
        base_offset=base_offset,
        **kwargs,
    )


def with_attributes(data: bytes, bits: int) -> bytes:
    """The batch with extra attribute bits and its CRC redone."""
    buf = bytearray(data)
    attributes = struct.unpack_from(">h", buf, 21)[0] | bits
    struct.pack_into(">h", buf, 21, attributes)
    struct.pack_into(">I", buf, 17, crc32c(bytes(buf[21:])))
    return bytes(buf)


def control_batch(offset: int, producer_id: int, kind: int) -> bytes:
    """A transaction marker: key (version 0, type 0 abort / 1 commit)."""
    record = encode_record(0, 0, struct.pack(">hh", 0, kind), struct.pack(">hi", 0, 0))
    data = build_batch(
        [record],
        base_timestamp=TS,
        max_timestamp=TS,
        base_offset=offset,
        producer_id=producer_id,
        producer_epoch=0,
        transactional=True,
    )
    return with_attributes(data, CONTROL_BIT)


def take_all(pr: PartitionRecords, step: int = 1000) -> list[ConsumerRecord]:
    out: list[ConsumerRecord] = []
    while not pr.consumed:
        out.extend(pr.take(step))
    return out


@pytest.mark.parametrize("codec", list(Codec))
def test_every_codec_decodes_to_the_same_records(codec: Codec) -> None:
    values = [b"value-%d" % i * (i + 1) for i in range(50)]
    keys = [None if i % 3 == 0 else b"k%d" % i for i in range(50)]
    data = batch(values, keys=keys, codec=int(codec), base_offset=100, headers=(("h", b"1"),))
    records = take_all(PartitionRecords(TP, 100, data))
    assert [r.offset for r in records] == list(range(100, 150))
    assert [r.value for r in records] == values
    assert [r.key for r in records] == keys
    assert all(r.headers == (("h", b"1"),) for r in records)
    assert [r.timestamp for r in records] == [TS + 250 * i for i in range(50)]
    first = records[1]
    assert (first.topic, first.partition, first.timestamp_type) == ("t", 3, 0)
    assert (first.serialized_key_size, first.serialized_value_size) == (2, len(values[1]))
    assert (records[0].key, records[0].serialized_key_size) == (None, -1)


def test_null_values_empty_values_and_null_header_values() -> None:
    data = batch([None, b"", b"x"], headers=(("a", None), ("b", b"")))
    records = take_all(PartitionRecords(TP, 0, data))
    sizes = [(r.value, r.serialized_value_size) for r in records]
    assert sizes == [(None, -1), (b"", 0), (b"x", 1)]
    assert records[0].headers == (("a", None), ("b", b""))


def test_records_before_the_fetch_position_inside_a_batch_are_skipped() -> None:
    data = batch([b"%d" % i for i in range(10)], base_offset=20) + batch([b"x"], base_offset=30)
    pr = PartitionRecords(TP, 27, data)
    records = take_all(pr)
    assert [r.offset for r in records] == [27, 28, 29, 30]
    assert pr.next_offset == 31


def test_batches_wholly_before_the_position_are_skipped() -> None:
    data = batch([b"a"] * 5, base_offset=0) + batch([b"b"] * 5, base_offset=5)
    assert [r.offset for r in take_all(PartitionRecords(TP, 5, data))] == [5, 6, 7, 8, 9]


def test_take_hands_out_at_most_the_limit_and_tracks_the_position() -> None:
    data = batch([b"v"] * 7, base_offset=10) + batch([b"w"] * 3, base_offset=17)
    pr = PartitionRecords(TP, 10, data)
    first = pr.take(4)
    assert [r.offset for r in first] == [10, 11, 12, 13] and pr.next_offset == 14
    second = pr.take(4)
    assert [r.offset for r in second] == [14, 15, 16, 17] and pr.next_offset == 18
    assert [r.offset for r in pr.take(10)] == [18, 19]
    assert pr.take(10) == [] and pr.consumed and pr.next_offset == 20


def test_a_trailing_partial_batch_is_ignored() -> None:
    whole = batch([b"a", b"b"])
    partial = batch([b"c"], base_offset=2)[:30]
    pr = PartitionRecords(TP, 0, whole + partial)
    assert [r.value for r in take_all(pr)] == [b"a", b"b"]
    assert pr.next_offset == 2


def test_a_first_batch_cut_short_asks_for_a_larger_fetch_size() -> None:
    pr = PartitionRecords(TP, 0, batch([b"x" * 100])[:80])
    with pytest.raises(KafkaError, match=r"max\.partition\.fetch\.bytes") as info:
        pr.take(10)
    assert info.value.code == Errors.MESSAGE_TOO_LARGE


def test_control_batches_are_skipped_and_the_position_moves_past_them() -> None:
    data = batch([b"a", b"b"], producer_id=7, producer_epoch=0, transactional=True)
    data += control_batch(2, 7, kind=1) + batch([b"c"], base_offset=3)
    pr = PartitionRecords(TP, 0, data)
    assert [r.offset for r in take_all(pr)] == [0, 1, 3]
    only_marker = PartitionRecords(TP, 2, control_batch(2, 7, kind=1))
    assert take_all(only_marker) == [] and only_marker.next_offset == 3


def test_read_committed_drops_aborted_transactions_only() -> None:
    aborted = batch([b"no1", b"no2"], base_offset=0, producer_id=5, producer_epoch=0,
                    transactional=True)  # fmt: skip
    committed = batch([b"yes"], base_offset=2, producer_id=6, producer_epoch=0,
                      transactional=True)  # fmt: skip
    data = aborted + committed + control_batch(3, 5, kind=0) + control_batch(4, 6, kind=1)
    data += batch([b"plain"], base_offset=5)
    pr = PartitionRecords(TP, 0, data, read_committed=True, aborted_transactions=[(5, 0)])
    assert [r.value for r in take_all(pr)] == [b"yes", b"plain"]
    uncommitted = PartitionRecords(TP, 0, data, aborted_transactions=[(5, 0)])
    assert [r.value for r in take_all(uncommitted)] == [b"no1", b"no2", b"yes", b"plain"]


def test_a_bad_crc_fails_when_check_crcs_is_on_and_passes_when_off() -> None:
    data = bytearray(batch([b"hello", b"world"], base_offset=40))
    data[-3] ^= 0xFF  # inside the last value
    with pytest.raises(KafkaError, match="offset 40 of t-3 is corrupt: CRC mismatch") as info:
        PartitionRecords(TP, 40, bytes(data)).take(10)
    assert info.value.code == Errors.CORRUPT_MESSAGE
    values = [r.value for r in take_all(PartitionRecords(TP, 40, bytes(data), check_crcs=False))]
    assert values[0] == b"hello" and values[1] != b"world"


def test_log_append_time_gives_every_record_the_batch_max_timestamp() -> None:
    data = batch([b"a", b"b"], log_append_time=True)
    records = take_all(PartitionRecords(TP, 0, data))
    assert [(r.timestamp, r.timestamp_type) for r in records] == [(TS + 250, 1)] * 2


def test_leader_epoch_comes_from_the_batch() -> None:
    pr = PartitionRecords(TP, 0, batch([b"a"], partition_leader_epoch=4))
    assert take_all(pr)[0].leader_epoch == 4 and pr.epoch == 4


def test_deserializers_apply_and_a_failure_stops_at_the_bad_record() -> None:
    data = batch([b"1", b"2", b"x", b"4"], keys=[b"a", b"b", b"c", b"d"])
    pr = PartitionRecords(TP, 0, data, key_deserializer=bytes.decode, value_deserializer=int)
    first = pr.take(10)
    assert [(r.key, r.value) for r in first] == [("a", 1), ("b", 2)]
    assert pr.next_offset == 2
    with pytest.raises(RecordDeserializationError, match="offset 2 of t-3"):
        pr.take(10)
    assert pr.next_offset == 2


def test_drain_drops_the_rest() -> None:
    pr = PartitionRecords(TP, 0, batch([b"a", b"b"]))
    pr.drain()
    assert pr.consumed and pr.take(5) == []


def test_a_malformed_record_is_corrupt() -> None:
    record = encode_record(0, 0, None, b"abc")
    bad = record[:1] + b"\x00" + record[2:-1]  # shorter than its length says
    with pytest.raises(CorruptBatch):
        decode_records_into([], ConsumerRecord, bad, 1, base_offset=0, base_timestamp=0,
                            topic="t", partition=0, timestamp_type=0, leader_epoch=-1)  # fmt: skip


_header = st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20)))
_record = st.tuples(
    st.one_of(st.none(), st.binary(max_size=300)),
    st.one_of(st.none(), st.binary(max_size=3000)),
    st.lists(_header, max_size=3),
    st.integers(-(2**40), 2**40),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_record, min_size=1, max_size=40), st.integers(0, 2**40))
def test_the_fast_decoder_agrees_with_the_reference_decoder(
    records: list[tuple[bytes | None, bytes | None, list[tuple[str, bytes | None]], int]],
    base: int,
) -> None:
    encoded = [encode_record(i * 70, ts, k, v, tuple(h)) for i, (k, v, h, ts) in enumerate(records)]
    data = build_batch(encoded, base_timestamp=TS, max_timestamp=TS, base_offset=base)
    expected = batch_records(data)
    got = take_all(PartitionRecords(TP, 0, data))
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in got] == [
        (r.offset, r.timestamp, r.key, r.value, r.headers) for r in expected
    ]


def test_a_batch_that_does_not_decompress_is_corrupt_and_leaves_the_gc_on() -> None:
    data = bytearray(batch([b"a" * 50, b"b" * 50], codec=Codec.GZIP))
    data[70] ^= 0xFF
    data[75] ^= 0xFF  # a damaged gzip stream under a valid CRC, as a producer could send it
    struct.pack_into(">I", data, 17, crc32c(bytes(data[21:])))
    assert gc.isenabled()
    with pytest.raises(KafkaError) as info:
        PartitionRecords(TP, 0, bytes(data)).take(10)
    assert info.value.code == Errors.CORRUPT_MESSAGE
    assert gc.isenabled()


def test_records_before_a_bad_batch_are_handed_out_then_the_error_raised() -> None:
    bad = bytearray(batch([b"x"], base_offset=3))
    bad[-1] ^= 0xFF  # CRC mismatch
    pr = PartitionRecords(TP, 0, batch([b"a", b"b", b"c"]) + bytes(bad))
    assert [r.offset for r in pr.take(100)] == [0, 1, 2]
    assert pr.next_offset == 3
    for _ in range(2):  # raised again and again: the position stays at the bad batch
        with pytest.raises(KafkaError, match="offset 3 of t-3 is corrupt"):
            pr.take(100)
        assert pr.next_offset == 3 and not pr.consumed
