"""The membership state machine: Kafka's reaction to each JoinGroup, SyncGroup, Heartbeat and
OffsetCommit error, generation fencing, and the session, heartbeat and poll timers."""

from __future__ import annotations

import pytest

from brook.client.consumer.membership import (
    NO_GENERATION,
    Generation,
    Membership,
    MemberState,
    Reaction,
)
from brook.protocol.errors import Errors


def fresh(instance: str | None = None) -> Membership:
    return Membership(
        group_id="g",
        group_instance_id=instance,
        session_timeout_ms=10000,
        heartbeat_interval_ms=3000,
        rebalance_timeout_ms=60000,
        retry_backoff_ms=100,
        now_ms=0,
    )


def join(m: Membership, error: int = Errors.NONE, member: str = "m-1", gen: int = 1) -> Reaction:
    return m.on_join_response(
        error, generation_id=gen, member_id=member, protocol_name="range", leader_id="m-1", now_ms=0
    )


def stable(m: Membership) -> Generation:
    m.join_started()
    assert join(m) is Reaction.PROCEED
    assert m.state is MemberState.COMPLETING_REBALANCE and m.is_leader
    generation = m.generation
    reaction = m.on_sync_response(
        Errors.NONE, generation=generation, protocol_type="consumer", protocol_name="range"
    )
    assert reaction is Reaction.PROCEED and m.state is MemberState.STABLE
    return generation


def test_member_id_required_then_join_with_it() -> None:
    m = fresh()
    m.join_started()
    assert join(m, Errors.MEMBER_ID_REQUIRED, member="m-1", gen=-1) is Reaction.REJOIN
    assert m.member_id == "m-1" and m.rejoin_needed and m.generation == NO_GENERATION
    assert stable(m) == Generation(1, "m-1", "range")
    assert not m.rejoin_needed


@pytest.mark.parametrize("error", [Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION])
def test_join_fencing_errors_reset_the_member(error: int) -> None:
    m = fresh()
    stable(m)
    m.join_started()
    assert join(m, error) is Reaction.REJOIN
    assert m.state is MemberState.UNJOINED and m.generation == NO_GENERATION
    assert m.needs_join_prepare
    # As Java: ILLEGAL_GENERATION keeps the member id (still valid), UNKNOWN_MEMBER_ID not.
    assert m.member_id == ("m-1" if error == Errors.ILLEGAL_GENERATION else "")


@pytest.mark.parametrize(
    ("error", "reaction"),
    [
        (Errors.COORDINATOR_LOAD_IN_PROGRESS, Reaction.RETRY),
        (Errors.COORDINATOR_NOT_AVAILABLE, Reaction.COORDINATOR_LOST),
        (Errors.NOT_COORDINATOR, Reaction.COORDINATOR_LOST),
        (Errors.REBALANCE_IN_PROGRESS, Reaction.REJOIN),
        (Errors.FENCED_INSTANCE_ID, Reaction.FATAL),
        (Errors.INVALID_SESSION_TIMEOUT, Reaction.ERROR),
        (Errors.INCONSISTENT_GROUP_PROTOCOL, Reaction.ERROR),
        (Errors.GROUP_MAX_SIZE_REACHED, Reaction.ERROR),
        (Errors.GROUP_AUTHORIZATION_FAILED, Reaction.ERROR),
        (Errors.UNKNOWN_SERVER_ERROR, Reaction.ERROR),
    ],
)
def test_join_errors(error: int, reaction: Reaction) -> None:
    m = fresh("static-1")
    m.join_started()
    assert join(m, error) is reaction
    if reaction is Reaction.FATAL:
        # Only a fenced static member cannot go on: every later call raises.
        assert m.fatal is not None and m.fatal.code == error
    elif reaction is Reaction.ERROR:
        # Raised once from poll(), as Java throws it; the next poll() joins again.
        assert m.fatal is None and m.error is not None and m.error.code == error
        assert m.rejoin_needed
    else:
        assert m.fatal is None and m.error is None


def test_sync_errors() -> None:
    m = fresh()
    generation = stable(m)
    m.join_started()
    join(m, gen=2)
    g2 = m.generation
    # An answer for another generation is not installed.
    assert (
        m.on_sync_response(
            Errors.NONE, generation=generation, protocol_type=None, protocol_name=None
        )
        is Reaction.REJOIN
    )
    r = m.on_sync_response(
        Errors.REBALANCE_IN_PROGRESS, generation=g2, protocol_type=None, protocol_name=None
    )
    assert r is Reaction.REJOIN and m.generation == g2  # kept: rejoin with it
    r = m.on_sync_response(
        Errors.ILLEGAL_GENERATION, generation=g2, protocol_type=None, protocol_name=None
    )
    assert r is Reaction.REJOIN and m.generation == NO_GENERATION


def test_sync_with_another_protocol_is_an_error_raised_once() -> None:
    m = fresh()
    m.join_started()
    join(m)
    r = m.on_sync_response(
        Errors.NONE, generation=m.generation, protocol_type="consumer", protocol_name="roundrobin"
    )
    assert r is Reaction.ERROR and m.fatal is None and m.rejoin_needed
    assert m.error is not None and m.error.code == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_heartbeat_reactions_and_generation_fencing() -> None:
    m = fresh()
    current = stable(m)
    old = Generation(0, "m-1", "range")
    assert m.on_heartbeat_response(Errors.NONE, current, 10) is Reaction.PROCEED
    # A late answer to a heartbeat of an older generation changes nothing.
    assert m.on_heartbeat_response(Errors.ILLEGAL_GENERATION, old, 20) is Reaction.IGNORE
    assert m.generation == current
    assert m.on_heartbeat_response(Errors.REBALANCE_IN_PROGRESS, current, 30) is Reaction.REJOIN
    assert m.rejoin_needed and m.state is MemberState.STABLE
    assert m.on_heartbeat_response(Errors.NOT_COORDINATOR, current, 40) is Reaction.COORDINATOR_LOST
    # An unexpected answer is not the end of the member: the heartbeat is tried again.
    assert m.on_heartbeat_response(Errors.UNKNOWN_SERVER_ERROR, current, 45) is Reaction.RETRY
    assert m.fatal is None and m.error is None and m.generation == current
    assert m.next_heartbeat() == 45 + m.retry_backoff_ms
    assert m.on_heartbeat_response(Errors.UNKNOWN_MEMBER_ID, current, 50) is Reaction.REJOIN
    assert m.generation == NO_GENERATION and m.state is MemberState.UNJOINED


def test_rebalance_in_progress_heartbeat_while_completing_is_ignored() -> None:
    m = fresh()
    m.join_started()
    join(m)
    assert m.on_heartbeat_response(Errors.REBALANCE_IN_PROGRESS, m.generation, 5) is Reaction.IGNORE


def test_fenced_static_member_is_fatal() -> None:
    m = fresh("instance-a")
    current = stable(m)
    assert m.on_heartbeat_response(Errors.FENCED_INSTANCE_ID, current, 5) is Reaction.FATAL
    assert m.fatal is not None and "instance-a" in str(m.fatal)


def test_commit_errors() -> None:
    m = fresh()
    current = stable(m)
    assert m.on_commit_error(Errors.COORDINATOR_LOAD_IN_PROGRESS, current) is Reaction.RETRY
    assert m.on_commit_error(Errors.NOT_COORDINATOR, current) is Reaction.COORDINATOR_LOST
    assert m.on_commit_error(Errors.OFFSET_METADATA_TOO_LARGE, current) is Reaction.FATAL
    assert m.fatal is None  # fails the commit, not the member
    assert m.on_commit_error(Errors.REBALANCE_IN_PROGRESS, current) is Reaction.REJOIN
    assert m.generation == current
    assert m.on_commit_error(Errors.ILLEGAL_GENERATION, current) is Reaction.REJOIN
    assert m.generation == NO_GENERATION


def test_timers() -> None:
    m = fresh()
    stable(m)  # joined at t=0
    assert not m.heartbeat_due(2999) and m.heartbeat_due(3000)
    m.heartbeat_sent(3000)
    assert not m.heartbeat_due(9000)  # one in flight at a time
    m.on_heartbeat_response(Errors.NONE, m.generation, 3010)
    assert m.heartbeat_due(6000) and not m.session_expired(13000)
    assert m.session_expired(13011)
    m.heartbeat_sent(6000)
    m.heartbeat_failed(6005)
    assert m.next_heartbeat() == 6105  # retried after retry.backoff.ms
    m.polled(1000)
    assert not m.poll_timeout_expired(61000) and m.poll_timeout_expired(61001)


def test_no_heartbeats_before_the_join_answer() -> None:
    m = fresh()
    m.join_started()
    assert not m.heartbeat_due(10**9)
