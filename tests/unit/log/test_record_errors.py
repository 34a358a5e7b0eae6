"""KIP-467 record errors from the partition log: a batch with invalid records is refused whole,
naming each bad record's index and Kafka's LogValidator message for it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.log.record_errors import RecordValidationError, java_long
from brook.protocol.errors import Errors
from brook.protocol.records import build_batch, build_simple_batch, encode_record

NOW = 1_700_000_000_000
OpenLog = Callable[..., PartitionLog]
MakeConfig = Callable[..., LogConfig]
NO_TIMESTAMP_DELTA = -1 - NOW  # base + delta = -1: no timestamp
NO_KEY = "Compacted topic cannot accept message without key in topic partition topic-0"


def _refused(plog: PartitionLog, batch: bytes) -> RecordValidationError:
    end = plog.log_end_offset
    with pytest.raises(RecordValidationError) as info:
        plog.append_as_leader(batch, 0, NOW)
    assert plog.log_end_offset == end  # the whole batch is refused
    return info.value


@pytest.mark.parametrize("codec", [0, 1, 4])
def test_every_keyless_record_of_a_compacted_topic_is_named(
    open_log: OpenLog, make_config: MakeConfig, codec: int
) -> None:
    plog = open_log(config=make_config(cleanup_policy="compact"))
    items = [(b"k0", b"v"), (None, b"v"), (b"k2", None), (None, None), (None, b"w"), (None, b"x")]
    error = _refused(plog, build_simple_batch(items, timestamp=NOW, codec=codec))
    assert error.code == Errors.INVALID_RECORD
    assert error.record_errors == [(1, NO_KEY), (3, NO_KEY), (4, NO_KEY), (5, NO_KEY)]
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{NO_KEY}')" for i in (1, 3, 4))
    assert error.message == (
        "One or more records have been rejected due to 4 record errors in total, and only "
        f"showing the first three errors at most: [{shown}]"
    )
    keyed = build_simple_batch([(b"k0", b"v"), (b"k2", None)], timestamp=NOW, codec=codec)
    assert plog.append_as_leader(keyed, 0, NOW).first_offset == 0


def test_timestamps_out_of_bounds_are_named_with_kafkas_bounds(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    config = make_config(
        cleanup_policy="compact",
        message_timestamp_before_max_ms=1000,
        message_timestamp_after_max_ms=100,
    )
    plog = open_log(config=config)
    records = [
        encode_record(0, 0, b"a", b"in bounds"),
        encode_record(1, -5000, b"b", b"too old"),
        encode_record(2, 0, None, b"keyless and in bounds"),
        encode_record(3, -9000, None, b"keyless and too old: the key is reported"),
        encode_record(4, 101, b"e", b"too new"),
        encode_record(5, NO_TIMESTAMP_DELTA, b"f", b"no timestamp: never checked"),
    ]
    # a client's base offset shows in the messages, as record.offset() does in Kafka
    batch = build_batch(records, base_offset=7, base_timestamp=NOW, max_timestamp=NOW + 101)
    error = _refused(plog, batch)
    assert error.code == Errors.INVALID_TIMESTAMP
    assert error.message == "One or more records have been rejected due to invalid timestamp"
    bounds = f"[{NOW - 1000}, {NOW + 100}]"
    assert error.record_errors == [
        (1, f"Timestamp {NOW - 5000} of message with offset 8 is out of range. "
            f"The timestamp should be within {bounds}"),
        (2, NO_KEY),
        (3, NO_KEY),
        (4, f"Timestamp {NOW + 101} of message with offset 11 is out of range. "
            f"The timestamp should be within {bounds}"),
    ]  # fmt: skip


def test_unbounded_sides_print_as_kafka_prints_them(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    # Only the lower bound is set: Kafka's now + Long.MAX_VALUE wraps around.
    plog = open_log(config=make_config(message_timestamp_before_max_ms=1000))
    error = _refused(plog, build_simple_batch([b"old"], timestamp=NOW - 1001))
    high = java_long(NOW + 2**63 - 1)
    assert high < 0
    assert error.record_errors == [
        (0, f"Timestamp {NOW - 1001} of message with offset 0 is out of range. "
            f"The timestamp should be within [{NOW - 1000}, {high}]"),
    ]  # fmt: skip


@pytest.mark.parametrize("topic_type", ["LogAppendTime", "CreateTime"])
def test_a_producer_may_not_stamp_log_append_time(
    open_log: OpenLog, make_config: MakeConfig, topic_type: str
) -> None:
    plog = open_log(config=make_config(message_timestamp_type=topic_type))
    # A LogAppendTime batch's records read as its max timestamp, here none.
    stamped = build_batch(
        [encode_record(0, 0, b"key", b"a"), encode_record(1, 5, None, b"bc")],
        base_timestamp=NOW,
        max_timestamp=-1,
        log_append_time=True,
    )
    error = _refused(plog, stamped)
    assert error.code == Errors.INVALID_TIMESTAMP
    assert error.record_errors == [
        (0, "Invalid timestamp type in message DefaultRecord(offset=0, timestamp=-1, key=3 "
            "bytes, value=1 bytes). Producer should not set timestamp type to LogAppendTime."),
        (1, "Invalid timestamp type in message DefaultRecord(offset=1, timestamp=-1, key=0 "
            "bytes, value=2 bytes). Producer should not set timestamp type to LogAppendTime."),
    ]  # fmt: skip


def test_a_log_append_time_stamp_under_create_time_is_checked_as_a_timestamp(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    plog = open_log(config=make_config(message_timestamp_before_max_ms=1000))
    stale = build_batch(
        [encode_record(0, 0, None, b"a")],
        base_timestamp=NOW,
        max_timestamp=NOW - 2000,
        log_append_time=True,
    )
    error = _refused(plog, stale)
    assert error.record_errors[0][1].startswith(
        f"Timestamp {NOW - 2000} of message with offset 0 is out of range."
    )
    fresh = build_batch(
        [encode_record(0, -5000, None, b"a")],
        base_timestamp=NOW,
        max_timestamp=NOW,
        log_append_time=True,
    )
    assert plog.append_as_leader(fresh, 0, NOW).first_offset == 0
