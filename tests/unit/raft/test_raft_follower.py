"""The fetching side of ``RaftCore``: appending and flushing the leader's batches, the
follower's high watermark, DivergingEpoch and truncation (never below the high watermark),
observers finding the leader, and fetching a snapshot when behind the leader's log start."""

from __future__ import annotations

import pytest
from raft_harness import CLUSTER, Node, elect, fetch_at, fetch_request

from brook.raft.actions import CommitTo, SnapshotInstalled
from brook.raft.config import RaftConfig
from brook.raft.follower import Follower, RaftFatalError
from brook.raft.memory_log import MemoryLog
from brook.raft.messages import (
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    Request,
)
from brook.raft.quorum_state import ElectionState, MemoryQuorumStateStore

VOTERS = (1, 2, 3)


def records_from(*epoch_counts: tuple[int, int]) -> MemoryLog:
    """A log with ``count`` one-record batches in each ``epoch``."""
    log = MemoryLog()
    for epoch, count in epoch_counts:
        for _ in range(count):
            log.append_as_leader([f"e{epoch}".encode()], epoch)
    log.flush()
    return log


def follower(
    node_id: int = 2, log: MemoryLog | None = None, epoch: int = 3, leader: int = 1, **kw: object
) -> Node:
    store = MemoryQuorumStateStore(ElectionState(epoch, leader_id=leader, voters=VOTERS))
    return Node(node_id, VOTERS, log=log or MemoryLog(), store=store, **kw)  # type: ignore[arg-type]


def relay(
    source: Node, target: Node, sender: int, request: Request
) -> FetchResponse | FetchSnapshotResponse:
    """Deliver ``request`` from ``sender`` to ``target`` and hand the response back."""
    target.receive(sender, request)
    response = target.response(request)
    assert isinstance(response, FetchResponse | FetchSnapshotResponse)
    source.answer(target.node_id, request, response)
    return response


# ---------------------------------------------------------------------- records and HW


def test_a_voter_appends_and_flushes_before_its_next_fetch() -> None:
    leader_log = records_from((3, 4))
    node = follower()
    fetch = node.request_to(1, FetchRequest)
    batches = leader_log.read(0, 1 << 20)
    node.answer(1, fetch, FetchResponse(Errors.NONE, 1, 3, 2, 0, records=batches))
    assert node.log.end_offset == 4 and node.log.flushed_offset == 4
    assert node.commits() == [2]
    assert node.request_to(1, FetchRequest).fetch_offset == 4


def test_an_observer_does_not_flush() -> None:
    leader_log = records_from((3, 4))
    node = follower(100)
    fetch = node.request_to(1, FetchRequest)
    node.answer(
        1, fetch, FetchResponse(Errors.NONE, 1, 3, 0, 0, records=leader_log.read(0, 1 << 20))
    )
    assert node.log.end_offset == 4 and node.log.flushed_offset == 0


def test_the_follower_high_watermark_is_capped_by_its_own_log_end() -> None:
    node = follower(log=records_from((1, 5)))
    fetch = node.request_to(1, FetchRequest)
    node.answer(1, fetch, FetchResponse(Errors.NONE, 1, 3, 9, 0))
    assert node.core.high_watermark == 5 and node.commits() == [5]


def test_an_unknown_leader_high_watermark_leaves_ours_alone() -> None:
    node = follower(log=records_from((1, 5)))
    fetch = node.request_to(1, FetchRequest)
    node.answer(1, fetch, FetchResponse(Errors.NONE, 1, 3, -1, 0))
    assert node.core.high_watermark is None and node.commits() == []


# ---------------------------------------------------------------------- divergence


def test_a_diverging_follower_truncates_to_the_epoch_end_the_leader_gives() -> None:
    node = follower(log=records_from((1, 3), (2, 2)))  # epochs 1: 0-2, 2: 3-4
    fetch = node.request_to(1, FetchRequest)
    assert (fetch.fetch_offset, fetch.last_fetched_epoch) == (5, 2)  # type: ignore[union-attr]
    node.answer(
        1, fetch, FetchResponse(Errors.NONE, 1, 3, 0, 0, diverging_epoch=OffsetAndEpoch(3, 1))
    )
    assert node.log.end_offset == 3 and node.log.epoch_entries() == [(1, 0)]
    again = node.request_to(1, FetchRequest)
    assert (again.fetch_offset, again.last_fetched_epoch) == (3, 1)  # type: ignore[union-attr]


def test_truncation_stops_at_the_end_of_our_own_copy_of_that_epoch() -> None:
    # the leader's epoch 1 ran to 4; ours stopped at 2 and epoch 2 followed
    node = follower(log=records_from((1, 2), (2, 3)))
    fetch = node.request_to(1, FetchRequest)
    node.answer(
        1, fetch, FetchResponse(Errors.NONE, 1, 3, 0, 0, diverging_epoch=OffsetAndEpoch(4, 1))
    )
    assert node.log.end_offset == 2


def test_a_leader_and_follower_converge_through_divergence() -> None:
    leader_node = Node(
        1,
        VOTERS,
        log=records_from((1, 3)),
        store=MemoryQuorumStateStore(ElectionState(2, voters=VOTERS)),
    )
    elect(leader_node)  # epoch 3, LeaderChange at offset 3
    node = follower(log=records_from((1, 3), (2, 2)))
    relay(node, leader_node, 2, node.request_to(1, FetchRequest))
    assert node.log.end_offset == 3
    relay(node, leader_node, 2, node.request_to(1, FetchRequest))
    assert node.log.end_offset == 4 and node.log.epoch_entries() == [(1, 0), (3, 3)]


def test_truncating_below_the_high_watermark_is_fatal() -> None:
    node = follower(log=records_from((1, 3), (2, 2)))
    fetch = node.request_to(1, FetchRequest)
    node.answer(1, fetch, FetchResponse(Errors.NONE, 1, 3, 4, 0))
    assert node.core.high_watermark == 4
    fetch = node.request_to(1, FetchRequest)
    with pytest.raises(RaftFatalError, match="below the high watermark 4"):
        node.core.handle_response(
            1,
            fetch,
            FetchResponse(Errors.NONE, 1, 3, 4, 0, diverging_epoch=OffsetAndEpoch(3, 1)),
            0,
        )
    assert node.log.end_offset == 5  # nothing was cut


# ---------------------------------------------------------------------- finding the leader


def test_an_observer_asks_any_voter_and_follows_the_leader_it_names() -> None:
    node = Node(100, VOTERS)
    [send] = node.sent(FetchRequest)
    assert send.destination in VOTERS
    node.answer(send.destination, send.request, FetchResponse(Errors.FENCED_LEADER_EPOCH, 2, 4))
    assert node.role == "Follower" and node.core.leader_and_epoch.leader_id == 2
    assert node.request_to(2, FetchRequest).current_leader_epoch == 4


def test_an_observer_appends_from_the_response_that_names_the_leader() -> None:
    node = Node(100, VOTERS, store=MemoryQuorumStateStore(ElectionState(4, voters=VOTERS)))
    [send] = node.sent(FetchRequest)
    batches = records_from((4, 2)).read(0, 1 << 20)
    node.answer(
        send.destination, send.request, FetchResponse(Errors.NONE, 2, 4, 2, 0, records=batches)
    )
    assert node.role == "Follower" and node.log.end_offset == 2
    assert node.commits() == [2]


def test_a_follower_whose_leader_stops_answering_asks_the_other_voters() -> None:
    node = follower()
    first = node.request_to(1, FetchRequest)
    node.out = node.core.handle_send_failure(1, first, 0)
    [send] = node.sent(FetchRequest)  # the leader is backing off: another voter is asked
    assert send.destination == 3


# ---------------------------------------------------------------------- snapshots


def snapshot_leader(chunk: int) -> Node:
    """A leader of epoch 1 whose log below offset 4 was replaced by a snapshot."""
    node = Node(1, VOTERS)
    elect(node)
    node.append(b"a", b"b")
    node.append(b"c")
    fetch_at(node, 3, 4, 1)
    assert node.core.high_watermark == 4
    snapshot_id = node.core.create_snapshot(4, b"0123456789")
    assert snapshot_id == OffsetAndEpoch(4, 1)
    node.append(b"d")
    assert node.core.delete_log_before_snapshot()
    assert node.log.start_offset == 4
    return node


def test_a_follower_behind_the_log_start_fetches_the_snapshot_in_chunks_and_installs_it() -> None:
    leader_node = snapshot_leader(4)
    node = follower(epoch=1, config=RaftConfig(fetch_max_bytes=4))
    response = relay(node, leader_node, 2, node.request_to(1, FetchRequest))
    assert isinstance(response, FetchResponse) and response.snapshot_id == OffsetAndEpoch(4, 1)
    positions = []
    while True:
        [send] = node.sent(FetchSnapshotRequest, 1)
        assert isinstance(send.request, FetchSnapshotRequest)
        positions.append(send.request.position)
        relay(node, leader_node, 2, send.request)
        if any(isinstance(a, SnapshotInstalled) for a in node.out):
            break
    assert positions == [0, 4, 8]
    assert SnapshotInstalled(OffsetAndEpoch(4, 1)) in node.out and CommitTo(4) in node.out
    assert node.log.start_offset == node.log.end_offset == 4
    assert node.log.snapshot_content(OffsetAndEpoch(4, 1)) == b"0123456789"
    fetch = node.request_to(1, FetchRequest)
    assert (fetch.fetch_offset, fetch.last_fetched_epoch) == (4, 1)  # type: ignore[union-attr]
    relay(node, leader_node, 2, fetch)
    assert node.log.end_offset == 5


def test_a_snapshot_the_leader_no_longer_has_sends_the_follower_back_to_fetch() -> None:
    node = follower(epoch=1)
    fetch = node.request_to(1, FetchRequest)
    node.answer(1, fetch, FetchResponse(Errors.NONE, 1, 1, 4, 4, snapshot_id=OffsetAndEpoch(4, 1)))
    request = node.request_to(1, FetchSnapshotRequest)
    node.answer(1, request, FetchSnapshotResponse(Errors.SNAPSHOT_NOT_FOUND, 1, 1))
    assert isinstance(node.request_to(1, FetchRequest), FetchRequest)


def test_fetch_from_offset_zero_gets_the_snapshot_even_when_the_log_is_whole() -> None:
    node = Node(1, VOTERS)
    elect(node)
    node.append(b"a")
    fetch_at(node, 2, 2, 1)
    node.core.create_snapshot(2, b"state")
    response = fetch_at(node, 3, 0, 0)
    assert response.snapshot_id == OffsetAndEpoch(2, 1) and not response.records


@pytest.mark.parametrize(
    ("snapshot_id", "position", "error"),
    [
        (OffsetAndEpoch(4, 1), 0, Errors.NONE),
        (OffsetAndEpoch(3, 1), 0, Errors.SNAPSHOT_NOT_FOUND),
        (OffsetAndEpoch(4, 1), 10, Errors.POSITION_OUT_OF_RANGE),
        (OffsetAndEpoch(4, 1), -1, Errors.POSITION_OUT_OF_RANGE),
    ],
)
def test_fetch_snapshot_answers(snapshot_id: OffsetAndEpoch, position: int, error: int) -> None:
    node = snapshot_leader(4)
    request = FetchSnapshotRequest(CLUSTER, 2, 1, snapshot_id, position, 4)
    node.receive(2, request)
    response = node.response(request)
    assert isinstance(response, FetchSnapshotResponse)
    assert response.error == error and response.leader_id == 1 and response.leader_epoch == 1
    if error == Errors.NONE:
        assert (response.size, response.position, response.data) == (10, 0, b"0123")


def test_fetch_snapshot_in_a_stale_epoch_is_fenced() -> None:
    node = snapshot_leader(4)
    request = FetchSnapshotRequest(CLUSTER, 2, 0, OffsetAndEpoch(4, 1), 0, 4)
    node.receive(2, request)
    assert node.response(request) == FetchSnapshotResponse(Errors.FENCED_LEADER_EPOCH, 1, 1)


def test_snapshots_are_only_taken_below_the_high_watermark_at_batch_boundaries() -> None:
    node = Node(1, VOTERS)
    elect(node)
    node.append(b"a", b"b")
    fetch_at(node, 2, 3, 1)
    with pytest.raises(ValueError, match="past the high watermark"):
        node.core.create_snapshot(4, b"s")
    with pytest.raises(ValueError, match="batch boundary"):
        node.core.create_snapshot(2, b"s")
    with pytest.raises(ValueError, match="empty"):
        node.core.create_snapshot(3, b"")
    assert node.core.create_snapshot(3, b"s") == OffsetAndEpoch(3, 1)


def test_a_follower_fetch_request_is_what_kafka_sends() -> None:
    node = follower(log=records_from((2, 1)))
    assert node.request_to(1, FetchRequest) == fetch_request(2, 3, 1, 2, max_bytes=8 * 1024 * 1024)


# ---------------------------------------------------------------------- the role itself


def test_a_follower_grants_pre_votes_only_until_it_has_fetched() -> None:
    role = Follower(5, 2, -1, 0, None)
    assert role.can_grant_vote(3, True, True)
    assert not role.can_grant_vote(3, False, True)
    assert not role.can_grant_vote(3, True, False)
    role.has_fetched = True
    assert not role.can_grant_vote(3, True, True)


def test_a_follower_high_watermark_never_moves_back() -> None:
    role = Follower(5, 2, -1, 0, None)
    assert role.update_high_watermark(4) and not role.update_high_watermark(4)
    with pytest.raises(AssertionError):
        role.update_high_watermark(3)
