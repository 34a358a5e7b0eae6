"""The leader's decisions under a simulated clock: follower positions and catch-up times, the
high watermark rule, ISR expansion and shrink, the one AlterPartition in flight and the
reactions to its answer (Kafka's Partition.scala, KIP-497 / KIP-841 / KIP-903)."""

from __future__ import annotations

import pytest

from brook.broker.leader_state import Kind, LeaderState, Reaction
from brook.protocol.errors import Errors, KafkaError

LAG = 30_000
T0 = 1_000_000


def everyone(_: int, __: int) -> bool:
    return True


def leader(
    isr: tuple[int, ...] = (1, 2, 3),
    replicas: tuple[int, ...] = (1, 2, 3),
    leo: int = 0,
    hw: int = 0,
    min_isr: int = 1,
    now: int = T0,
    quorum: int = -1,
) -> LeaderState:
    return LeaderState.become_leader(
        local_id=1,
        leader_epoch=5,
        partition_epoch=7,
        replicas=replicas,
        isr=isr,
        leader_leo=leo,
        high_watermark=hw,
        min_insync_replicas=min_isr,
        lag_time_max_ms=LAG,
        now_ms=now,
        quorum_required_acks=quorum,
    )


# ---------------------------------------------------------------------- recording state
def test_a_followers_position_is_the_fetch_offset_of_its_fetch() -> None:
    s = leader(leo=10)
    s.record_fetch(2, 4, 0, 100, leader_leo=10, now_ms=T0 + 1)
    f = s.followers[2]
    assert (f.log_end_offset, f.log_start_offset, f.broker_epoch) == (4, 0, 100)
    assert f.last_fetch_leader_leo == 10 and f.last_fetch_ms == T0 + 1


def test_caught_up_now_when_the_fetch_asks_for_the_leaders_end() -> None:
    s = leader(isr=(1,), leo=10)
    s.record_fetch(2, 10, 0, -1, leader_leo=10, now_ms=T0 + 500)
    assert s.followers[2].last_caught_up_ms == T0 + 500


def test_caught_up_at_the_previous_fetch_when_it_reached_the_end_as_of_then() -> None:
    s = leader(isr=(1,), leo=10)
    s.record_fetch(2, 3, 0, -1, leader_leo=10, now_ms=T0 + 100)  # behind: no catch-up
    assert s.followers[2].last_caught_up_ms == 0
    # reached 10 (the leader's end at the previous fetch), but the leader is at 15 now
    s.record_fetch(2, 10, 0, -1, leader_leo=15, now_ms=T0 + 200)
    assert s.followers[2].last_caught_up_ms == T0 + 100
    # short of 15 (the end at the previous fetch): no catch-up
    s.record_fetch(2, 14, 0, -1, leader_leo=20, now_ms=T0 + 300)
    assert s.followers[2].last_caught_up_ms == T0 + 100


def test_a_fetch_from_an_older_incarnation_is_refused() -> None:
    s = leader()
    s.record_fetch(2, 0, 0, 200, leader_leo=0, now_ms=T0)
    with pytest.raises(KafkaError) as refused:
        s.record_fetch(2, 0, 0, 150, leader_leo=0, now_ms=T0)
    assert refused.value.code == Errors.NOT_LEADER_OR_FOLLOWER


def test_an_unassigned_replica_is_refused() -> None:
    with pytest.raises(KafkaError) as refused:
        leader().record_fetch(9, 0, 0, -1, leader_leo=0, now_ms=T0)
    assert refused.value.code == Errors.NOT_LEADER_OR_FOLLOWER


# ---------------------------------------------------------------------- becoming leader
def test_a_new_leader_knows_no_follower_position() -> None:
    s = leader(isr=(1, 2), leo=10, now=T0)
    assert s.followers[2].log_end_offset == -1
    assert s.followers[2].last_caught_up_ms == T0  # an ISR member: caught up now
    assert s.followers[3].last_caught_up_ms == 0  # not in the ISR: never
    assert s.epoch_start_offset == 10


def test_a_leader_reelected_keeps_positions_and_restarts_the_clocks() -> None:
    s = leader(isr=(1, 2), leo=10)
    s.record_fetch(2, 8, 0, -1, leader_leo=10, now_ms=T0 + 1)
    again = LeaderState.become_leader(
        local_id=1,
        leader_epoch=6,
        partition_epoch=8,
        replicas=(1, 2, 3),
        isr=(1, 2),
        leader_leo=12,
        high_watermark=8,
        min_insync_replicas=1,
        lag_time_max_ms=LAG,
        now_ms=T0 + 50,
        previous=s,
    )
    assert again.followers[2].log_end_offset == 8
    assert again.followers[2].last_caught_up_ms == T0 + 50
    assert again.epoch_start_offset == 12


def test_the_new_leaders_hw_waits_until_every_isr_member_has_fetched() -> None:
    s = leader(isr=(1, 2, 3), leo=10, hw=4)
    assert not s.maybe_increment_high_watermark(10, T0, everyone)
    s.record_fetch(2, 10, 0, -1, leader_leo=10, now_ms=T0)
    assert not s.maybe_increment_high_watermark(10, T0, everyone)  # 3 is still unknown
    s.record_fetch(3, 9, 0, -1, leader_leo=10, now_ms=T0)
    assert s.maybe_increment_high_watermark(10, T0, everyone) and s.high_watermark == 9


# ---------------------------------------------------------------------- high watermark
def test_hw_is_the_smallest_log_end_of_the_leader_and_the_isr() -> None:
    s = leader(isr=(1, 2), leo=10)
    s.record_fetch(2, 6, 0, -1, leader_leo=10, now_ms=T0)
    assert s.maybe_increment_high_watermark(10, T0, everyone) and s.high_watermark == 6


def test_hw_counts_a_caught_up_eligible_replica_outside_the_isr() -> None:
    s = leader(isr=(1, 2), leo=10)
    # 3 caught up recently (it asked for the leader's end then) but is not in the ISR yet
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    s.record_fetch(2, 12, 0, -1, leader_leo=12, now_ms=T0 + 1)
    assert s.maybe_increment_high_watermark(12, T0 + 1, everyone)
    assert s.high_watermark == 10  # held back by 3, which may join


def test_hw_ignores_a_caught_up_replica_that_is_not_eligible() -> None:
    s = leader(isr=(1, 2), leo=10)
    s.record_fetch(2, 12, 0, -1, leader_leo=12, now_ms=T0)
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    fenced_3 = lambda b, _e: b != 3  # noqa: E731
    assert s.maybe_increment_high_watermark(12, T0 + 1, fenced_3) and s.high_watermark == 12


def test_hw_ignores_a_replica_outside_the_isr_that_is_not_caught_up() -> None:
    s = leader(isr=(1, 2), leo=10)
    s.record_fetch(2, 12, 0, -1, leader_leo=12, now_ms=T0)
    s.record_fetch(3, 1, 0, -1, leader_leo=12, now_ms=T0)  # never caught up
    assert s.maybe_increment_high_watermark(12, T0, everyone) and s.high_watermark == 12


def test_hw_is_frozen_while_the_committed_isr_is_below_min_isr() -> None:
    s = leader(isr=(1,), replicas=(1, 2, 3), leo=10, min_isr=2)
    assert s.under_min_isr
    assert not s.maybe_increment_high_watermark(10, T0, everyone)
    assert s.high_watermark == 0


def test_effective_min_isr_is_capped_by_the_replication_factor() -> None:
    s = leader(isr=(1,), replicas=(1,), leo=10, min_isr=3)
    assert s.effective_min_isr == 1
    assert s.maybe_increment_high_watermark(10, T0, everyone) and s.high_watermark == 10


# ---------------------------------------------------------------------- KIP-250 quorum acks
def test_with_quorum_acks_the_hw_is_the_qth_largest_log_end_in_the_isr() -> None:
    s = leader(isr=(1, 2, 3), quorum=2)  # then 10 records appended in this epoch
    s.record_fetch(2, 8, 0, -1, leader_leo=10, now_ms=T0)
    # 3 has not fetched (unknown): the leader (10) and 2 (8) are two replicas holding 8
    assert s.maybe_increment_high_watermark(10, T0, everyone) and s.high_watermark == 8
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    assert s.maybe_increment_high_watermark(10, T0, everyone) and s.high_watermark == 10


def test_with_quorum_acks_a_slow_in_sync_follower_does_not_hold_the_hw() -> None:
    s = leader(isr=(1, 2, 3), replicas=(1, 2, 3, 4), quorum=2)
    s.record_fetch(2, 20, 0, -1, leader_leo=20, now_ms=T0)
    s.record_fetch(3, 1, 0, -1, leader_leo=20, now_ms=T0)  # in the ISR, far behind
    assert s.maybe_increment_high_watermark(20, T0, everyone) and s.high_watermark == 20
    classic = leader(isr=(1, 2, 3), replicas=(1, 2, 3, 4), leo=20)
    classic.record_fetch(2, 20, 0, -1, leader_leo=20, now_ms=T0)
    classic.record_fetch(3, 1, 0, -1, leader_leo=20, now_ms=T0)
    assert classic.maybe_increment_high_watermark(20, T0, everyone)
    assert classic.high_watermark == 1  # acks=all waits for the slowest


def test_with_quorum_acks_earlier_epochs_commit_only_with_one_of_this_epoch() -> None:
    """Raft's rule: records a new leader inherited (its log end 10 when its epoch began) are
    committed once a record of its own epoch is on Q replicas, never by counting alone."""
    s = leader(isr=(1, 2, 3), leo=10, hw=4, quorum=2)
    s.record_fetch(2, 10, 0, -1, leader_leo=10, now_ms=T0)
    assert not s.maybe_increment_high_watermark(10, T0, everyone) and s.high_watermark == 4
    s.record_fetch(2, 11, 0, -1, leader_leo=11, now_ms=T0)
    assert s.maybe_increment_high_watermark(11, T0, everyone) and s.high_watermark == 11


def test_with_quorum_acks_fewer_than_q_in_sync_refuse_and_freeze() -> None:
    s = leader(isr=(1,), leo=10, quorum=2)  # min.insync.replicas 1, but Q is 2
    assert s.effective_min_isr == 2 and s.under_min_isr
    assert not s.maybe_increment_high_watermark(10, T0, everyone)
    assert leader(isr=(1, 2, 3), min_isr=3, quorum=2).effective_min_isr == 3


def test_hw_never_moves_back() -> None:
    s = leader(isr=(1, 2), leo=10, hw=8)
    s.record_fetch(2, 5, 0, -1, leader_leo=10, now_ms=T0)
    assert not s.maybe_increment_high_watermark(10, T0, everyone) and s.high_watermark == 8


# ---------------------------------------------------------------------- ISR expansion
def test_a_follower_reaching_the_hw_and_the_epoch_start_joins_the_isr() -> None:
    s = leader(isr=(1, 2), leo=10, hw=10)
    s.record_fetch(3, 10, 0, 33, leader_leo=10, now_ms=T0)
    update = s.maybe_expand_isr(3, everyone)
    assert update is not None and update.kind is Kind.EXPAND
    assert update.new_isr == (1, 2, 3)
    assert update.new_isr_with_epochs == ((1, -1), (2, -1), (3, 33))
    assert (update.leader_epoch, update.partition_epoch) == (5, 7)
    assert s.maximal_isr == (1, 2, 3) and s.isr == (1, 2)  # PendingExpand: used at once


def test_no_expansion_below_the_hw() -> None:
    s = leader(isr=(1, 2), leo=10, hw=8)
    s.record_fetch(3, 7, 0, -1, leader_leo=10, now_ms=T0)
    assert s.maybe_expand_isr(3, everyone) is None


def test_no_expansion_below_the_start_of_the_leaders_epoch() -> None:
    s = leader(isr=(1, 2), leo=10, hw=4)
    s.record_fetch(3, 8, 0, -1, leader_leo=10, now_ms=T0)  # past the HW, before epoch start 10
    assert s.maybe_expand_isr(3, everyone) is None
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    assert s.maybe_expand_isr(3, everyone) is not None


def test_no_expansion_of_an_ineligible_replica() -> None:
    s = leader(isr=(1, 2), leo=10, hw=10)
    s.record_fetch(3, 10, 0, 40, leader_leo=10, now_ms=T0)
    registered_epoch_41 = lambda b, e: e in (-1, 41)  # noqa: E731
    assert s.maybe_expand_isr(3, registered_epoch_41) is None  # fenced / shutting down / stale


def test_no_expansion_while_an_update_is_in_flight_or_of_a_member() -> None:
    s = leader(isr=(1, 2), replicas=(1, 2, 3, 4), leo=10, hw=10)
    s.record_fetch(2, 10, 0, -1, leader_leo=10, now_ms=T0)
    assert s.maybe_expand_isr(2, everyone) is None  # already a member
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    s.record_fetch(4, 10, 0, -1, leader_leo=10, now_ms=T0)
    assert s.maybe_expand_isr(3, everyone) is not None
    assert s.maybe_expand_isr(4, everyone) is None  # one at a time


# ---------------------------------------------------------------------- ISR shrink
def test_a_member_not_caught_up_for_the_lag_time_is_dropped() -> None:
    s = leader(isr=(1, 2, 3), leo=10, now=T0)
    s.record_fetch(2, 10, 0, -1, leader_leo=10, now_ms=T0 + 1000)
    # 3 never fetched: caught up at T0 (becoming leader) and not since
    assert s.maybe_shrink_isr(10, T0 + LAG) is None  # not yet more than the lag time
    update = s.maybe_shrink_isr(10, T0 + LAG + 1)
    assert update is not None and update.kind is Kind.SHRINK and update.new_isr == (1, 2)
    assert s.maximal_isr == (1, 2, 3)  # PendingShrink: still the old ISR


def test_a_member_at_the_leaders_end_is_never_dropped() -> None:
    s = leader(isr=(1, 2), leo=10, now=T0)
    s.record_fetch(2, 10, 0, -1, leader_leo=10, now_ms=T0)
    assert s.maybe_shrink_isr(10, T0 + 10 * LAG) is None


def test_a_follower_fetching_busily_but_never_reaching_the_end_is_dropped() -> None:
    s = leader(isr=(1, 2), leo=10, now=T0)
    leo = 10
    for step in range(1, 40):
        leo += 5
        s.record_fetch(2, leo - 6, 0, -1, leader_leo=leo, now_ms=T0 + step * 1000)
    assert s.maybe_shrink_isr(leo, T0 + 40_000) is not None


def test_no_shrink_while_an_update_is_in_flight() -> None:
    s = leader(isr=(1, 2, 3), replicas=(1, 2, 3, 4), leo=10, hw=10, now=T0)
    s.record_fetch(4, 10, 0, -1, leader_leo=10, now_ms=T0)
    assert s.maybe_expand_isr(4, everyone) is not None
    assert s.maybe_shrink_isr(10, T0 + 2 * LAG) is None


# ---------------------------------------------------------------------- the reply
def test_a_successful_reply_commits_the_isr_and_partition_epoch() -> None:
    s = leader(isr=(1, 2), leo=10, hw=10)
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    update = s.maybe_expand_isr(3, everyone)
    assert update is not None
    reaction = s.on_reply(update, Errors.NONE, leader_epoch=5, partition_epoch=8, isr=(1, 2, 3))
    assert reaction is Reaction.COMMITTED
    assert (s.isr, s.partition_epoch, s.pending) == ((1, 2, 3), 8, None)


def test_a_reply_for_another_leader_epoch_or_an_older_partition_epoch_is_ignored() -> None:
    s = leader(isr=(1, 2), leo=10, hw=10)
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    update = s.maybe_expand_isr(3, everyone)
    assert update is not None
    assert s.on_reply(update, Errors.NONE, leader_epoch=6, partition_epoch=8, isr=(1, 2, 3)) is (
        Reaction.IGNORED
    )
    assert s.on_reply(update, Errors.NONE, leader_epoch=5, partition_epoch=6, isr=(1, 2, 3)) is (
        Reaction.IGNORED
    )
    assert s.isr == (1, 2) and s.pending is update


def test_a_reply_for_an_update_already_left_is_ignored() -> None:
    s = leader(isr=(1, 2), leo=10, hw=10)
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    update = s.maybe_expand_isr(3, everyone)
    assert update is not None
    s.update_assignment(8, (1, 2, 3), (1, 2), T0)  # the image moved on
    assert s.pending is None
    assert s.on_reply(update, Errors.NONE, leader_epoch=5, partition_epoch=9, isr=(1, 2, 3)) is (
        Reaction.IGNORED
    )


@pytest.mark.parametrize("code", [Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED])
def test_an_ineligible_replica_rolls_back_to_the_committed_isr(code: int) -> None:
    s = leader(isr=(1, 2), leo=10, hw=10)
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    update = s.maybe_expand_isr(3, everyone)
    assert update is not None
    assert s.on_reply(update, code) is Reaction.ROLLED_BACK
    assert s.pending is None and s.maximal_isr == (1, 2)


@pytest.mark.parametrize(
    "code",
    [
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.FENCED_LEADER_EPOCH,
        Errors.INVALID_UPDATE_VERSION,
        Errors.INVALID_REQUEST,
        Errors.NEW_LEADER_ELECTED,
    ],
)
def test_these_errors_wait_for_the_metadata(code: int) -> None:
    s = leader(isr=(1, 2), leo=10, hw=10)
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    update = s.maybe_expand_isr(3, everyone)
    assert update is not None
    assert s.on_reply(update, code) is Reaction.WAIT_FOR_METADATA
    assert s.pending is update and s.maximal_isr == (1, 2, 3)


def test_other_errors_are_retried() -> None:
    s = leader(isr=(1, 2), leo=10, hw=10)
    s.record_fetch(3, 10, 0, -1, leader_leo=10, now_ms=T0)
    update = s.maybe_expand_isr(3, everyone)
    assert update is not None
    assert s.on_reply(update, Errors.NOT_CONTROLLER) is Reaction.RETRY
    assert s.pending is update


def test_an_older_image_does_not_overwrite_the_committed_isr() -> None:
    s = leader(isr=(1, 2), leo=10)
    assert not s.update_assignment(6, (1, 2, 3), (1,), T0)
    assert s.isr == (1, 2) and s.partition_epoch == 7
    assert s.update_assignment(9, (1, 2, 3), (1, 2, 3), T0)
    assert s.isr == (1, 2, 3) and s.partition_epoch == 9
