"""``QuorumState``: the role a node starts in from what it persisted, which transitions write
the quorum state (and which stay in memory), and the transitions the protocol forbids."""

from __future__ import annotations

import random

import pytest

from brook.raft.config import RaftConfig
from brook.raft.follower import Follower
from brook.raft.leader import Leader
from brook.raft.quorum_state import ElectionState, MemoryQuorumStateStore
from brook.raft.roles import Candidate, Prospective, Resigned, Unattached
from brook.raft.state import QuorumState, TransitionError

VOTERS = (1, 2, 3)


def quorum(stored: ElectionState | None, local_id: int = 1, log_epoch: int = 0) -> QuorumState:
    state = QuorumState(
        local_id, VOTERS, MemoryQuorumStateStore(stored), RaftConfig(), random.Random(0)
    )
    state.initialize(log_epoch, 0)
    return state


@pytest.mark.parametrize(
    ("stored", "log_epoch", "role", "epoch", "leader", "voted"),
    [
        (None, 0, Unattached, 0, -1, -1),
        (ElectionState(4, voters=VOTERS), 0, Unattached, 4, -1, -1),
        (ElectionState(4, voted_id=2, voters=VOTERS), 0, Unattached, 4, -1, 2),
        (ElectionState(4, leader_id=2, voters=VOTERS), 0, Follower, 4, 2, -1),
        (ElectionState(4, voted_id=1, voters=VOTERS), 0, Candidate, 4, -1, 1),
        # a restarted leader may have lost unflushed records: never lead that epoch again
        (ElectionState(4, leader_id=1, voters=VOTERS), 0, Resigned, 4, 1, -1),
        # the log saw a later epoch than the file: start unattached there
        (ElectionState(4, leader_id=2, voters=VOTERS), 6, Unattached, 6, -1, -1),
        # voted for itself, then followed the winner: a follower, keeping its vote
        (ElectionState(4, leader_id=2, voted_id=1, voters=VOTERS), 4, Follower, 4, 2, 1),
    ],
)
def test_start_up(
    stored: ElectionState | None, log_epoch: int, role: type, epoch: int, leader: int, voted: int
) -> None:
    state = quorum(stored, log_epoch=log_epoch)
    assert type(state.role) is role
    assert (state.role.epoch, state.role.leader_id, state.role.voted_id) == (epoch, leader, voted)
    # the starting state is written back, as Kafka does
    assert state.store.read() == state.role.election(VOTERS)


def test_an_observer_starts_unattached_without_an_election_timer() -> None:
    state = quorum(None, local_id=100)
    assert type(state.role) is Unattached and not state.is_voter
    assert state.role.election_deadline >= 2**62  # type: ignore[attr-defined]


def test_prospective_and_resigned_are_memory_only() -> None:
    state = quorum(ElectionState(2, leader_id=3, voters=VOTERS))
    store = state.store
    assert isinstance(store, MemoryQuorumStateStore)
    writes = store.writes
    state.to_prospective(10)
    assert type(state.role) is Prospective and store.writes == writes
    state.role.election_round.record_granted(2)  # type: ignore[attr-defined]
    state.to_candidate(10)
    assert store.read() == ElectionState(3, voted_id=1, voters=VOTERS)
    state.role.election_round.record_granted(2)  # type: ignore[attr-defined]
    leader = state.to_leader(0, 10)
    assert isinstance(leader, Leader) and store.read() == ElectionState(
        3, leader_id=1, voters=VOTERS
    )
    writes = store.writes
    state.to_resigned((2, 3), 10)
    assert type(state.role) is Resigned and store.writes == writes


def test_a_vote_is_kept_when_the_epoch_s_leader_is_found() -> None:
    state = quorum(ElectionState(2, voters=VOTERS))
    state.unattached_add_vote(3, 0)
    state.to_follower(2, 3, 0)
    assert state.store.read() == ElectionState(2, leader_id=3, voted_id=3, voters=VOTERS)
    state.to_follower(5, 2, 0)
    assert state.store.read() == ElectionState(5, leader_id=2, voters=VOTERS)


def test_a_lost_prospective_keeps_its_epoch_and_vote() -> None:
    state = quorum(ElectionState(2, voted_id=3, voters=VOTERS))
    state.to_prospective(0)
    state.to_unattached(2, 0)
    assert state.store.read() == ElectionState(2, voted_id=3, voters=VOTERS)


@pytest.mark.parametrize(
    "forbidden",
    [
        lambda s: s.to_candidate(0),  # only from Prospective
        lambda s: s.to_leader(0, 0),  # only a Candidate with a majority
        lambda s: s.to_resigned((), 0),  # only a leader
        lambda s: s.to_unattached(1, 0),  # not backwards
        lambda s: s.to_unattached(2, 0),  # not the same epoch (except from Prospective)
        lambda s: s.to_follower(2, 1, 0),  # never itself
        lambda s: s.to_follower(1, 3, 0),  # not backwards
        lambda s: s.unattached_add_vote(1, 0),  # no vote for itself this way
    ],
)
def test_forbidden_transitions_raise(forbidden: object) -> None:
    state = quorum(ElectionState(2, voters=VOTERS))
    with pytest.raises(TransitionError):
        forbidden(state)  # type: ignore[operator]


def test_a_second_vote_in_an_epoch_is_refused() -> None:
    state = quorum(ElectionState(2, voters=VOTERS))
    state.unattached_add_vote(3, 0)
    with pytest.raises(TransitionError):
        state.unattached_add_vote(2, 0)


def test_a_candidate_without_a_majority_cannot_lead() -> None:
    state = quorum(ElectionState(2, voters=VOTERS))
    state.to_prospective(0)
    state.role.election_round.record_granted(2)  # type: ignore[attr-defined]
    state.to_candidate(0)
    with pytest.raises(TransitionError):
        state.to_leader(0, 0)


def test_an_observer_cannot_run_for_election() -> None:
    state = quorum(None, local_id=100)
    with pytest.raises(TransitionError):
        state.to_prospective(0)
