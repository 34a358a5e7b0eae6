"""The follower's per-partition state machine under a simulated clock: where it starts, each
reaction of facts §4.4 (DivergingEpoch, OFFSET_OUT_OF_RANGE, fencing, the retried errors),
the follower's high watermark and log start, and when a partition is ready again."""

from __future__ import annotations

import pytest

from brook.broker.replica_fetcher.state import (
    NO_EPOCH,
    FollowerState,
    Phase,
    Reaction,
    Truncation,
    divergence_truncation,
    follower_high_watermark,
)
from brook.protocol.errors import Errors

BACKOFF = 1000


def fetching(offset: int = 100, epoch: int = 3, leader_epoch: int = 5) -> FollowerState:
    return FollowerState.start(
        2, leader_epoch, log_end=offset, latest_epoch=epoch, high_watermark=0
    )


def test_starts_fetching_at_its_log_end_with_its_latest_epoch() -> None:
    state = FollowerState.start(2, 7, log_end=120, latest_epoch=4, high_watermark=90)
    assert (state.phase, state.fetch_offset, state.last_fetched_epoch) == (Phase.FETCHING, 120, 4)
    assert (state.leader_id, state.leader_epoch) == (2, 7)
    assert state.ready(now_ms=0)
    assert state.truncation() is None


def test_without_an_epoch_it_truncates_to_its_high_watermark_first() -> None:
    state = FollowerState.start(2, 7, log_end=120, latest_epoch=None, high_watermark=90)
    assert state.phase is Phase.TRUNCATING
    assert not state.ready(now_ms=0)
    assert state.truncation() == Truncation(90)
    state.truncated(log_end=90, latest_epoch=None)
    assert (state.phase, state.fetch_offset, state.last_fetched_epoch) == (
        Phase.FETCHING,
        90,
        NO_EPOCH,
    )
    assert state.ready(now_ms=0)


def test_a_high_watermark_past_the_log_end_truncates_nothing() -> None:
    state = FollowerState.start(2, 7, log_end=50, latest_epoch=None, high_watermark=90)
    assert state.truncation() == Truncation(50)


@pytest.mark.parametrize(
    ("diverging", "leader_end", "own_end", "log_end", "expected"),
    [
        # knows the leader's epoch: min(own end for it, leader's end, own LEO)
        (3, 80, (3, 95), 100, 80),
        (3, 98, (3, 95), 100, 95),
        (3, 120, (3, 130), 100, 100),
        # knows only an older epoch: its end (the next fetch asks again with that epoch)
        (4, 80, (2, 60), 100, 60),
        (4, 50, (2, 60), 100, 60),
        # knows no epoch at or below it: the leader's end, bounded by own LEO
        (1, 40, (-1, -1), 100, 40),
        (1, 140, (-1, -1), 100, 100),
        # the leader knows no end for it: nothing to truncate by
        (3, -1, (3, 95), 100, 100),
    ],
)
def test_diverging_epoch_truncation_offset(
    diverging: int, leader_end: int, own_end: tuple[int, int], log_end: int, expected: int
) -> None:
    assert divergence_truncation(diverging, leader_end, own_end, log_end) == expected
    state = fetching(offset=log_end)
    assert state.on_diverging(diverging, leader_end, own_end, log_end) == Truncation(expected)


def test_after_a_divergence_it_fetches_from_the_truncation_with_its_new_latest_epoch() -> None:
    state = fetching(offset=100, epoch=4)
    truncation = state.on_diverging(4, 80, (2, 60), 100)
    state.truncated(log_end=truncation.offset, latest_epoch=2)
    assert (state.phase, state.fetch_offset, state.last_fetched_epoch) == (Phase.FETCHING, 60, 2)
    state.truncated(log_end=0, latest_epoch=None)  # truncated to nothing: no epoch left
    assert (state.fetch_offset, state.last_fetched_epoch) == (0, NO_EPOCH)


def test_records_move_the_fetch_position_and_the_follower_high_watermark() -> None:
    state = fetching(offset=100, epoch=3)
    marks = state.on_records(
        log_end=130, latest_epoch=5, log_start=0, leader_high_watermark=150, leader_log_start=0
    )
    assert (state.fetch_offset, state.last_fetched_epoch) == (130, 5)
    assert (marks.high_watermark, marks.log_start_offset) == (130, 0)  # min(leader HW, LEO)
    marks = state.on_records(
        log_end=130, latest_epoch=5, log_start=0, leader_high_watermark=110, leader_log_start=0
    )
    assert marks.high_watermark == 110


def test_the_follower_high_watermark_is_not_monotonic_and_is_floored_at_log_start() -> None:
    assert follower_high_watermark(leader_hw=40, log_end=100, log_start=0) == 40
    assert follower_high_watermark(leader_hw=20, log_end=100, log_start=0) == 20
    assert follower_high_watermark(leader_hw=5, log_end=100, log_start=10) == 10
    assert follower_high_watermark(leader_hw=500, log_end=100, log_start=10) == 100


def test_the_log_start_follows_the_leader_but_never_past_the_high_watermark() -> None:
    state = fetching(offset=100)
    marks = state.on_records(
        log_end=100, latest_epoch=3, log_start=0, leader_high_watermark=100, leader_log_start=40
    )
    assert (marks.log_start_offset, marks.high_watermark) == (40, 100)
    marks = state.on_records(
        log_end=100, latest_epoch=3, log_start=0, leader_high_watermark=30, leader_log_start=60
    )
    assert (marks.log_start_offset, marks.high_watermark) == (30, 30)
    marks = state.on_records(
        log_end=100, latest_epoch=3, log_start=50, leader_high_watermark=100, leader_log_start=20
    )
    assert marks.log_start_offset == 50  # never moves back


def test_fenced_at_its_epoch_it_fails_until_new_metadata() -> None:
    state = fetching()
    assert state.on_error(Errors.FENCED_LEADER_EPOCH, now_ms=0, backoff_ms=BACKOFF) is (
        Reaction.FAILED
    )
    assert state.phase is Phase.FAILED
    for now in (0, BACKOFF, 100 * BACKOFF):
        assert not state.ready(now)
    state.truncated(log_end=100, latest_epoch=3)  # nothing revives it but a new state
    assert state.phase is Phase.FAILED


@pytest.mark.parametrize(
    "code",
    [
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.UNKNOWN_SERVER_ERROR,
    ],
)
def test_other_errors_back_off_and_retry_at_the_same_position(code: int) -> None:
    state = fetching(offset=100, epoch=3)
    assert state.on_error(code, now_ms=5_000, backoff_ms=BACKOFF) is Reaction.BACKED_OFF
    assert state.phase is Phase.FETCHING
    assert not state.ready(5_000)
    assert not state.ready(5_999)
    assert state.ready(6_000)
    assert (state.fetch_offset, state.last_fetched_epoch) == (100, 3)


def test_offset_out_of_range_waits_for_the_leaders_offsets() -> None:
    state = fetching(offset=100)
    assert state.on_error(Errors.OFFSET_OUT_OF_RANGE, 0, BACKOFF) is Reaction.LEADER_OFFSETS
    assert not state.ready(10 * BACKOFF)
    assert not state.is_current(100, state.leader_epoch)


def test_a_leader_ending_below_the_log_truncates_it_to_the_leaders_end() -> None:
    state = fetching(offset=100)
    state.on_error(Errors.OFFSET_OUT_OF_RANGE, 0, BACKOFF)
    assert state.on_leader_offsets(leader_start=0, leader_end=70, log_end=100) == Truncation(70)
    state.truncated(log_end=70, latest_epoch=3)
    assert state.ready(0) and state.fetch_offset == 70


def test_a_leader_starting_past_the_log_end_restarts_the_log_at_the_leaders_start() -> None:
    state = fetching(offset=100)
    state.on_error(Errors.OFFSET_OUT_OF_RANGE, 0, BACKOFF)
    assert state.on_leader_offsets(leader_start=500, leader_end=900, log_end=100) == Truncation(
        500, fully=True
    )
    state.truncated(log_end=500, latest_epoch=None)
    assert (state.fetch_offset, state.last_fetched_epoch) == (500, NO_EPOCH)


def test_a_leader_range_holding_the_log_end_truncates_nothing() -> None:
    state = fetching(offset=100)
    state.on_error(Errors.OFFSET_OUT_OF_RANGE, 0, BACKOFF)
    assert state.on_leader_offsets(leader_start=50, leader_end=300, log_end=100) == Truncation(100)


def test_leader_offsets_that_cannot_be_had_back_off() -> None:
    state = fetching(offset=100)
    state.on_error(Errors.OFFSET_OUT_OF_RANGE, 0, BACKOFF)
    state.leader_offsets_failed(now_ms=2_000, backoff_ms=BACKOFF)
    assert not state.ready(2_500)
    assert state.ready(3_000)


def test_a_response_applies_only_to_the_position_it_answers() -> None:
    state = fetching(offset=100, leader_epoch=5)
    assert state.is_current(100, 5)
    assert not state.is_current(90, 5)
    assert not state.is_current(100, 4)
    state.on_records(
        log_end=120, latest_epoch=5, log_start=0, leader_high_watermark=0, leader_log_start=0
    )
    assert not state.is_current(100, 5)
