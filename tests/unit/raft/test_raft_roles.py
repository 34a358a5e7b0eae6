"""The small role classes on their own: vote tallies and the grant table of each role."""

from __future__ import annotations

import pytest

from brook.raft.roles import Candidate, EpochElection, Resigned, Unattached

VOTERS = (1, 2, 3, 4, 5)


def test_an_election_needs_a_strict_majority_and_knows_when_it_is_lost() -> None:
    election = EpochElection(1, VOTERS)
    assert not election.is_granted and election.unrecorded() == [2, 3, 4, 5]
    election.record_granted(2)
    assert not election.is_granted
    election.record_rejected(3)
    election.record_rejected(4)
    assert not election.is_rejected  # 1, 2 and 5 could still win
    election.record_granted(5)
    assert election.is_granted
    lost = EpochElection(1, VOTERS)
    for voter in (2, 3, 4):
        lost.record_rejected(voter)
    assert lost.is_rejected


def test_votes_from_non_voters_and_changes_of_mind_are_ignored() -> None:
    election = EpochElection(1, (1, 2, 3))
    election.record_granted(100)
    election.record_rejected(2)
    election.record_granted(2)
    assert election.granted == {1} and election.rejected == {2}


@pytest.mark.parametrize(
    ("voted", "leader", "candidate", "up_to_date", "pre_vote", "granted"),
    [
        (-1, -1, 2, True, False, True),
        (-1, -1, 2, False, False, False),
        (2, -1, 2, False, False, True),  # the same candidate again, even if behind now
        (2, -1, 3, True, False, False),
        (2, -1, 3, True, True, True),
        (-1, 4, 2, True, False, False),  # a leader is known
        (-1, 4, 2, True, True, True),
        (-1, 4, 2, False, True, False),
    ],
)
def test_unattached_grants(
    voted: int, leader: int, candidate: int, up_to_date: bool, pre_vote: bool, granted: bool
) -> None:
    role = Unattached(5, leader, voted, 0, None)
    assert role.can_grant_vote(candidate, up_to_date, pre_vote) is granted


def test_candidates_grant_only_pre_votes_and_resigned_leaders_nothing() -> None:
    candidate = Candidate(5, 1, EpochElection(1, VOTERS), 1, 0, None)
    assert candidate.can_grant_vote(2, True, True)
    assert not candidate.can_grant_vote(2, False, True)
    assert not candidate.can_grant_vote(2, True, False)
    resigned = Resigned(5, 1, VOTERS, 0, ())
    assert not resigned.can_grant_vote(2, True, True)
    assert not resigned.can_grant_vote(2, True, False)
    assert resigned.unacked == {2, 3, 4, 5}
