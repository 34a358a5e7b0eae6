"""KIP-467 record errors: a client batch refused for some of its records, with each bad
record's index in the batch and Kafka's message for it, so the Produce response can name them
and a client fail exactly those records (the rest of the batch is refused with them).

The messages are LogValidator's, word for word, because clients show them to users; the
numbers in them use Java's long arithmetic, as Kafka prints them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import RECORD_NULL_KEY, RecordProblem

TIMESTAMPS_REJECTED = "One or more records have been rejected due to invalid timestamp"


def java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit integer, as Java's long arithmetic leaves it."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


class RecordValidationError(KafkaError):
    """A batch refused because of some of its records: INVALID_TIMESTAMP when any record's
    timestamp is refused, else INVALID_RECORD (Kafka's RecordValidationException)."""

    def __init__(self, code: int, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors


@dataclass(frozen=True, slots=True)
class TimestampRule:
    """What the topic accepts as record timestamps, for the messages: CreateTime bounds
    (``now`` minus ``before_ms`` to ``now`` plus ``after_ms``), and whether the batch's own
    LogAppendTime stamp is what is refused (the producer may not set it)."""

    now_ms: int
    before_ms: int
    after_ms: int
    log_append_time_refused: bool = False
    # A LogAppendTime batch's records all read as its max timestamp (DefaultRecordBatch).
    batch_timestamp: int | None = None


def record_validation_error(
    problems: Sequence[RecordProblem],
    topic_partition: str,
    base_offset: int,
    rule: TimestampRule,
) -> RecordValidationError:
    """The error Kafka's LogValidator.processRecordErrors raises for these problems."""
    errors: list[tuple[int, str]] = []
    any_timestamp = False
    for index, problem, offset_delta, timestamp, key_size, value_size in problems:
        offset = java_long(base_offset + offset_delta)
        if problem == RECORD_NULL_KEY:
            message = (
                "Compacted topic cannot accept message without key in topic partition "
                f"{topic_partition}"
            )
        else:
            any_timestamp = True
            if rule.batch_timestamp is not None:
                timestamp = rule.batch_timestamp
            if rule.log_append_time_refused:
                message = (
                    f"Invalid timestamp type in message DefaultRecord(offset={offset}, "
                    f"timestamp={timestamp}, key={max(key_size, 0)} bytes, "
                    f"value={max(value_size, 0)} bytes). Producer should not set timestamp "
                    "type to LogAppendTime."
                )
            else:
                message = (
                    f"Timestamp {timestamp} of message with offset {offset} is out of range. "
                    f"The timestamp should be within [{java_long(rule.now_ms - rule.before_ms)}, "
                    f"{java_long(rule.now_ms + rule.after_ms)}]"
                )
        errors.append((index, message))
    if any_timestamp:
        return RecordValidationError(Errors.INVALID_TIMESTAMP, TIMESTAMPS_REJECTED, errors)
    shown = ", ".join(f"RecordError(batchIndex={i}, message='{m}')" for i, m in errors[:3])
    return RecordValidationError(
        Errors.INVALID_RECORD,
        f"One or more records have been rejected due to {len(errors)} record errors in total, "
        f"and only showing the first three errors at most: [{shown}]",
        errors,
    )
