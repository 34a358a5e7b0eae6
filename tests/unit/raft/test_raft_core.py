"""``RaftCore`` as a whole: what every response shares (stale epochs ignored, newer ones adopted,
a leader of our epoch followed), late and duplicated responses dropped, graceful shutdown,
appends only on the leader."""

from __future__ import annotations

import pytest
from raft_harness import CLUSTER, Node, begin_epoch, elect, fetch_request, grant

from brook.raft.actions import LeaderChanged, ShutdownComplete
from brook.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    Errors,
    FetchRequest,
    FetchResponse,
    TopLevelError,
    VoteRequest,
)
from brook.raft.quorum_state import ElectionState, MemoryQuorumStateStore

VOTERS = (1, 2, 3)


def following(epoch: int = 4, leader: int = 2) -> Node:
    store = MemoryQuorumStateStore(ElectionState(epoch, leader_id=leader, voters=VOTERS))
    return Node(1, VOTERS, store=store)


# ---------------------------------------------------------------------- any response


def test_a_response_from_an_older_epoch_is_ignored() -> None:
    node = following()
    fetch = node.request_to(2, FetchRequest)
    node.answer(2, fetch, FetchResponse(Errors.NOT_LEADER_OR_FOLLOWER, 3, 3))
    assert node.role == "Follower" and node.core.leader_and_epoch.leader_id == 2
    assert node.core.epoch == 4


def test_unknown_leader_epoch_is_ignored() -> None:
    node = following()
    fetch = node.request_to(2, FetchRequest)
    node.answer(2, fetch, FetchResponse(Errors.UNKNOWN_LEADER_EPOCH, -1, 4))
    assert node.role == "Follower" and node.core.epoch == 4


def test_a_newer_epoch_without_a_leader_makes_us_unattached_there() -> None:
    node = following()
    fetch = node.request_to(2, FetchRequest)
    node.answer(2, fetch, FetchResponse(Errors.FENCED_LEADER_EPOCH, -1, 6))
    assert node.role == "Unattached" and node.core.epoch == 6
    assert node.persisted == ElectionState(6, voters=VOTERS)


def test_a_leader_of_our_epoch_we_did_not_know_is_followed() -> None:
    node = Node(1, VOTERS, store=MemoryQuorumStateStore(ElectionState(4, voters=VOTERS)))
    [send] = node.sent(FetchRequest)
    node.answer(send.destination, send.request, FetchResponse(Errors.NOT_LEADER_OR_FOLLOWER, 3, 4))
    assert node.role == "Follower" and node.core.leader_and_epoch.leader_id == 3
    assert LeaderChanged(3, 4) in node.out


@pytest.mark.parametrize(
    "response",
    [FetchResponse(Errors.BROKER_NOT_AVAILABLE, 2, 4), TopLevelError(Errors.NETWORK_EXCEPTION)],
)
def test_a_failed_response_backs_off_that_destination(
    response: FetchResponse | TopLevelError,
) -> None:
    node = following()
    fetch = node.request_to(2, FetchRequest)
    node.answer(2, fetch, response)
    # the leader is backing off (retry.backoff.ms): the other voter is asked meanwhile
    assert [s.destination for s in node.sent(FetchRequest)] == [3]
    assert node.role == "Follower" and node.core.epoch == 4


def test_invalid_request_in_a_response_is_a_bug_of_ours() -> None:
    node = following()
    fetch = node.request_to(2, FetchRequest)
    with pytest.raises(AssertionError, match="invalid"):
        node.answer(2, fetch, FetchResponse(Errors.INVALID_REQUEST, 2, 4))


def test_late_and_duplicated_responses_are_dropped() -> None:
    node = following()
    fetch = node.request_to(2, FetchRequest)
    good = FetchResponse(Errors.NONE, 2, 4, -1, 0)
    node.answer(2, fetch, good)
    again = node.request_to(2, FetchRequest)
    node.answer(2, fetch, FetchResponse(Errors.FENCED_LEADER_EPOCH, 3, 9))  # the old request
    assert node.core.epoch == 4 and node.out == []
    node.answer(2, again, good)
    node.answer(2, again, FetchResponse(Errors.FENCED_LEADER_EPOCH, 3, 9))  # a duplicate
    assert node.core.epoch == 4


def test_responses_to_a_previous_role_s_requests_are_dropped() -> None:
    node = Node(1, VOTERS, store=MemoryQuorumStateStore(ElectionState(2, voters=VOTERS)))
    node.advance(2000)
    pre_votes = {v: node.request_to(v, VoteRequest) for v in (2, 3)}
    node.receive(3, begin_epoch(3, 2))
    assert node.role == "Follower"
    grant(node, 2, pre_votes[2])  # a majority of pre-votes, but for a round that is over
    assert node.role == "Follower" and node.out == []


# ---------------------------------------------------------------------- requests


def test_begin_and_end_quorum_epoch_check_the_cluster_and_the_epoch() -> None:
    node = following()
    for request in (
        BeginQuorumEpochRequest("other", 2, 4),
        EndQuorumEpochRequest("other", 2, 4),
    ):
        node.receive(2, request)
        assert node.response(request) == TopLevelError(Errors.INCONSISTENT_CLUSTER_ID)
    stale = begin_epoch(2, 3)
    node.receive(2, stale)
    assert node.response(stale) == BeginQuorumEpochResponse(Errors.FENCED_LEADER_EPOCH, 2, 4)
    wrong = BeginQuorumEpochRequest(CLUSTER, 2, 4, partition=3)
    node.receive(2, wrong)
    assert node.response(wrong) == TopLevelError(Errors.INVALID_REQUEST)


# ---------------------------------------------------------------------- appends and shutdown


def test_only_the_leader_appends() -> None:
    node = following()
    result = node.core.append([b"x"], node.now)
    assert result.error == Errors.NOT_LEADER_OR_FOLLOWER
    assert (result.leader_id, result.epoch) == (2, 4)
    assert node.log.end_offset == 0


def test_a_follower_shuts_down_at_once() -> None:
    node = following()
    node.out = node.core.shutdown(node.now, 5000)
    assert ShutdownComplete(False) in node.out and node.core.shutdown_complete
    request = fetch_request(3, 4, 0, 0)
    assert node.core.handle_request(3, request, node.now) == []


def test_a_leader_shutting_down_resigns_and_waits_for_the_next_leader() -> None:
    node = Node(1, VOTERS)
    elect(node)
    node.out = node.core.shutdown(node.now, 5000)
    assert node.role == "Resigned"
    assert {s.destination for s in node.sent(EndQuorumEpochRequest)} == {2, 3}
    assert node.core.append([b"x"], node.now).error == Errors.NOT_LEADER_OR_FOLLOWER
    node.advance(3000)  # a Resigned node shutting down runs no election itself
    assert node.role == "Resigned" and not node.core.shutdown_complete
    node.receive(2, begin_epoch(2, 2))
    assert ShutdownComplete(False) in node.out


def test_a_shutdown_that_takes_too_long_gives_up() -> None:
    node = Node(1, VOTERS)
    elect(node)
    start = node.now
    node.core.shutdown(start, 5000)
    node.at(start + 4999)
    assert not node.core.shutdown_complete
    node.at(start + 5000)
    assert ShutdownComplete(True) in node.out


def test_a_single_voter_s_start_up_actions_come_with_the_first_poll() -> None:
    node = Node(1, (1,))
    assert LeaderChanged(1, 1) in node.out
    assert node.core.poll(node.now) == []
