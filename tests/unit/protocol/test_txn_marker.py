"""Transaction markers in Kafka's control batch format: what Brook writes is what kafka-python's
record reader and Brook's consumer read as a marker, and what is not a marker is refused."""

from __future__ import annotations

import struct

import pytest
from kafka.record.default_records import DefaultRecordBatch

from brook.client.cluster import TopicPartition
from brook.client.consumer.partition_records import PartitionRecords
from brook.protocol.batch import check_batch, iter_batches
from brook.protocol.records import build_simple_batch, encode_record
from brook.protocol.txn_marker import (
    ControlType,
    MarkerFormatError,
    TxnMarker,
    control_type,
    marker_batch,
    read_marker,
)

TS = 1_700_000_000_000


@pytest.mark.parametrize("commit", [True, False])
def test_marker_round_trip(commit: bool) -> None:
    marker = TxnMarker(producer_id=77, producer_epoch=3, commit=commit, coordinator_epoch=9)
    data = marker_batch(marker, timestamp=TS, base_offset=40, leader_epoch=2)
    assert check_batch(data, 0, len(data)).records_count == 1
    (_, header), *rest = list(iter_batches(data))
    assert rest == []
    assert header.is_control and header.is_transactional
    assert (header.base_offset, header.partition_leader_epoch) == (40, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, -1)
    assert (header.records_count, header.max_timestamp) == (1, TS)
    assert read_marker(data) == marker


@pytest.mark.parametrize("commit", [True, False])
def test_kafka_python_reads_it_as_a_control_record(commit: bool) -> None:
    data = marker_batch(TxnMarker(5, 0, commit, 1), timestamp=TS, base_offset=12)
    parsed = DefaultRecordBatch(bytearray(data))
    assert parsed.is_control_batch and parsed.is_transactional
    assert parsed.validate_crc()
    (record,) = list(parsed)
    assert (record.commit, record.abort, record.version) == (commit, not commit, 0)
    assert record.offset == 12
    assert struct.unpack(">hi", record.value) == (0, 1)  # EndTxnMarker v0, coordinator epoch


def test_brooks_consumer_skips_markers_and_ends_aborted_transactions() -> None:
    tp = TopicPartition("t", 0)
    aborted = build_simple_batch(
        [b"a1", b"a2"], producer_id=5, producer_epoch=0, base_sequence=0, transactional=True
    )
    data = (
        aborted
        + marker_batch(TxnMarker(5, 0, False, 0), timestamp=TS, base_offset=2)
        + build_simple_batch(
            [b"c1"],
            base_offset=3,
            producer_id=5,
            producer_epoch=0,
            base_sequence=2,
            transactional=True,
        )
        + marker_batch(TxnMarker(5, 0, True, 0), timestamp=TS, base_offset=4)
    )
    committed = PartitionRecords(tp, 0, data, read_committed=True, aborted_transactions=[(5, 0)])
    assert [r.value for r in committed.take(10)] == [b"c1"]
    everything = PartitionRecords(tp, 0, data, aborted_transactions=[(5, 0)])
    assert [r.value for r in everything.take(10)] == [b"a1", b"a2", b"c1"]


def test_control_types_are_kafkas() -> None:
    assert [(t.name, t.value) for t in ControlType][:3] == [
        ("ABORT", 0),
        ("COMMIT", 1),
        ("LEADER_CHANGE", 2),
    ]
    assert control_type(struct.pack(">hh", 0, 1)) == 1
    assert control_type(struct.pack(">hh", 3, 0)) == 0  # a newer key version still has a type
    for bad in (None, b"", b"\x00\x00\x00", struct.pack(">hh", -1, 0)):
        with pytest.raises(MarkerFormatError):
            control_type(bad)


def _control(key: bytes | None, value: bytes | None, count: int = 1, control: bool = True) -> bytes:
    from brook.protocol.batch import CONTROL_BIT, TRANSACTIONAL_BIT
    from brook.protocol.records import batch_header

    payload = b"".join(encode_record(i, 0, key, value) for i in range(count))
    attributes = TRANSACTIONAL_BIT | (CONTROL_BIT if control else 0)
    header = batch_header(
        payload,
        attributes=attributes,
        count=count,
        base_timestamp=TS,
        max_timestamp=TS,
        producer_id=1,
        producer_epoch=0,
    )
    return header + payload


@pytest.mark.parametrize(
    "data",
    [
        b"",
        _control(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 0), control=False),
        _control(struct.pack(">hh", 0, 1), struct.pack(">hi", 0, 0), count=2),
        _control(struct.pack(">hh", 0, 2), struct.pack(">hi", 0, 0)),  # a leader change
        _control(struct.pack(">hh", 0, 0), b"\x00\x00"),
        _control(struct.pack(">hh", 0, 0), None),
        _control(struct.pack(">hh", 0, 0), struct.pack(">hi", -1, 0)),
    ],
    ids=["empty", "not-control", "two-records", "leader-change", "short", "null", "bad-version"],
)
def test_what_is_not_a_marker_is_refused(data: bytes) -> None:
    with pytest.raises(MarkerFormatError):
        read_marker(data)
