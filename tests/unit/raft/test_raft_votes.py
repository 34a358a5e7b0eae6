"""Vote and pre-vote handling of ``RaftCore``: every check in Kafka's order (cluster id, target,
bad fields, fenced epoch, epoch bump, voter key, up-to-date log, then the role's table), and a
granted vote persisted before the response exists."""

from __future__ import annotations

import pytest
from raft_harness import CLUSTER, Node, elect, vote_request

from brook.raft.memory_log import MemoryLog
from brook.raft.messages import (
    Errors,
    FetchRequest,
    FetchResponse,
    TopLevelError,
    VoteRequest,
    VoteResponse,
)
from brook.raft.quorum_state import ElectionState, MemoryQuorumStateStore

VOTERS = (1, 2, 3)


def node_from(state: ElectionState | None, log: MemoryLog | None = None) -> Node:
    return Node(1, VOTERS, store=MemoryQuorumStateStore(state), log=log or MemoryLog())


def ask(node: Node, request: VoteRequest, sender: int | None = None) -> VoteResponse:
    node.receive(request.replica_id if sender is None else sender, request)
    response = node.response(request)
    assert isinstance(response, VoteResponse), response
    return response


def log_with(*epochs: int) -> MemoryLog:
    """A log with one record per epoch given."""
    log = MemoryLog()
    for epoch in epochs:
        log.append_as_leader([b"x"], epoch)
    log.flush()
    return log


# ---------------------------------------------------------------------- the checks, in order


def test_wrong_cluster_id_is_refused_at_the_top_level() -> None:
    node = node_from(None)
    request = vote_request(2, 1, cluster_id="another-cluster")
    node.receive(2, request)
    assert node.response(request) == TopLevelError(Errors.INCONSISTENT_CLUSTER_ID)
    assert node.core.epoch == 0


def test_a_missing_cluster_id_is_not_checked() -> None:
    node = node_from(None)
    assert ask(node, vote_request(2, 1, cluster_id=None)).vote_granted


def test_another_partition_is_an_invalid_request() -> None:
    node = node_from(None)
    request = VoteRequest(CLUSTER, 2, 1, 0, 0, partition=1)
    node.receive(2, request)
    assert node.response(request) == TopLevelError(Errors.INVALID_REQUEST)


@pytest.mark.parametrize(
    ("epoch", "last_epoch", "last_offset", "pre_vote"),
    [
        (1, 0, -1, False),  # negative last offset
        (1, -1, 0, False),  # negative last epoch
        (3, 3, 5, False),  # a candidate's epoch must be above its log's
        (3, 4, 5, False),
        (3, 4, 5, True),  # a pre-vote's log epoch may equal its epoch, not exceed it
    ],
)
def test_invalid_fields_are_refused_before_the_epoch_is_looked_at(
    epoch: int, last_epoch: int, last_offset: int, pre_vote: bool
) -> None:
    node = node_from(None)
    response = ask(node, vote_request(2, epoch, last_epoch, last_offset, pre_vote=pre_vote))
    assert response == VoteResponse(Errors.INVALID_REQUEST, -1, 0, False)
    assert node.core.epoch == 0  # the request was not allowed to bump the epoch
    assert node.persisted == ElectionState(0, voters=VOTERS)


def test_a_pre_vote_may_carry_its_own_epoch_as_last_epoch() -> None:
    node = node_from(ElectionState(3, voters=VOTERS), log_with(3))
    response = ask(node, vote_request(2, 3, 3, 1, pre_vote=True))
    assert response.error == Errors.NONE and response.vote_granted


def test_a_negative_replica_id_is_an_invalid_request() -> None:
    node = node_from(None)
    assert ask(node, vote_request(-1, 1), sender=2).error == Errors.INVALID_REQUEST


def test_a_stale_epoch_is_fenced_with_ours() -> None:
    node = node_from(ElectionState(5, voters=VOTERS))
    response = ask(node, vote_request(2, 4))
    assert response == VoteResponse(Errors.FENCED_LEADER_EPOCH, -1, 5, False)


def test_a_higher_epoch_moves_us_to_unattached_even_when_the_vote_is_refused() -> None:
    node = node_from(ElectionState(2, leader_id=3, voters=VOTERS), log_with(1, 2))
    assert node.role == "Follower"
    response = ask(node, vote_request(2, 5, 1, 1))  # log (epoch 1, end 1) is behind ours
    assert response == VoteResponse(Errors.NONE, -1, 5, False)
    assert node.role == "Unattached" and node.core.epoch == 5
    assert node.persisted == ElectionState(5, voters=VOTERS)


def test_a_higher_epoch_pre_vote_also_moves_us_to_that_epoch() -> None:
    node = node_from(ElectionState(2, leader_id=3, voters=VOTERS))
    response = ask(node, vote_request(2, 4, 0, 0, pre_vote=True))
    assert response.vote_granted
    assert node.role == "Unattached" and node.core.epoch == 4
    assert node.persisted == ElectionState(4, voters=VOTERS)  # the pre-vote itself is not


def test_a_vote_meant_for_another_voter_gets_invalid_voter_key_after_the_epoch_bump() -> None:
    node = node_from(None)
    response = ask(node, vote_request(2, 3, voter_id=3))
    assert response == VoteResponse(Errors.INVALID_VOTER_KEY, -1, 3, False)
    assert node.core.epoch == 3
    assert node.persisted is not None and node.persisted.voted_id == -1


def test_a_vote_naming_us_is_accepted() -> None:
    node = node_from(None)
    assert ask(node, vote_request(2, 3, voter_id=1)).vote_granted


@pytest.mark.parametrize(
    ("last_epoch", "last_offset", "granted"),
    [
        (2, 3, True),  # same log
        (2, 4, True),  # longer
        (2, 2, False),  # shorter in the same epoch
        (3, 1, True),  # a newer last epoch wins however short
        (1, 9, False),  # an older last epoch loses however long
    ],
)
def test_the_log_comparison_is_epoch_first_then_end_offset(
    last_epoch: int, last_offset: int, granted: bool
) -> None:
    node = node_from(ElectionState(2, voters=VOTERS), log_with(1, 2, 2))  # end 3, epoch 2
    assert ask(node, vote_request(2, 4, last_epoch, last_offset)).vote_granted is granted


# ---------------------------------------------------------------------- the role's table

# (persisted state, extra setup, request, granted): the node is voter 1 of (1, 2, 3)
ROLE_TABLE = [
    # Unattached without a vote: any up-to-date candidate
    ("unattached", vote_request(2, 3), True),
    ("unattached", vote_request(2, 3, pre_vote=True), True),
    # Unattached after voting for 2 in epoch 3: only 2 again; pre-votes as usual
    ("voted-2", vote_request(2, 3), True),
    ("voted-2", vote_request(3, 3), False),
    ("voted-2", vote_request(3, 3, pre_vote=True), True),
    # Follower of 2 that has not fetched yet: pre-votes only
    ("follower", vote_request(3, 3), False),
    ("follower", vote_request(3, 3, pre_vote=True), True),
    # Candidate in epoch 3: pre-votes only
    ("candidate", vote_request(2, 3), False),
    ("candidate", vote_request(2, 3, pre_vote=True), True),
    # Resigned leader of epoch 3: nothing
    ("resigned", vote_request(2, 3), False),
    ("resigned", vote_request(2, 3, pre_vote=True), False),
]

STATES = {
    "unattached": ElectionState(3, voters=VOTERS),
    "voted-2": ElectionState(3, voted_id=2, voters=VOTERS),
    "follower": ElectionState(3, leader_id=2, voters=VOTERS),
    "candidate": ElectionState(3, voted_id=1, voters=VOTERS),
    "resigned": ElectionState(3, leader_id=1, voters=VOTERS),
}


@pytest.mark.parametrize(("state", "request_", "granted"), ROLE_TABLE)
def test_role_table(state: str, request_: VoteRequest, granted: bool) -> None:
    node = node_from(STATES[state])
    response = ask(node, request_)
    assert response.error == Errors.NONE
    assert response.vote_granted is granted


def test_an_out_of_date_candidate_is_refused_even_by_a_node_without_a_vote() -> None:
    node = node_from(ElectionState(3, voters=VOTERS), log_with(2))
    assert not ask(node, vote_request(2, 3, 1, 5)).vote_granted
    assert not ask(node, vote_request(2, 3, 1, 5, pre_vote=True)).vote_granted


def test_a_follower_that_fetched_from_its_leader_refuses_pre_votes() -> None:
    node = node_from(STATES["follower"])
    fetch = node.request_to(2, FetchRequest)  # sent as soon as it started
    node.answer(2, fetch, FetchResponse(Errors.NONE, 2, 3, high_watermark=0, log_start_offset=0))
    assert not ask(node, vote_request(3, 3, pre_vote=True)).vote_granted


def test_a_prospective_node_grants_a_standard_vote_once() -> None:
    node = node_from(ElectionState(3, voters=VOTERS))
    node.advance(2000)
    assert node.role == "Prospective"
    assert ask(node, vote_request(2, 3)).vote_granted
    assert node.role == "Prospective"
    assert node.persisted == ElectionState(3, voted_id=2, voters=VOTERS)
    assert not ask(node, vote_request(3, 3)).vote_granted
    assert ask(node, vote_request(3, 3, pre_vote=True)).vote_granted


def test_a_leader_refuses_votes_in_its_epoch() -> None:
    node = node_from(None)
    elect(node)
    epoch = node.core.epoch
    assert not ask(node, vote_request(2, epoch, pre_vote=True)).vote_granted
    assert not ask(node, vote_request(2, epoch)).vote_granted


# ---------------------------------------------------------------------- persistence


def test_a_granted_vote_is_persisted_before_the_response_is_given() -> None:
    node = node_from(None)
    writes_before = node.store.writes
    response = ask(node, vote_request(2, 4))
    assert response.vote_granted
    assert node.persisted == ElectionState(4, voted_id=2, voters=VOTERS)
    assert node.store.writes == writes_before + 2  # the epoch bump, then the vote


class FailingStore(MemoryQuorumStateStore):
    def write(self, state: ElectionState) -> None:
        if state.voted_id >= 0:
            raise OSError("disk full")
        super().write(state)


def test_no_vote_is_given_if_it_cannot_be_persisted() -> None:
    node = Node(1, VOTERS, store=FailingStore())
    with pytest.raises(OSError, match="disk full"):
        node.core.handle_request(2, vote_request(2, 4), 0)
    assert node.store.state is not None and node.store.state.voted_id == -1


def test_a_pre_vote_writes_nothing() -> None:
    node = node_from(ElectionState(3, voters=VOTERS))
    writes = node.store.writes
    assert ask(node, vote_request(2, 3, pre_vote=True)).vote_granted
    assert node.store.writes == writes


def test_granting_a_vote_restarts_the_election_timer() -> None:
    node = node_from(ElectionState(3, voters=VOTERS))
    node.at(900)  # the first timer (>= 1000 ms) has not expired
    assert ask(node, vote_request(2, 3)).vote_granted
    assert node.core.next_poll_ms >= 900 + 1000
    node.at(1999)
    assert node.role == "Unattached"
