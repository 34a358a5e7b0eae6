"""The leader side of ``RaftCore``: the high-watermark rule, fetch validation and parking,
BeginQuorumEpoch until acknowledged, check-quorum, resignation with EndQuorumEpoch and the
successors' backoff, DescribeQuorum."""

from __future__ import annotations

import pytest
from raft_harness import CLUSTER, Node, elect, fetch_at, fetch_request

from brook.raft.actions import Respond
from brook.raft.core import end_epoch_backoff_ms
from brook.raft.leader import Leader
from brook.raft.memory_log import MemoryLog
from brook.raft.messages import (
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Errors,
    FetchRequest,
    FetchResponse,
    OffsetAndEpoch,
    QuorumInfo,
    ReplicaInfo,
    TopLevelError,
)
from brook.raft.quorum_state import ElectionState, MemoryQuorumStateStore

VOTERS = (1, 2, 3)
VOTERS5 = (1, 2, 3, 4, 5)


def leader(voters: tuple[int, ...] = VOTERS, log: MemoryLog | None = None, epoch: int = 0) -> Node:
    store = MemoryQuorumStateStore(ElectionState(epoch, voters=voters) if epoch else None)
    node = Node(1, voters, log=log or MemoryLog(), store=store)
    elect(node)
    return node


# ---------------------------------------------------------------------- the high watermark


def test_the_high_watermark_waits_for_a_majority_past_the_epoch_start() -> None:
    node = leader()  # LeaderChange at offset 0: LEO 1, epoch start 0
    fetch_at(node, 2, 0, 0)
    assert node.core.high_watermark is None and node.commits() == []
    response = fetch_at(node, 2, 1, 1)
    assert node.commits() == [1] and response.high_watermark == 1


def test_entries_of_older_epochs_commit_only_with_one_of_the_current_epoch() -> None:
    log = MemoryLog()
    log.append_as_leader([b"a", b"b", b"c"], 1)
    node = leader(log=log, epoch=1)  # epoch 2 starts at 3; the LeaderChange is offset 3
    fetch_at(node, 2, 3, 1)  # follower holds every old entry, not the new one
    assert node.core.high_watermark is None
    fetch_at(node, 3, 3, 1)
    assert node.core.high_watermark is None  # a majority at 3 is not past the epoch start
    fetch_at(node, 2, 4, 2)
    assert node.core.high_watermark == 4


def test_the_high_watermark_is_the_majority_position_and_never_moves_back() -> None:
    node = leader((1, 2, 3, 4, 5))
    node.append(b"a", b"b", b"c", b"d")  # LEO 5
    fetch_at(node, 2, 5, 1)
    assert node.core.high_watermark is None  # (5, 5, -, -, -): index 2 unknown
    fetch_at(node, 3, 2, 1)
    assert node.core.high_watermark == 2  # (5, 5, 2, -, -)
    fetch_at(node, 4, 4, 1)
    assert node.core.high_watermark == 4  # (5, 5, 4, 2, -)
    fetch_at(node, 4, 1, 1)  # a voter that truncated: the majority is now at 2
    assert node.core.high_watermark == 4


def test_observers_never_count_toward_the_high_watermark() -> None:
    node = leader()
    for observer in (100, 101, 102):
        fetch_at(node, observer, 1, 1)
    assert node.core.high_watermark is None


def test_the_leader_counts_only_what_it_flushed() -> None:
    node = leader()
    fetch_at(node, 2, 1, 1)
    node.append(b"x")
    assert node.log.flushed_offset == 2
    fetch_at(node, 2, 2, 1)
    assert node.core.high_watermark == 2


# ---------------------------------------------------------------------- Fetch


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"max_wait_ms": -1}, Errors.INVALID_REQUEST),
        ({"fetch_offset": -1}, Errors.INVALID_REQUEST),
        ({"last_fetched_epoch": -1}, Errors.INVALID_REQUEST),
        ({"last_fetched_epoch": 2}, Errors.INVALID_REQUEST),  # above its own current epoch
        ({"current_leader_epoch": 0}, Errors.FENCED_LEADER_EPOCH),
        ({"current_leader_epoch": 2, "last_fetched_epoch": 0}, Errors.UNKNOWN_LEADER_EPOCH),
    ],
)
def test_fetch_validation(fields: dict[str, int], error: int) -> None:
    node = leader()
    values = {
        "cluster_id": CLUSTER,
        "replica_id": 2,
        "current_leader_epoch": 1,
        "fetch_offset": 0,
        "last_fetched_epoch": 0,
        "max_wait_ms": 0,
        "max_bytes": 1000,
    }
    values.update(fields)
    request = FetchRequest(**values)  # type: ignore[arg-type]
    node.receive(2, request)
    response = node.response(request)
    assert isinstance(response, FetchResponse)
    assert response.error == error
    assert response.leader_epoch == 1 and response.leader_id == 1
    assert not response.records


def test_fetch_from_a_non_leader_of_the_same_epoch_names_the_leader() -> None:
    node = Node(
        1, VOTERS, store=MemoryQuorumStateStore(ElectionState(3, leader_id=2, voters=VOTERS))
    )
    request = fetch_request(100, 3, 0, 0)
    node.receive(100, request)
    assert node.response(request) == FetchResponse(
        Errors.NOT_LEADER_OR_FOLLOWER, 2, 3, log_start_offset=0
    )


def test_fetch_with_the_wrong_cluster_id_is_refused() -> None:
    node = leader()
    request = FetchRequest("elsewhere", 2, 1, 0, 0, 0, 1000)
    node.receive(2, request)
    assert node.response(request) == TopLevelError(Errors.INCONSISTENT_CLUSTER_ID)


def test_a_fetch_with_nothing_to_read_parks_until_an_append() -> None:
    node = leader()
    fetch_at(node, 2, 1, 1)
    request = fetch_request(2, 1, 1, 1)
    node.receive(2, request)
    assert node.responses() == []
    node.advance(100)
    assert node.responses() == []
    node.append(b"x")
    response = node.response(request)
    assert isinstance(response, FetchResponse) and len(response.records) == 1


def test_a_parked_fetch_answers_empty_when_its_wait_ends() -> None:
    node = leader()
    fetch_at(node, 2, 1, 1)  # the follower learns the high watermark: its next fetch waits
    request = fetch_request(2, 1, 1, 1, max_wait_ms=500)
    node.receive(2, request)
    assert node.core.next_poll_ms <= node.now + 500
    node.at(node.now + 499)
    assert node.responses() == []
    node.at(node.now + 1)
    response = node.response(request)
    assert isinstance(response, FetchResponse) and response.error == Errors.NONE
    assert not response.records


def test_a_fetch_from_a_replica_behind_on_the_high_watermark_is_answered_at_once() -> None:
    """A replica that has all the records but not the current high watermark gets it now,
    not after its wait: committed records are applied everywhere within a round trip."""
    node = leader()
    assert fetch_at(node, 2, 1, 1).high_watermark == 1
    node.core.append([b"x"], node.now)

    def fetch(offset: int) -> FetchResponse | None:
        request = fetch_request(2, 1, offset, 1, max_wait_ms=500)
        node.receive(2, request)
        answered = [a.response for a in node.out if isinstance(a, Respond) and a.request is request]
        return answered[0] if answered else None  # type: ignore[return-value]

    got = fetch(1)
    assert got is not None and len(got.records) == 1
    # its next fetch reports the record: the high watermark moves past it, and the fetch is
    # answered at once with it instead of waiting for new records
    moved = fetch(2)
    assert moved is not None and moved.high_watermark == 2 and not moved.records
    # told everything, its next fetch waits
    assert fetch(2) is None


def test_a_diverging_fetch_is_answered_at_once_with_the_epoch_end() -> None:
    log = MemoryLog()
    log.append_as_leader([b"a", b"b", b"c"], 1)
    node = leader(log=log, epoch=2)  # epoch 3 starts at 3
    response = fetch_at(node, 2, 5, 2)  # the follower has epoch 2 records the leader lacks
    assert response.diverging_epoch == OffsetAndEpoch(3, 1)
    assert not response.records
    response = fetch_at(node, 2, 3, 1)
    assert response.diverging_epoch is None and len(response.records) == 1


# ---------------------------------------------------------------------- BeginQuorumEpoch


def test_begin_quorum_epoch_is_repeated_until_each_voter_acknowledges() -> None:
    node = leader()
    start = node.now
    first = {s.destination: s.request for s in node.sent(BeginQuorumEpochRequest)}
    assert first.keys() == {2, 3}
    # voter 2 acknowledges by fetching; voter 3's request fails
    fetch_at(node, 2, 1, 1)
    node.core.handle_send_failure(3, first[3], node.now)
    node.at(start + 999)
    assert node.sent(BeginQuorumEpochRequest) == []
    node.at(start + 1000)
    assert [s.destination for s in node.sent(BeginQuorumEpochRequest)] == [3]


def test_a_begin_quorum_epoch_response_acknowledges_too() -> None:
    node = leader()
    start = node.now
    request = node.request_to(3, BeginQuorumEpochRequest)
    node.answer(3, request, BeginQuorumEpochResponse(Errors.NONE, 1, 1))
    fetch_at(node, 2, 1, 1)
    node.at(start + 4000)
    assert node.sent(BeginQuorumEpochRequest) == [] or node.role != "Leader"


def test_begin_quorum_epoch_makes_a_voter_follow_the_leader() -> None:
    node = Node(2, VOTERS)
    request = BeginQuorumEpochRequest(CLUSTER, 1, 4, 2)
    node.receive(1, request)
    assert node.response(request) == BeginQuorumEpochResponse(Errors.NONE, 1, 4)
    assert node.role == "Follower" and node.persisted == ElectionState(
        4, leader_id=1, voters=VOTERS
    )
    assert node.request_to(1, FetchRequest).current_leader_epoch == 4
    stale = BeginQuorumEpochRequest(CLUSTER, 3, 3, 2)
    node.receive(3, stale)
    assert node.response(stale) == BeginQuorumEpochResponse(Errors.FENCED_LEADER_EPOCH, 1, 4)
    wrong = BeginQuorumEpochRequest(CLUSTER, 1, 4, 3)
    node.receive(1, wrong)
    assert node.response(wrong) == BeginQuorumEpochResponse(Errors.INVALID_VOTER_KEY, 1, 4)


# ---------------------------------------------------------------------- check-quorum


def test_check_quorum_resigns_after_one_and_a_half_fetch_timeouts_without_a_majority() -> None:
    node = leader()
    start = node.now
    node.at(start + 2999)
    assert node.role == "Leader"
    node.at(start + 3000)
    assert node.role == "Resigned"


def test_fetches_from_a_majority_keep_the_leader() -> None:
    node = leader((1, 2, 3, 4, 5))
    start = node.now
    for step in range(1, 9):
        node.at(start + step * 1000)
        fetch_at(node, 2 + step % 2, 1, 1)  # voters 2 and 3 alternate: with the leader, 3 of 5
        assert node.role == "Leader"
    last_majority = start + 8000
    node.at(last_majority + 2999)
    assert node.role == "Leader"
    node.at(last_majority + 3000)
    assert node.role == "Resigned"


def test_observer_fetches_do_not_keep_a_leader() -> None:
    node = leader()
    start = node.now
    for step in range(1, 4):
        node.at(start + step * 900)
        fetch_at(node, 100, 1, 1)
    node.at(start + 3000)
    assert node.role == "Resigned"


def test_a_single_voter_never_fails_check_quorum() -> None:
    node = Node(1, (1,))
    node.advance(60_000)
    assert node.role == "Leader"


# ---------------------------------------------------------------------- resignation


def test_resign_sends_end_quorum_epoch_with_successors_by_fetch_offset() -> None:
    node = leader((1, 2, 3, 4))
    node.append(b"a", b"b")  # LEO 3
    fetch_at(node, 2, 1, 1)
    fetch_at(node, 3, 3, 1)
    fetch_at(node, 4, 2, 1)
    parked = fetch_request(3, 1, 3, 1)
    node.receive(3, parked)
    node.out = node.core.resign(node.now)
    assert node.role == "Resigned"
    ends = {s.destination: s.request for s in node.sent(EndQuorumEpochRequest)}
    assert ends.keys() == {2, 3, 4}
    assert ends[2] == EndQuorumEpochRequest(CLUSTER, 1, 1, (3, 4, 2))


def test_a_resigning_leader_answers_its_parked_fetches_with_not_leader() -> None:
    node = leader()
    fetch_at(node, 2, 1, 1)
    parked = fetch_request(2, 1, 1, 1)
    node.receive(2, parked)
    node.out = node.core.resign(node.now)
    response = node.response(parked)
    assert isinstance(response, FetchResponse)
    assert response.error == Errors.NOT_LEADER_OR_FOLLOWER


def test_end_quorum_epoch_is_resent_until_acknowledged_then_the_next_epoch_comes() -> None:
    node = leader()
    node.out = node.core.resign(node.now)
    ends = {s.destination: s.request for s in node.sent(EndQuorumEpochRequest)}
    node.answer(2, ends[2], EndQuorumEpochResponse(Errors.NONE, 1, 1))
    node.core.handle_send_failure(3, ends[3], node.now)
    node.advance(20)
    assert [s.destination for s in node.sent(EndQuorumEpochRequest)] == [3]
    node.advance(2000)  # its election timer (< 2 x election timeout) has expired
    assert node.core.epoch == 2 and node.role in ("Unattached", "Prospective")
    assert node.persisted == ElectionState(2, voters=VOTERS)


@pytest.mark.parametrize(
    ("position", "successors", "backoff"),
    [
        (0, 3, 0),
        (1, 3, 250),
        (2, 3, 500),
        (1, 2, 500),
        (3, 4, 500),
        (1, 4, 125),
        (3, 3, 1000),  # not listed
        (0, 1, 0),
    ],
)
def test_end_epoch_backoff_formula(position: int, successors: int, backoff: int) -> None:
    assert end_epoch_backoff_ms(position, successors, 1000) == backoff


@pytest.mark.parametrize(("successors", "deadline"), [((2, 3), 0), ((3, 2), 500), ((3,), 1000)])
def test_a_follower_told_of_resignation_waits_by_its_place_among_successors(
    successors: tuple[int, ...], deadline: int
) -> None:
    node = Node(
        2, VOTERS, store=MemoryQuorumStateStore(ElectionState(4, leader_id=1, voters=VOTERS))
    )
    node.at(100)
    request = EndQuorumEpochRequest(CLUSTER, 1, 4, successors)
    node.receive(1, request)
    assert node.response(request) == EndQuorumEpochResponse(Errors.NONE, 1, 4)
    node.at(100 + deadline - 1) if deadline else None
    if deadline:
        assert node.role == "Follower"
    node.at(100 + deadline)
    assert node.role == "Prospective"


# ---------------------------------------------------------------------- DescribeQuorum


def test_describe_quorum_reports_each_replica_as_the_leader_saw_it() -> None:
    node = leader()
    node.at(1000)
    node.append(b"a", b"b")  # LEO 3
    node.at(2000)
    fetch_at(node, 2, 3, 1)  # caught up
    node.at(2500)
    fetch_at(node, 3, 1, 1)
    fetch_at(node, 100, 3, 1)
    info = node.core.describe_quorum(3000)
    assert info == QuorumInfo(
        Errors.NONE,
        1,
        1,
        3,
        voters=(
            ReplicaInfo(1, 3, 3000, 3000),
            ReplicaInfo(2, 3, 2000, 2000),
            ReplicaInfo(3, 1, 2500, -1),
        ),
        observers=(ReplicaInfo(100, 3, 2500, 2500),),
    )


def test_caught_up_time_counts_reaching_the_previous_fetch_end() -> None:
    node = leader()
    node.append(b"a")  # LEO 2
    node.at(1000)
    fetch_at(node, 2, 1, 1)  # behind; the leader was at 2
    node.at(1500)
    node.append(b"b")  # LEO 3
    node.at(2000)
    fetch_at(node, 2, 2, 1)  # reached where the leader was at the previous fetch
    voters = node.core.describe_quorum(2000).voters
    assert voters[1] == ReplicaInfo(2, 2, 2000, 1000)


def test_observers_silent_for_five_minutes_are_dropped() -> None:
    node = leader()
    fetch_at(node, 100, 1, 1)
    assert node.core.describe_quorum(node.now + 299_999).observers
    assert node.core.describe_quorum(node.now + 300_000).observers == ()


def test_only_the_leader_describes_the_quorum() -> None:
    node = Node(1, VOTERS)
    assert node.core.describe_quorum(0) == QuorumInfo(Errors.NOT_LEADER_OR_FOLLOWER)


# ---------------------------------------------------------------------- the role itself


def leader_role(voters: tuple[int, ...] = VOTERS5, epoch_start: int = 10) -> Leader:
    role = Leader(3, 1, epoch_start, voters, (1, 2, 3), 3000, 0)
    role.update_local_end(epoch_start + 1)
    return role


@pytest.mark.parametrize(
    ("positions", "hw"),
    [
        ({2: 11, 3: 11}, 11),  # (11, 11, 11, -, -): index 2
        ({2: 11}, None),
        ({2: 11, 3: 10, 4: 10}, None),  # the majority has nothing of this epoch yet
        ({2: 12, 3: 11, 4: 3}, 11),
    ],
)
def test_the_high_watermark_is_index_n_over_2_of_the_descending_ends(
    positions: dict[int, int], hw: int | None
) -> None:
    role = leader_role()
    role.update_local_end(12)
    for replica, offset in positions.items():
        role.update_replica(replica, 100, offset)
    assert role.high_watermark == hw


def test_a_leader_never_counts_an_observer_nor_goes_back() -> None:
    role = leader_role((1, 2, 3))
    assert not role.update_replica(100, 1, 11)
    assert role.update_replica(2, 1, 11) and role.high_watermark == 11
    role.update_replica(2, 2, 10)
    assert role.high_watermark == 11


def test_successors_are_ordered_by_fetch_position() -> None:
    role = leader_role()
    role.update_replica(4, 1, 9)
    role.update_replica(2, 1, 11)
    role.update_replica(5, 1, 9)
    assert role.voters_by_descending_end() == (2, 4, 5, 3)


def test_check_quorum_restarts_once_a_majority_fetched() -> None:
    role = leader_role()
    assert role.check_quorum_expires_at() == 3000
    role.update_check_quorum(2, 1000)
    role.update_check_quorum(100, 1100)  # an observer does not count
    assert role.check_quorum_expires_at() == 3000
    role.update_check_quorum(3, 1200)
    assert role.check_quorum_expires_at() == 4200
    assert Leader(1, 1, 0, (1,), (1,), 3000, 0).check_quorum_expires_at() >= 2**62
