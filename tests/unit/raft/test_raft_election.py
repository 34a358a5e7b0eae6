"""Elections in ``RaftCore``: timers, KIP-996's pre-vote before any epoch bump, the candidate's
vote round and backoff, the new leader's first record, and a single voter electing itself."""

from __future__ import annotations

import random

import pytest
from raft_harness import Node, fetch_request, grant

from brook.raft.core import election_backoff_ms
from brook.raft.log import LeaderChangeRecord
from brook.raft.memory_log import MemoryLog
from brook.raft.messages import (
    BeginQuorumEpochRequest,
    Errors,
    FetchRequest,
    FetchResponse,
    VoteRequest,
    VoteResponse,
)
from brook.raft.quorum_state import ElectionState, MemoryQuorumStateStore

VOTERS = (1, 2, 3)


def refuse(node: Node, voter: int, request: VoteRequest) -> None:
    node.answer(voter, request, VoteResponse(Errors.NONE, -1, request.replica_epoch, False))


@pytest.mark.parametrize("seed", range(20))
def test_the_election_timeout_is_random_in_t_to_2t(seed: int) -> None:
    node = Node(1, VOTERS, seed=seed)
    deadline = node.core.next_poll_ms
    assert 1000 <= deadline < 2000
    node.at(deadline - 1)
    assert node.role == "Unattached"
    node.at(deadline)
    assert node.role == "Prospective"


def test_a_timed_out_voter_asks_for_pre_votes_in_its_current_epoch_without_persisting() -> None:
    log = MemoryLog()
    log.append_as_leader([b"a", b"b"], 2)
    store = MemoryQuorumStateStore(ElectionState(2, voters=VOTERS))
    node = Node(1, VOTERS, log=log, store=store)
    writes = store.writes
    node.advance(2000)
    assert node.role == "Prospective" and node.core.epoch == 2
    for voter in (2, 3):
        request = node.request_to(voter, VoteRequest)
        assert request == VoteRequest(node.core.cluster_id, 1, 2, 2, 2, True, voter)
    assert store.writes == writes


def test_a_majority_of_pre_votes_makes_a_candidate_of_the_next_epoch() -> None:
    node = Node(1, VOTERS)
    node.advance(2000)
    grant(node, 2, node.request_to(2, VoteRequest))
    assert node.role == "Candidate" and node.core.epoch == 1
    assert node.persisted == ElectionState(1, voted_id=1, voters=VOTERS)
    for voter in (2, 3):
        request = node.request_to(voter, VoteRequest)
        assert not request.pre_vote and request.replica_epoch == 1


def test_the_new_leader_writes_its_leader_change_record_and_announces_itself() -> None:
    node = Node(1, VOTERS)
    node.advance(2000)
    grant(node, 2, node.request_to(2, VoteRequest))
    grant(node, 3, node.request_to(3, VoteRequest))
    assert node.role == "Leader"
    assert node.persisted == ElectionState(1, leader_id=1, voters=VOTERS)
    [batch] = node.log.batches()
    assert batch.leader_change == LeaderChangeRecord(1, VOTERS, (1, 3))
    assert batch.epoch == 1 and node.log.flushed_offset == 1
    assert node.log.epoch_entries() == [(1, 0)]
    assert {s.destination for s in node.sent(BeginQuorumEpochRequest)} == {2, 3}
    assert (1, 1) in node.leader_changes()
    assert node.core.high_watermark is None  # not before a majority holds the new record


def test_a_stale_pre_vote_grant_does_not_count_as_a_vote() -> None:
    node = Node(1, VOTERS)
    node.advance(2000)
    pre_votes = {v: node.request_to(v, VoteRequest) for v in (2, 3)}
    grant(node, 2, pre_votes[2])
    assert node.role == "Candidate"
    grant(node, 3, pre_votes[3])  # late, for the pre-vote round
    assert node.role == "Candidate"


def test_losing_the_pre_vote_without_a_known_leader_returns_to_unattached() -> None:
    node = Node(1, VOTERS)
    node.advance(2000)
    pre_votes = {v: node.request_to(v, VoteRequest) for v in (2, 3)}
    refuse(node, 2, pre_votes[2])
    refuse(node, 3, pre_votes[3])
    assert node.role == "Unattached" and node.core.epoch == 0


def test_losing_the_pre_vote_returns_a_follower_to_its_leader() -> None:
    store = MemoryQuorumStateStore(ElectionState(4, leader_id=2, voters=VOTERS))
    node = Node(1, VOTERS, store=store)
    node.advance(2500)  # no fetch response within fetch.timeout.ms (and its random part)
    assert node.role == "Prospective" and node.core.epoch == 4
    pre_votes = {v: node.request_to(v, VoteRequest) for v in (2, 3)}
    refuse(node, 2, pre_votes[2])
    refuse(node, 3, pre_votes[3])
    assert node.role == "Follower" and node.core.leader_and_epoch.leader_id == 2
    assert node.core.epoch == 4


def test_a_prospective_node_that_times_out_tries_again_without_bumping_the_epoch() -> None:
    node = Node(1, VOTERS)
    node.advance(2000)
    assert node.role == "Prospective"
    first = node.request_to(2, VoteRequest)
    node.advance(2000)  # nobody answered: back to Unattached, whose timer has run out too
    assert node.role == "Prospective" and node.core.epoch == 0
    assert node.persisted == ElectionState(0, voters=VOTERS)
    again = node.request_to(2, VoteRequest)
    assert again is not first and again.pre_vote


def test_a_follower_without_fetch_responses_runs_a_pre_vote_not_an_election() -> None:
    """After fetch.timeout.ms plus a random part of half the election timeout (so that two
    followers of a leader that died do not run at the same moment and split the vote)."""
    starts = set()
    for seed in range(20):
        node = Node(
            1,
            VOTERS,
            seed=seed,
            store=MemoryQuorumStateStore(ElectionState(4, leader_id=2, voters=VOTERS)),
        )
        node.at(1999)
        assert node.role == "Follower"
        for now in range(2000, 2501):
            node.at(now)
            if node.role != "Follower":
                break
        assert node.role == "Prospective" and node.core.epoch == 4
        assert 2000 <= now < 2500
        starts.add(now)
    assert len(starts) > 5  # spread, not all at once


def test_good_fetch_responses_keep_a_follower_from_running_for_election() -> None:
    node = Node(
        1, VOTERS, store=MemoryQuorumStateStore(ElectionState(4, leader_id=2, voters=VOTERS))
    )
    for step in range(1, 6):
        fetch = node.request_to(2, FetchRequest)
        node.at(step * 1500)
        node.answer(2, fetch, FetchResponse(Errors.NONE, 2, 4, 0, 0))
        assert node.role == "Follower"


@pytest.mark.parametrize("retries", [1, 2, 3, 4, 8, 30])
def test_candidate_backoff_is_100ms_times_random_below_2_to_the_retries_capped(
    retries: int,
) -> None:
    rng = random.Random(retries)
    values = {election_backoff_ms(retries, 1000, rng) for _ in range(500)}
    allowed = {min(100 * k, 1000) for k in range(2 ** min(retries, 20))}
    assert values <= allowed
    assert max(values) == max(allowed)  # the whole range is drawn from
    if retries <= 4:
        assert values == allowed


@pytest.mark.parametrize("seed", range(6))
def test_a_candidate_that_loses_backs_off_then_runs_a_pre_vote_again(seed: int) -> None:
    node = Node(1, VOTERS, seed=seed)
    node.advance(2000)
    grant(node, 2, node.request_to(2, VoteRequest))
    assert node.role == "Candidate"
    votes = {v: node.request_to(v, VoteRequest) for v in (2, 3)}
    refuse(node, 2, votes[2])
    assert node.role == "Candidate"
    refuse(node, 3, votes[3])
    # first loss: 100 ms x random[0, 2), so 0 (a pre-vote at once) or 100 ms
    if node.role == "Candidate":
        backoff_until = node.core.role.backoff_until  # type: ignore[attr-defined]
        assert backoff_until == node.now + 100
        node.at(backoff_until - 1)
        assert node.role == "Candidate"
        node.at(backoff_until)
    assert node.role == "Prospective" and node.core.epoch == 1
    assert node.core.role.retries == 2  # type: ignore[attr-defined]
    assert node.persisted == ElectionState(1, voted_id=1, voters=VOTERS)  # its vote is kept
    assert {s.destination for s in node.sent(VoteRequest)} == {2, 3}


def test_a_candidate_that_hears_of_a_leader_of_its_epoch_follows_it() -> None:
    node = Node(1, VOTERS)
    node.advance(2000)
    grant(node, 2, node.request_to(2, VoteRequest))
    request = node.request_to(3, VoteRequest)
    node.answer(3, request, VoteResponse(Errors.NONE, 2, 1, False))
    assert node.role == "Follower" and node.core.leader_and_epoch.leader_id == 2
    assert node.persisted == ElectionState(1, leader_id=2, voted_id=1, voters=VOTERS)


def test_a_newer_epoch_in_any_response_is_adopted() -> None:
    node = Node(1, VOTERS)
    node.advance(2000)
    request = node.request_to(2, VoteRequest)
    node.answer(2, request, VoteResponse(Errors.FENCED_LEADER_EPOCH, 3, 7, False))
    assert node.role == "Follower" and node.core.epoch == 7
    assert node.request_to(3, FetchRequest).current_leader_epoch == 7


def test_a_single_voter_elects_itself_at_once_and_commits_on_its_own_flush() -> None:
    node = Node(1, (1,))
    assert node.role == "Leader" and node.core.epoch == 1
    assert node.core.high_watermark == 1  # its LeaderChange record
    node.append(b"a", b"b")
    assert node.commits() == [3]
    assert node.log.flushed_offset == 3


def test_a_restarted_single_voter_elects_itself_in_a_new_epoch() -> None:
    node = Node(1, (1,))
    node.append(b"a")
    again = Node(1, (1,), log=node.log.crashed(), store=node.store)
    assert again.role == "Leader" and again.core.epoch == 2
    assert again.core.high_watermark == 3


def test_an_observer_never_runs_an_election() -> None:
    node = Node(100, VOTERS)
    node.advance(60_000)
    assert node.role == "Unattached"
    assert all(isinstance(s.request, FetchRequest) for s in node.sent())


def test_fetch_request_carries_log_end_and_last_epoch() -> None:
    log = MemoryLog()
    log.append_as_leader([b"a"], 1)
    log.append_as_leader([b"b", b"c"], 3)
    node = Node(
        1,
        VOTERS,
        log=log,
        store=MemoryQuorumStateStore(ElectionState(3, leader_id=2, voters=VOTERS)),
    )
    assert node.request_to(2, FetchRequest) == fetch_request(1, 3, 3, 3, max_bytes=8 * 1024 * 1024)
