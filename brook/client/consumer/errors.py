"""The consumer's own exceptions. OffsetOutOfRangeError is the one a reader of fixed ranges
(the Spark source) catches to tell data loss (retention moved the log start) from other
failures."""

from __future__ import annotations

from collections.abc import Mapping

from brook.protocol.errors import Errors, KafkaError

from ..cluster import TopicPartition

__all__ = [
    "CommitFailedError",
    "GroupMembershipUnavailableError",
    "NoOffsetForPartitionError",
    "OffsetOutOfRangeError",
    "RebalanceInProgressError",
    "RecordDeserializationError",
]


def _names(tps: Mapping[TopicPartition, int]) -> str:
    return ", ".join(
        f"{tp.topic}-{tp.partition} at offset {off}" for tp, off in sorted(tps.items())
    )


class OffsetOutOfRangeError(KafkaError):
    """Fetch positions outside the partitions' logs with no reset policy (auto.offset.reset
    = none), or a requested range that starts below the log start (data lost to retention).

    ``offsets`` maps each partition to the offset that was out of range; ``log_start_offsets``
    and ``log_end_offsets`` hold the valid range where it is known.
    """

    def __init__(
        self,
        offsets: Mapping[TopicPartition, int],
        *,
        log_start_offsets: Mapping[TopicPartition, int] | None = None,
        log_end_offsets: Mapping[TopicPartition, int] | None = None,
        reason: str | None = None,
    ) -> None:
        self.offsets = dict(offsets)
        self.log_start_offsets = dict(log_start_offsets or {})
        self.log_end_offsets = dict(log_end_offsets or {})
        ranges = [
            f"{tp.topic}-{tp.partition} holds [{self.log_start_offsets[tp]}, "
            f"{self.log_end_offsets.get(tp, '?')})"
            for tp in sorted(self.offsets)
            if tp in self.log_start_offsets
        ]
        text = f"fetch position out of range for {_names(self.offsets)}"
        if ranges:
            text += " (" + "; ".join(ranges) + ")"
        text += f": {reason}" if reason else " and auto.offset.reset is none"
        super().__init__(Errors.OFFSET_OUT_OF_RANGE, text)


class NoOffsetForPartitionError(KafkaError):
    """A partition has no position (no seek, no committed offset) and auto.offset.reset is
    none, as Java's NoOffsetForPartitionException."""

    def __init__(self, partitions: list[TopicPartition]) -> None:
        self.partitions = sorted(partitions)
        names = ", ".join(f"{tp.topic}-{tp.partition}" for tp in self.partitions)
        super().__init__(
            Errors.OFFSET_OUT_OF_RANGE,
            f"undefined offset with no reset policy (auto.offset.reset=none) for partitions: "
            f"{names}; seek() to a position first",
        )


class GroupMembershipUnavailableError(RuntimeError):
    """subscribe(), commits and committed offsets need a group coordinator, which this
    consumer does not have; use assign() and seek() instead."""


class RecordDeserializationError(ValueError):
    """key.deserializer or value.deserializer failed on a record; the position stays at it."""

    def __init__(self, tp: TopicPartition, offset: int, cause: BaseException) -> None:
        self.tp = tp
        self.offset = offset
        super().__init__(
            f"error deserializing the record at offset {offset} of {tp.topic}-{tp.partition}: "
            f"{cause!r}; seek() past it to continue"
        )


class CommitFailedError(KafkaError):
    """A commit the group no longer accepts from this member (Java's CommitFailedException):
    the member was removed (session timeout, max.poll.interval.ms exceeded) or the group moved
    to a new generation. The partitions may now belong to another member; poll() rejoins."""

    def __init__(self, code: int, message: str | None = None) -> None:
        super().__init__(
            code,
            message
            or "Commit cannot be completed since the group has already rebalanced and assigned "
            "the partitions to another member. This means that the time between subsequent "
            "calls to poll() was longer than the configured max.poll.interval.ms, which "
            "typically implies that the poll loop is spending too much time message "
            "processing. You can address this either by increasing max.poll.interval.ms or "
            "by reducing the maximum size of batches returned in poll() with "
            "max.poll.records.",
        )


class RebalanceInProgressError(KafkaError):
    """A commit during a rebalance (Java's RebalanceInProgressException): poll() to finish the
    rebalance, then commit again; the partitions are still this member's until revoked."""

    def __init__(self) -> None:
        super().__init__(
            Errors.REBALANCE_IN_PROGRESS,
            "Offset commit cannot be completed since the consumer is undergoing a rebalance "
            "for auto partition assignment. You can try completing the rebalance by calling "
            "poll() and then retry the operation.",
        )
