"""One followed partition as a pure state machine (Kafka's PartitionFetchState and the
decisions of AbstractFetcherThread): where the next fetch starts, what a response does to it,
and when it may fetch again. No I/O and no clock of its own: the fetcher passes ``now_ms`` and
the log's figures in, and carries out what comes back (truncations, the follower's high
watermark and log start).

Phases (facts §4.4):

- ``TRUNCATING``: the log has no leader epoch to fetch with, so it is first truncated to its
  high watermark and fetched from there without a last fetched epoch;
- ``FETCHING``: in the next Fetch at ``fetch_offset`` with ``last_fetched_epoch``, unless
  backed off until ``delayed_until_ms`` (``replica.fetch.backoff.ms`` after an error) or
  waiting for the leader's offsets after OFFSET_OUT_OF_RANGE;
- ``FAILED``: fenced at its current epoch, or its log refused an append; nothing more happens
  until new metadata replaces the state.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from brook.protocol.errors import Errors

NO_EPOCH = -1


class Phase(enum.Enum):
    TRUNCATING = "Truncating"
    FETCHING = "Fetching"
    FAILED = "Failed"


class Reaction(enum.Enum):
    """What a partition error asks of the fetcher."""

    IGNORED = "ignored"  # the response answers a fetch position that is no longer current
    BACKED_OFF = "backed off"
    FAILED = "failed"
    LEADER_OFFSETS = "ask the leader's offsets"  # OFFSET_OUT_OF_RANGE


# Errors Kafka's fetcher retries after the backoff (everything but the few handled apart).
RETRIED = frozenset(
    {
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.INCONSISTENT_TOPIC_ID,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.CORRUPT_MESSAGE,
    }
)


@dataclass(frozen=True, slots=True)
class Truncation:
    """Truncate the log to ``offset``; ``fully``: drop everything and restart it empty there
    (the leader's log starts past this log's end)."""

    offset: int
    fully: bool = False


@dataclass(frozen=True, slots=True)
class FollowerMarks:
    """The follower's high watermark and log start after a response (facts §4.4)."""

    high_watermark: int
    log_start_offset: int


def follower_high_watermark(leader_hw: int, log_end: int, log_start: int) -> int:
    """min(leader HW, own LEO), never below the log start; not forced to be monotonic
    (Kafka's UnifiedLog.updateHighWatermark)."""
    return max(log_start, min(leader_hw, log_end))


def divergence_truncation(
    diverging_epoch: int,
    leader_end_offset: int,
    own_end: tuple[int, int],
    log_end: int,
) -> int:
    """Where a log truncates when the leader answers DivergingEpoch (Kafka's
    getOffsetTruncationState). ``own_end`` is this log's (largest epoch <= the diverging
    epoch, its end offset), (-1, -1) when it knows no such epoch.

    Knowing the leader's epoch: min(own end for it, the leader's end, own LEO). Knowing only
    an older epoch: its end (and own LEO); the next fetch then names that older epoch and the
    leader answers again. Knowing nothing: the leader's end, bounded by own LEO."""
    own_epoch, own_offset = own_end
    if leader_end_offset < 0:
        return log_end  # the leader knows no end for the epoch: nothing to truncate by
    if own_offset < 0:
        return min(leader_end_offset, log_end)
    if own_epoch != diverging_epoch:
        return min(own_offset, log_end)
    return min(own_offset, leader_end_offset, log_end)


@dataclass
class FollowerState:
    """A partition this broker follows, under one leader epoch."""

    leader_id: int
    leader_epoch: int
    phase: Phase
    fetch_offset: int
    last_fetched_epoch: int = NO_EPOCH
    delayed_until_ms: int = 0
    awaiting_leader_offsets: bool = False
    failure: str = ""

    @classmethod
    def start(
        cls,
        leader_id: int,
        leader_epoch: int,
        *,
        log_end: int,
        latest_epoch: int | None,
        high_watermark: int,
    ) -> FollowerState:
        """Kafka's addPartitions with truncate-on-fetch: at the log end with the log's latest
        epoch, or Truncating from the high watermark when the log has no epoch."""
        if latest_epoch is not None and latest_epoch >= 0:
            return cls(leader_id, leader_epoch, Phase.FETCHING, log_end, latest_epoch)
        return cls(leader_id, leader_epoch, Phase.TRUNCATING, min(high_watermark, log_end))

    # ------------------------------------------------------------------ scheduling
    def ready(self, now_ms: int) -> bool:
        """Whether the partition goes into the next Fetch."""
        return (
            self.phase is Phase.FETCHING
            and not self.awaiting_leader_offsets
            and now_ms >= self.delayed_until_ms
        )

    def is_current(self, fetch_offset: int, leader_epoch: int) -> bool:
        """Whether a response to a fetch at (``fetch_offset``, ``leader_epoch``) still applies:
        a truncation, a back-off or new metadata in between make it stale (Kafka compares the
        fetch offset and epoch before processing a partition)."""
        return (
            self.phase is Phase.FETCHING
            and not self.awaiting_leader_offsets
            and self.fetch_offset == fetch_offset
            and self.leader_epoch == leader_epoch
        )

    def back_off(self, now_ms: int, backoff_ms: int) -> None:
        if self.phase is Phase.FETCHING:
            self.delayed_until_ms = now_ms + backoff_ms

    # ------------------------------------------------------------------ truncation
    def truncation(self) -> Truncation | None:
        """What a Truncating partition does at the start of a round."""
        return Truncation(self.fetch_offset) if self.phase is Phase.TRUNCATING else None

    def truncated(self, log_end: int, latest_epoch: int | None) -> None:
        """The log now ends at ``log_end``: fetch from there, with its latest epoch if it has
        one (Kafka's truncateOnFetchResponse / truncateToHighWatermark)."""
        if self.phase is Phase.FAILED:
            return
        self.phase = Phase.FETCHING
        self.fetch_offset = log_end
        self.last_fetched_epoch = (
            latest_epoch if latest_epoch is not None and latest_epoch >= 0 else NO_EPOCH
        )
        self.awaiting_leader_offsets = False

    # ------------------------------------------------------------------ responses
    def on_records(
        self,
        *,
        log_end: int,
        latest_epoch: int | None,
        log_start: int,
        leader_high_watermark: int,
        leader_log_start: int,
    ) -> FollowerMarks:
        """A response without error, after its records (if any) were appended: the next
        fetch continues at the new log end. The follower's log start follows the leader's,
        but never past its own high watermark (Kafka refuses that as out of range)."""
        self.fetch_offset = log_end
        if latest_epoch is not None and latest_epoch >= 0:
            self.last_fetched_epoch = latest_epoch
        hw = follower_high_watermark(leader_high_watermark, log_end, log_start)
        start = log_start
        if leader_log_start > log_start:
            start = min(leader_log_start, hw)
        return FollowerMarks(hw, max(log_start, start))

    def on_diverging(
        self, diverging_epoch: int, leader_end_offset: int, own_end: tuple[int, int], log_end: int
    ) -> Truncation:
        """DivergingEpoch: truncate (the fetcher then calls :meth:`truncated`)."""
        return Truncation(
            divergence_truncation(diverging_epoch, leader_end_offset, own_end, log_end)
        )

    def on_error(self, code: int, now_ms: int, backoff_ms: int) -> Reaction:
        """A partition error in a Fetch response (Kafka's processFetchRequest):
        FENCED_LEADER_EPOCH at this epoch fails the partition until new metadata;
        OFFSET_OUT_OF_RANGE asks for the leader's offsets; anything else backs off."""
        if code == Errors.FENCED_LEADER_EPOCH:
            self.fail(f"fenced at leader epoch {self.leader_epoch}")
            return Reaction.FAILED
        if code == Errors.OFFSET_OUT_OF_RANGE:
            self.awaiting_leader_offsets = True
            return Reaction.LEADER_OFFSETS
        self.back_off(now_ms, backoff_ms)
        return Reaction.BACKED_OFF

    def on_leader_offsets(self, leader_start: int, leader_end: int, log_end: int) -> Truncation:
        """After OFFSET_OUT_OF_RANGE, the leader's log start and end (Kafka's
        fetchOffsetAndTruncate): a leader ending below this log truncates it to the leader's
        end; a leader starting past this log's end restarts it empty at the leader's start;
        otherwise nothing is truncated and fetching resumes at the log end."""
        if leader_end < log_end:
            return Truncation(leader_end)
        if leader_start > log_end:
            return Truncation(leader_start, fully=True)
        return Truncation(log_end)

    def leader_offsets_failed(self, now_ms: int, backoff_ms: int) -> None:
        """The leader's offsets could not be had: try the fetch again after the backoff."""
        self.awaiting_leader_offsets = False
        self.back_off(now_ms, backoff_ms)

    def fail(self, why: str) -> None:
        self.phase = Phase.FAILED
        self.failure = why
        self.awaiting_leader_offsets = False
