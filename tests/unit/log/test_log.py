"""The partition log: appends as leader and follower, validation, idempotence, reads, rolls,
timestamps, epochs, truncation, retention, flushing and reopening."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from crc32c import crc32c

from brook.log.config import LogConfig
from brook.log.file_pool import FilePool
from brook.log.log import PartitionLog, parse_topic_partition
from brook.protocol.batch import CONTROL_BIT, read_header
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_batch, build_simple_batch, encode_record, iter_records

NOW = 1_700_000_000_000
OpenLog = Callable[..., PartitionLog]
MakeConfig = Callable[..., LogConfig]


def _batch(count: int = 2, ts: int = NOW, size: int = 50, **kwargs: int) -> bytes:
    return build_simple_batch([b"v" * size] * count, timestamp=ts, **kwargs)


def _records(data: bytes) -> list[tuple[int, bytes | None]]:
    return [(r.offset, r.value) for _, r in iter_records(data)]


def _all_offsets(plog: PartitionLog, max_bytes: int = 1 << 20) -> list[int]:
    offsets: list[int] = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, max_bytes).records
        batch_offsets = [r.offset for _, r in iter_records(data)]
        offsets.extend(o for o in batch_offsets if o >= offset)
        offset = batch_offsets[-1] + 1
    return offsets


def _code(call: Callable[..., object], *args: object) -> int:
    with pytest.raises(KafkaError) as info:
        call(*args)
    return info.value.code


def test_directory_names_split_at_the_last_dash() -> None:
    assert parse_topic_partition("my-topic.v2-13") == ("my-topic.v2", 13)
    assert parse_topic_partition("__cluster_metadata-0") == ("__cluster_metadata", 0)
    for bad in ("topic", "topic-", "-3", "topic-x"):
        with pytest.raises(ValueError):
            parse_topic_partition(bad)


def test_leader_append_assigns_offsets_and_stamps_the_epoch(open_log: OpenLog) -> None:
    plog = open_log("orders.eu-west-2-7")
    assert (plog.topic, plog.partition) == ("orders.eu-west-2", 7)
    first = plog.append_as_leader(_batch(3), 5, NOW)
    second = plog.append_as_leader(_batch(2), 5, NOW)
    assert (first.first_offset, first.last_offset, first.records_count) == (0, 2, 3)
    assert (second.first_offset, second.last_offset) == (3, 4)
    assert first.log_append_time_ms == -1 and not first.duplicate
    assert plog.log_end_offset == 5
    data = plog.read(3, 1 << 20).records
    header = read_header(data)
    assert (header.base_offset, header.partition_leader_epoch) == (3, 5)
    assert plog.epoch_cache.entries() == [(5, 0)]
    assert plog.latest_epoch() == 5


def test_log_append_time(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = open_log(config=make_config(message_timestamp_type="LogAppendTime"))
    result = plog.append_as_leader(_batch(2, ts=5), 0, NOW)
    assert result.log_append_time_ms == NOW
    data = plog.read(0, 1 << 20).records
    header = read_header(data)
    assert header.log_append_time and header.max_timestamp == NOW
    assert [r.timestamp for _, r in iter_records(data)] == [NOW, NOW]


@pytest.mark.parametrize(
    ("mutate", "code"),
    [
        (lambda b: b[:-1], Errors.CORRUPT_MESSAGE),
        (lambda b: b[:30], Errors.CORRUPT_MESSAGE),
        (lambda b: b[:-1] + bytes([b[-1] ^ 1]), Errors.CORRUPT_MESSAGE),
        (lambda b: b[:16] + b"\x01" + b[17:], Errors.INVALID_RECORD),
        (lambda b: b + b, Errors.INVALID_RECORD),
        (lambda b: b + b"\x00\x01", Errors.CORRUPT_MESSAGE),
    ],
)
def test_malformed_batches_are_rejected(
    open_log: OpenLog, mutate: Callable[[bytes], bytes], code: int
) -> None:
    plog = open_log()
    bad = mutate(_batch())
    assert _code(plog.append_as_leader, bad, 0, NOW) == code
    assert plog.log_end_offset == 0 and plog.size_in_bytes() == 0


def _with_crc(batch: bytearray) -> bytes:
    batch[17:21] = crc32c(bytes(batch[21:])).to_bytes(4, "big")
    return bytes(batch)


def test_batches_clients_may_not_send(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = open_log(config=make_config(max_message_bytes=300, segment_bytes=1000))
    control = bytearray(_batch(1))
    control[22] |= CONTROL_BIT  # low byte of the attributes
    assert _code(plog.append_as_leader, _with_crc(control), 0, NOW) == Errors.INVALID_RECORD
    empty = bytearray(_batch(1))
    empty[57:61] = bytes(4)  # recordsCount 0
    assert _code(plog.append_as_leader, _with_crc(empty), 0, NOW) == Errors.INVALID_RECORD
    assert _code(plog.append_as_leader, _batch(size=400), 0, NOW) == Errors.MESSAGE_TOO_LARGE
    plog.update_config(make_config(max_message_bytes=2000, segment_bytes=1000))
    assert (
        _code(plog.append_as_leader, _batch(1, size=1100), 0, NOW) == Errors.RECORD_LIST_TOO_LARGE
    )
    assert plog.log_end_offset == 0


@pytest.mark.parametrize("codec", [0, 1, 4])
def test_compacted_topics_take_keyed_records_only(
    open_log: OpenLog, make_config: MakeConfig, codec: int
) -> None:
    plog = open_log(config=make_config(cleanup_policy="compact,delete"))
    keyed = build_simple_batch([(b"k1", b"v"), (b"k2", None)], timestamp=NOW, codec=codec)
    assert plog.append_as_leader(keyed, 0, NOW).first_offset == 0
    one_keyless = build_simple_batch([(b"k1", b"v"), (None, b"v")], timestamp=NOW, codec=codec)
    assert _code(plog.append_as_leader, one_keyless, 0, NOW) == Errors.INVALID_RECORD
    assert plog.log_end_offset == 2
    plog.update_config(make_config(cleanup_policy="delete"))
    assert plog.append_as_leader(one_keyless, 0, NOW).first_offset == 2


def test_create_time_bounds(open_log: OpenLog, make_config: MakeConfig) -> None:
    config = make_config(message_timestamp_before_max_ms=1000, message_timestamp_after_max_ms=100)
    plog = open_log(config=config)
    plog.append_as_leader(_batch(ts=NOW - 1000), 0, NOW)
    plog.append_as_leader(_batch(ts=NOW + 100), 0, NOW)
    assert _code(plog.append_as_leader, _batch(ts=NOW - 1001), 0, NOW) == Errors.INVALID_TIMESTAMP
    assert _code(plog.append_as_leader, _batch(ts=NOW + 101), 0, NOW) == Errors.INVALID_TIMESTAMP
    assert plog.log_end_offset == 4


def _record_with_extra_byte() -> bytes:
    record = encode_record(1, 0, None, b"v")
    length = record[0] >> 1  # a one-byte zigzag varint
    return bytes([(length + 1) << 1]) + record[1:] + b"\x00"


def _record_with_null_header_key() -> bytes:
    # attributes, deltas, null key, 1-byte value, one header whose key length is -1
    body = b"\x00\x00\x02\x01\x02v\x02\x01\x00"
    return bytes([len(body) << 1]) + body


@pytest.mark.parametrize("codec", [0, 3])
@pytest.mark.parametrize(
    "records",
    [
        pytest.param([encode_record(0, 0, None, b"v"), _record_with_extra_byte()], id="longer"),
        pytest.param(
            [encode_record(0, 0, None, b"v"), _record_with_null_header_key()], id="null-header-key"
        ),
        pytest.param(
            [encode_record(0, 0, None, b"v") + encode_record(1, 0, None, b"w")],
            id="more-records-than-counted",
        ),
        pytest.param([encode_record(0, 0, None, b"v"), b""], id="fewer-records-than-counted"),
        pytest.param([encode_record(0, 0, None, b"v")[:-1] + b"\x05"], id="bad-header-count"),
    ],
)
def test_malformed_records_in_a_well_formed_batch(
    open_log: OpenLog, codec: int, records: list[bytes]
) -> None:
    # The header and its CRC are right; Kafka's validator still reads every record.
    plog = open_log()
    bad = build_batch(records, base_timestamp=NOW, max_timestamp=NOW, codec=codec)
    assert _code(plog.append_as_leader, bad, 0, NOW) == Errors.INVALID_RECORD
    assert plog.log_end_offset == 0 and plog.size_in_bytes() == 0
    good = build_batch(
        [encode_record(0, 0, None, b"v")], base_timestamp=NOW, max_timestamp=NOW, codec=codec
    )
    assert plog.append_as_leader(good, 0, NOW).first_offset == 0


def test_every_record_timestamp_is_checked(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = open_log(config=make_config(message_timestamp_before_max_ms=1000))
    # The first and the largest timestamps are within bounds; the middle record's is not.
    records = [
        encode_record(0, 0, None, b"a"),
        encode_record(1, -5000, None, b"b"),
        encode_record(2, 10, None, b"c"),
    ]
    batch = build_batch(records, base_timestamp=NOW, max_timestamp=NOW + 10)
    assert _code(plog.append_as_leader, batch, 0, NOW) == Errors.INVALID_TIMESTAMP
    # A timestamp of -1 (none) is not checked.
    none = build_batch([encode_record(0, 0, None, b"a")], base_timestamp=-1, max_timestamp=-1)
    assert plog.append_as_leader(none, 0, NOW).first_offset == 0


def test_the_batch_carries_its_records_largest_timestamp(open_log: OpenLog) -> None:
    plog = open_log()
    records = [encode_record(0, 0, None, b"a"), encode_record(1, 7, None, b"b")]
    wrong = build_batch(records, base_timestamp=NOW, max_timestamp=NOW + 999)
    plog.append_as_leader(wrong, 0, NOW)
    data = plog.read(0, 1 << 20).records
    assert read_header(data).max_timestamp == NOW + 7
    assert [r.timestamp for _, r in iter_records(data)] == [NOW, NOW + 7]  # CRC verified
    assert plog.max_timestamp_offset() == (1, NOW + 7, 0)


def test_clients_may_not_stamp_log_append_time(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = open_log(config=make_config(message_timestamp_type="LogAppendTime"))
    stamped = build_batch(
        [encode_record(0, 0, None, b"a")],
        base_timestamp=NOW,
        max_timestamp=NOW,
        log_append_time=True,
    )
    assert _code(plog.append_as_leader, stamped, 0, NOW) == Errors.INVALID_TIMESTAMP
    assert plog.log_end_offset == 0


def test_idempotent_producer(open_log: OpenLog) -> None:
    plog = open_log()
    pid = 77

    def produce(seq: int, count: int = 2, epoch: int = 0) -> bytes:
        return _batch(count, producer_id=pid, producer_epoch=epoch, base_sequence=seq)

    plog.append_as_leader(_batch(3), 0, NOW)
    first = plog.append_as_leader(produce(0), 0, NOW)
    plog.append_as_leader(produce(2), 0, NOW)
    retry = plog.append_as_leader(produce(0), 0, NOW)
    assert retry.duplicate
    assert (retry.first_offset, retry.last_offset) == (first.first_offset, first.last_offset)
    assert plog.log_end_offset == 7
    assert _code(plog.append_as_leader, produce(9), 0, NOW) == Errors.OUT_OF_ORDER_SEQUENCE_NUMBER
    plog.append_as_leader(produce(0, epoch=1), 0, NOW)
    assert (
        _code(plog.append_as_leader, produce(2, epoch=0), 0, NOW) == Errors.INVALID_PRODUCER_EPOCH
    )
    assert plog.log_end_offset == 9


def test_producer_state_survives_reopen_and_follows_truncation(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    config = make_config(segment_bytes=600)
    plog = open_log(config=config)
    pid = 5
    for seq in range(0, 20, 2):
        plog.append_as_leader(
            _batch(2, producer_id=pid, producer_epoch=0, base_sequence=seq), 0, NOW
        )
    assert len(plog.segments()) > 2
    plog.close()
    reopened = open_log(config=config, had_clean_shutdown=True)
    retry = _batch(2, producer_id=pid, producer_epoch=0, base_sequence=18)
    assert reopened.append_as_leader(retry, 0, NOW).duplicate
    reopened.truncate_to(10)
    # after truncation the producer's last sequence is 9 again
    next_batch = _batch(2, producer_id=pid, producer_epoch=0, base_sequence=10)
    assert reopened.append_as_leader(next_batch, 0, NOW).first_offset == 10
    reopened.close_files()
    crashed = open_log(config=config)
    again = _batch(2, producer_id=pid, producer_epoch=0, base_sequence=10)
    assert crashed.append_as_leader(again, 0, NOW).duplicate


def test_follower_append_keeps_the_leaders_offsets_and_epochs(open_log: OpenLog) -> None:
    leader = open_log("t-0")
    leader.append_as_leader(_batch(2), 3, NOW)
    leader.append_as_leader(_batch(4), 3, NOW)
    leader.append_as_leader(_batch(1), 7, NOW)
    chunk = leader.read(0, 1 << 20).records
    follower = open_log("t-1")
    result = follower.append_as_follower(chunk)
    assert (result.first_offset, result.last_offset, result.records_count) == (0, 6, 7)
    assert follower.read(0, 1 << 20).records == chunk
    assert follower.epoch_cache.entries() == [(3, 0), (7, 6)]
    assert follower.end_offset_for_epoch(3) == (3, 6)
    assert follower.append_as_follower(b"").records_count == 0


def test_follower_append_checks_crc_and_that_offsets_come_after_the_log_end(
    open_log: OpenLog,
) -> None:
    leader = open_log("t-0")
    for _ in range(3):
        leader.append_as_leader(_batch(2), 1, NOW)
    whole = bytearray(leader.read(0, 1 << 20).records)
    whole[-1] ^= 0xFF
    follower = open_log("t-1")
    assert _code(follower.append_as_follower, bytes(whole)) == Errors.CORRUPT_MESSAGE
    assert follower.log_end_offset == 0
    # Offsets may skip (a compacted leader's log), as Kafka's follower accepts...
    later = leader.read(2, 1 << 20).records
    assert follower.append_as_follower(later).first_offset == 2
    assert follower.log_end_offset == 6
    # ...but never go back below the log end.
    assert _code(follower.append_as_follower, later) == Errors.INVALID_RECORD
    assert follower.log_end_offset == 6
    # nor overlap each other within one fetch: nothing of it is written
    overlapping = _batch(2, base_offset=6) + _batch(2, base_offset=7)
    assert _code(follower.append_as_follower, overlapping) == Errors.INVALID_RECORD
    assert follower.log_end_offset == 6
    assert _all_offsets(follower) == [2, 3, 4, 5]


def test_follower_batches_past_a_gap_wider_than_a_segment_holds_start_a_segment_at_them(
    open_log: OpenLog,
) -> None:
    """Offsets a cleaned leader skipped may be more than a segment's 2^31 relative offsets:
    as Kafka's follower, the segment rolled for such a batch starts at its base offset,
    not at the log end (whose relative offsets could not reach it), also when the gap is
    between two batches of one fetch."""
    follower = open_log("t-1")
    follower.append_as_follower(_batch(2))
    far = 2 + (1 << 31) + 10
    farther = far + (1 << 31) + 10
    chunk = _batch(3, base_offset=far) + _batch(2, base_offset=farther)
    follower.append_as_follower(chunk)
    assert follower.log_end_offset == farther + 2
    assert [s.base_offset for s in follower.segments()] == [0, far, farther]
    expected = [0, 1, far, far + 1, far + 2, farther, farther + 1]
    assert _all_offsets(follower) == expected
    follower.close_files()
    reopened = open_log("t-1")  # the indexes it wrote check out, nothing is cut
    assert reopened.log_end_offset == farther + 2
    assert _all_offsets(reopened) == expected
    # an empty log (a follower starting over) takes the batch in a segment at its offset
    reopened.truncate_fully_and_start_at(5)
    reopened.append_as_follower(_batch(2, base_offset=far))
    assert [s.base_offset for s in reopened.segments()] == [far]
    assert _all_offsets(reopened) == [far, far + 1]
    reopened.close_files()
    assert _all_offsets(open_log("t-1")) == [far, far + 1]


def test_follower_chunk_larger_than_a_segment_is_split(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    leader = open_log("t-0")
    for _ in range(20):
        leader.append_as_leader(_batch(2, size=100), 1, NOW)
    follower = open_log("t-1", config=make_config(segment_bytes=1000))
    follower.append_as_follower(leader.read(0, 1 << 20).records)
    assert follower.log_end_offset == 40
    assert all(s.size <= 1000 for s in follower.segments())
    assert len(follower.segments()) > 3
    assert _all_offsets(follower) == list(range(40))


def test_read_range_and_limits(open_log: OpenLog) -> None:
    plog = open_log()
    for _ in range(4):
        plog.append_as_leader(_batch(3), 0, NOW)
    size = len(_batch(3))
    assert _code(plog.read, 13, 100) == Errors.OFFSET_OUT_OF_RANGE
    assert _code(plog.read, -1, 100) == Errors.OFFSET_OUT_OF_RANGE
    end = plog.read(12, 100)
    assert (end.records, end.log_start_offset, end.log_end_offset) == (b"", 0, 12)
    # the batch holding the offset comes whole
    assert [o for o, _ in _records(plog.read(4, 100).records)] == [3, 4, 5]
    assert len(plog.read(0, 2 * size + 10).records) == 2 * size
    assert plog.read(0, 10, min_one_batch=False).records == b""
    # below the high watermark only
    assert [o for o, _ in _records(plog.read(0, 1 << 20, max_offset=6).records)] == list(range(6))
    assert plog.read(6, 1 << 20, max_offset=6).records == b""
    assert plog.read(3, 1 << 20, max_offset=5).records == b""


def test_reads_cross_segments_and_sequential_reads_continue(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    plog = open_log(config=make_config(segment_bytes=700, index_interval_bytes=100))
    for _ in range(30):
        plog.append_as_leader(_batch(2), 0, NOW)
    assert len(plog.segments()) > 5
    for max_bytes in (1, 200, 500, 5000):
        assert _all_offsets(plog, max_bytes) == list(range(60))
    # a read may stop at the end of its segment; the next one continues in the next segment
    first = plog.segments()[0]
    data = plog.read(first.next_offset - 1, 1 << 20).records
    assert _records(data)[-1][0] == first.next_offset - 1
    assert _records(plog.read(first.next_offset, 1 << 20).records)[0][0] == first.next_offset


def test_rolls(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = open_log(
        config=make_config(segment_ms=1000, segment_index_bytes=16, index_interval_bytes=0)
    )
    plog.append_as_leader(_batch(ts=NOW), 0, NOW)
    plog.append_as_leader(_batch(ts=NOW + 1000), 0, NOW + 1000)
    assert len(plog.segments()) == 1
    plog.append_as_leader(_batch(ts=NOW + 1001), 0, NOW + 1001)
    assert [s.base_offset for s in plog.segments()] == [0, 4]
    assert (plog.dir / "00000000000000000004.snapshot").exists()
    # one entry fills a 16-byte time index: the append after it rolls
    for i in range(2):
        plog.append_as_leader(_batch(ts=NOW + 1001 + i), 0, NOW + 1001)
    assert [s.base_offset for s in plog.segments()] == [0, 4, 8]


def test_offset_for_timestamp_and_max_timestamp(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = open_log(config=make_config(segment_bytes=500, index_interval_bytes=50))
    assert plog.offset_for_timestamp(0) is None
    assert plog.max_timestamp_offset() is None
    for i in range(10):
        records = [encode_record(j, j * 10, None, b"x" * 40) for j in range(3)]
        ts = NOW + 100 * i
        batch = build_batch(records, base_timestamp=ts, max_timestamp=ts + 20)
        plog.append_as_leader(batch, i // 5, NOW + 100 * i)
    assert len(plog.segments()) > 2
    assert plog.offset_for_timestamp(NOW + 310) == (10, NOW + 310, 0)
    assert plog.offset_for_timestamp(NOW + 321) == (12, NOW + 400, 0)
    assert plog.offset_for_timestamp(NOW + 501) == (16, NOW + 510, 1)
    assert plog.offset_for_timestamp(0) == (0, NOW, 0)
    assert plog.offset_for_timestamp(NOW + 921) is None
    assert plog.max_timestamp_offset() == (29, NOW + 920, 1)
    plog.maybe_increment_log_start_offset(4)
    assert plog.offset_for_timestamp(0) == (4, NOW + 110, 0)


def test_end_offset_for_epoch(open_log: OpenLog) -> None:
    plog = open_log()
    assert plog.end_offset_for_epoch(0) == (-1, -1)
    plog.append_as_leader(_batch(2), 1, NOW)
    plog.append_as_leader(_batch(2), 3, NOW)
    plog.append_as_leader(_batch(2), 3, NOW)
    assert plog.end_offset_for_epoch(3) == (3, 6)
    assert plog.end_offset_for_epoch(2) == (1, 2)
    assert plog.end_offset_for_epoch(0) == (0, 0)
    assert plog.end_offset_for_epoch(4) == (-1, -1)


def test_truncate_to(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = open_log(config=make_config(segment_bytes=500))
    for i in range(12):
        plog.append_as_leader(_batch(2), i // 4, NOW)
    plog.flush()
    plog.truncate_to(13)  # inside a batch: the whole batch goes
    assert plog.log_end_offset == 12
    assert plog.recovery_point == 12
    assert plog.epoch_cache.entries() == [(0, 0), (1, 8)]
    assert _all_offsets(plog) == list(range(12))
    assert plog.segments()[-1].next_offset == 12
    plog.truncate_to(100)
    assert plog.log_end_offset == 12
    assert plog.append_as_leader(_batch(2), 9, NOW).first_offset == 12
    assert plog.epoch_cache.entries() == [(0, 0), (1, 8), (9, 12)]


def test_truncate_fully_and_start_at(open_log: OpenLog) -> None:
    plog = open_log()
    plog.append_as_leader(_batch(2), 1, NOW)
    plog.truncate_fully_and_start_at(500)
    assert (plog.log_start_offset, plog.log_end_offset, plog.recovery_point) == (500, 500, 500)
    assert plog.epoch_cache.is_empty()
    assert [s.base_offset for s in plog.segments()] == [500]
    assert plog.append_as_leader(_batch(2), 2, NOW).first_offset == 500
    plog.truncate_to(3)  # below the log start: start afresh there
    assert (plog.log_start_offset, plog.log_end_offset) == (3, 3)


def test_increment_log_start_offset(open_log: OpenLog) -> None:
    plog = open_log()
    for _ in range(3):
        plog.append_as_leader(_batch(2), 0, NOW)
    plog.maybe_increment_log_start_offset(3)
    assert plog.log_start_offset == 3
    plog.maybe_increment_log_start_offset(1)
    assert plog.log_start_offset == 3
    assert _code(plog.read, 2, 100) == Errors.OFFSET_OUT_OF_RANGE
    assert _records(plog.read(3, 1 << 20).records)[0][0] == 2  # the batch holding offset 3
    assert _code(plog.maybe_increment_log_start_offset, 7) == Errors.OFFSET_OUT_OF_RANGE
    assert plog.epoch_cache.entries() == [(0, 3)]


def _filled(
    open_log: OpenLog, make_config: MakeConfig, keyed: bool = False, **config: object
) -> PartitionLog:
    plog = open_log(config=make_config(segment_bytes=500, **config))
    for i in range(12):
        ts = NOW + 1000 * i
        batch = (
            build_simple_batch([(b"k", b"v" * 50)] * 2, timestamp=ts) if keyed else _batch(2, ts=ts)
        )
        plog.append_as_leader(batch, 0, ts)
    return plog


def test_retention_by_time(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = _filled(open_log, make_config, retention_ms=5000)
    bases = [s.base_offset for s in plog.segments()]
    newest = [s.max_timestamp for s in plog.segments()]
    now = NOW + 11000 + 1
    expected = sum(1 for ts in newest[:-1] if now - ts > 5000)
    assert plog.delete_old_segments(now) == expected > 0
    assert plog.log_start_offset == bases[expected]
    assert [s.base_offset for s in plog.segments()] == bases[expected:]
    assert not any(plog.dir.glob("*.deleted"))
    assert _all_offsets(plog) == list(range(bases[expected], 24))


def test_retention_never_passes_the_high_watermark(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    plog = _filled(open_log, make_config, retention_ms=0)
    second = plog.segments()[1].base_offset
    assert plog.delete_old_segments(NOW * 2, high_watermark=second) == 1
    assert plog.log_start_offset == second
    assert plog.delete_old_segments(NOW * 2, high_watermark=second) == 0


def test_retention_rolls_a_wholly_expired_active_segment(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    plog = _filled(open_log, make_config, retention_ms=0)
    count = len(plog.segments())
    assert plog.delete_old_segments(NOW * 2) == count
    assert plog.log_start_offset == plog.log_end_offset == 24
    assert [s.base_offset for s in plog.segments()] == [24]
    assert plog.delete_old_segments(NOW * 2) == 0
    assert plog.epoch_cache.entries() == [(0, 24)]
    assert plog.append_as_leader(_batch(2), 1, NOW).first_offset == 24


def test_retention_by_size(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = _filled(open_log, make_config, retention_bytes=1000)
    plog.delete_old_segments(NOW)
    assert plog.size_in_bytes() >= 1000
    assert plog.size_in_bytes() - plog.segments()[0].size < 1000


def test_retention_of_segments_below_the_log_start(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    plog = _filled(open_log, make_config, keyed=True, retention_ms=-1, cleanup_policy="compact")
    third = plog.segments()[2].base_offset
    plog.maybe_increment_log_start_offset(third + 1)
    assert plog.delete_old_segments(NOW * 2) == 2
    assert plog.log_start_offset == third + 1
    assert plog.segments()[0].base_offset == third


def test_flush_policy_and_recovery_point(open_log: OpenLog, make_config: MakeConfig) -> None:
    plog = open_log(config=make_config(flush_messages=5, flush_ms=1000), now_ms=NOW)
    assert not plog.needs_flush(NOW)
    plog.append_as_leader(_batch(2), 0, NOW)
    assert plog.unflushed_messages() == 2
    assert not plog.needs_flush(NOW)
    plog.append_as_leader(_batch(3), 0, NOW)
    assert plog.needs_flush(NOW)
    plog.flush(up_to=2)
    assert plog.recovery_point == 2 and plog.unflushed_messages() == 3
    plog.flush()
    assert plog.recovery_point == 5 and not plog.needs_flush(NOW * 2)
    plog.append_as_leader(_batch(1), 0, NOW)
    flushed_at = plog._last_flush_ms
    assert not plog.needs_flush(flushed_at + 999)
    assert plog.needs_flush(flushed_at + 1000)


def test_appends_never_fsync_and_the_next_flush_syncs_what_they_wrote(
    open_log: OpenLog, make_config: MakeConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Appends run on the event loop: creating the log, new epochs, rolls (with producer
    snapshots) write files but leave every fsync to the flush, which runs on a worker."""
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    plog = open_log("fresh-0", config=make_config(segment_bytes=400), topic_id=uuid.uuid4())
    for i in range(12):
        plog.append_as_leader(
            _batch(2, producer_id=7, producer_epoch=0, base_sequence=2 * i), i // 4, NOW
        )
    assert len(plog.segments()) > 2 and plog.epoch_cache.entries() == [(0, 0), (1, 8), (2, 16)]
    assert synced == []
    plog.flush()
    directory = tmp_path / "fresh-0"
    for path in (
        directory / "leader-epoch-checkpoint",
        directory / "partition.metadata",
        directory,
        tmp_path,
        *(s.log_path for s in plog.segments()),
        *directory.glob("*.snapshot"),
    ):
        assert str(path) in synced, path
    assert plog.recovery_point == plog.log_end_offset == 24
    synced.clear()
    plog.flush()
    assert synced == []  # nothing new to sync


def test_flush_on_a_worker_thread_during_appends(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    plog = open_log(config=make_config(segment_bytes=2000, retention_bytes=5000))
    stop = threading.Event()
    errors: list[BaseException] = []

    def flusher() -> None:
        while not stop.is_set():
            try:
                plog.flush()
            except BaseException as exc:  # reported by the assertion below
                errors.append(exc)

    thread = threading.Thread(target=flusher)
    thread.start()
    deleted = 0
    for i in range(300):
        plog.append_as_leader(_batch(2), 0, NOW)
        if i % 20 == 19:
            deleted += plog.delete_old_segments(NOW)
    stop.set()
    thread.join()
    assert not errors and deleted > 10
    plog.flush()
    assert plog.recovery_point == plog.log_end_offset == 600


def test_close_and_reopen(open_log: OpenLog, make_config: MakeConfig) -> None:
    config = make_config(segment_bytes=600)
    topic_id = uuid.uuid4()
    plog = open_log(config=config, topic_id=topic_id)
    for i in range(10):
        plog.append_as_leader(_batch(2), i // 3, NOW)
    plog.close()
    assert (plog.dir / "partition.metadata").exists()
    assert (plog.dir / "00000000000000000020.snapshot").exists()
    reopened = open_log(config=config, had_clean_shutdown=True)
    assert reopened.topic_id == topic_id
    assert reopened.log_end_offset == 20 and reopened.recovery_point == 20
    assert reopened.epoch_cache.entries() == plog.epoch_cache.entries()
    assert _all_offsets(reopened) == list(range(20))
    reopened.close()
    with pytest.raises(KafkaError) as info:
        open_log(config=config, topic_id=uuid.uuid4(), had_clean_shutdown=True)
    assert info.value.code == Errors.INCONSISTENT_TOPIC_ID


def test_a_pool_of_one_descriptor_serves_every_segment(
    open_log: OpenLog, make_config: MakeConfig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Segment files closed by the pool reopen on use; the flush fsyncs the ones written
    since their last fsync, reopening those the pool closed in between."""
    synced: list[str] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    pool = FilePool(1)
    config = make_config(segment_bytes=400, index_interval_bytes=100)
    logs = [open_log(f"t-{i}", config=config, files=pool) for i in range(3)]
    for _ in range(12):
        for plog in logs:  # round robin: each append reopens its active segment
            plog.append_as_leader(_batch(2), 0, NOW)
    assert pool.open_count == 1 and all(len(plog.segments()) > 2 for plog in logs)
    first = logs[0]
    first.flush()
    assert first.recovery_point == first.log_end_offset == 24
    for segment in first.segments():
        assert str(segment.log_path) in synced
        assert str(segment.offset_index.path) in synced
    synced.clear()
    first.flush()
    assert synced == []
    for plog in logs:
        assert _all_offsets(plog) == list(range(24))
    for plog in logs:
        plog.close()
    assert pool.open_count == 0 and pool.file_count == 0
    reopened = open_log("t-1", config=config, had_clean_shutdown=True, files=pool)
    assert _all_offsets(reopened) == list(range(24))


def test_close_takes_a_producer_snapshot_only_past_the_latest_one(
    open_log: OpenLog, make_config: MakeConfig, tmp_path: Path
) -> None:
    """As Kafka: an empty log at 0 needs none, and neither does a log closed again at the
    offset of its latest snapshot (thousands of logs close in a clean shutdown)."""
    empty = open_log("empty-0")
    empty.close()
    assert not list((tmp_path / "empty-0").glob("*.snapshot"))
    plog = open_log("full-0", config=make_config(segment_bytes=10**6))
    for _ in range(3):
        plog.append_as_leader(_batch(2), 0, NOW)
    plog.close()
    snapshot = tmp_path / "full-0" / "00000000000000000006.snapshot"
    written = snapshot.stat().st_mtime_ns
    again = open_log("full-0", had_clean_shutdown=True)
    again.close()
    assert snapshot.stat().st_mtime_ns == written
    assert [p.name for p in (tmp_path / "full-0").glob("*.snapshot")] == [snapshot.name]


def test_delete_removes_the_directory(open_log: OpenLog, tmp_path: Path) -> None:
    plog = open_log()
    plog.append_as_leader(_batch(2), 0, NOW)
    plog.delete()
    assert not (tmp_path / "topic-0").exists()


def test_compressed_batches_too_big_to_check_are_stored_as_sent(
    open_log: OpenLog, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    import brook.log.log as log_module

    monkeypatch.setattr(log_module, "_MAX_CHECKED_PAYLOAD", 1000)
    plog = open_log(config=make_config(message_timestamp_before_max_ms=1000))
    big = build_batch(
        [encode_record(i, 0, None, bytes(100)) for i in range(20)],
        base_timestamp=NOW,
        max_timestamp=NOW,
        codec=4,
    )
    assert plog.append_as_leader(big, 0, NOW).records_count == 20
    # Its header's timestamps are still checked.
    old = build_batch(
        [encode_record(i, 0, None, bytes(100)) for i in range(20)],
        base_timestamp=NOW - 5000,
        max_timestamp=NOW - 5000,
        codec=4,
    )
    assert _code(plog.append_as_leader, old, 0, NOW) == Errors.INVALID_TIMESTAMP
    # Below the limit, the records themselves are checked.
    small = build_batch(
        [encode_record(0, 0, None, b"v"), b""], base_timestamp=NOW, max_timestamp=NOW, codec=4
    )
    assert _code(plog.append_as_leader, small, 0, NOW) == Errors.INVALID_RECORD
