"""Drive one ``RaftCore`` by hand in the unit tests: a clock, an in-memory log and store, and
helpers to play the other voters' part (answer its requests, send it requests)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from brook.raft.actions import Action, CommitTo, LeaderChanged, Respond, Send
from brook.raft.config import RaftConfig
from brook.raft.core import RaftCore
from brook.raft.leader import Leader
from brook.raft.memory_log import MemoryLog
from brook.raft.messages import (
    BeginQuorumEpochRequest,
    Errors,
    FetchRequest,
    FetchResponse,
    Request,
    Response,
    VoteRequest,
    VoteResponse,
)
from brook.raft.quorum_state import ElectionState, MemoryQuorumStateStore

CLUSTER = "test-cluster"
CONFIG = RaftConfig()


@dataclass
class Node:
    """One core under test, with the actions of its last call in ``out``."""

    node_id: int = 1
    voters: tuple[int, ...] = (1, 2, 3)
    seed: int = 0
    now: int = 0
    config: RaftConfig = CONFIG
    log: MemoryLog = field(default_factory=MemoryLog)
    store: MemoryQuorumStateStore = field(default_factory=MemoryQuorumStateStore)
    core: RaftCore = field(init=False)
    out: list[Action] = field(init=False)

    def __post_init__(self) -> None:
        self.core = RaftCore(
            self.node_id,
            self.voters,
            CLUSTER,
            self.config,
            self.log,
            self.store,
            random.Random(self.seed),
            self.now,
        )
        self.out = self.core.poll(self.now)

    # ------------------------------------------------------------------ driving
    def at(self, now: int) -> list[Action]:
        """Move the clock to ``now`` and poll."""
        self.now = now
        self.out = self.core.poll(now)
        return self.out

    def advance(self, ms: int) -> list[Action]:
        return self.at(self.now + ms)

    def receive(self, sender: int, request: Request) -> list[Action]:
        self.out = self.core.handle_request(sender, request, self.now)
        return self.out

    def answer(self, sender: int, request: Request, response: Response) -> list[Action]:
        self.out = self.core.handle_response(sender, request, response, self.now)
        return self.out

    def append(self, *payloads: bytes) -> list[Action]:
        result = self.core.append(list(payloads), self.now)
        assert result.error == Errors.NONE, result
        self.out = result.actions
        return self.out

    # ------------------------------------------------------------------ reading actions
    def sent(self, kind: type | None = None, to: int | None = None) -> list[Send]:
        return [
            a
            for a in self.out
            if isinstance(a, Send)
            and (kind is None or isinstance(a.request, kind))
            and (to is None or a.destination == to)
        ]

    def request_to(self, to: int, kind: type) -> Request:
        sends = self.sent(kind, to)
        assert len(sends) == 1, f"expected one {kind.__name__} to {to}: {self.out}"
        return sends[0].request

    def response(self, request: Request | None = None) -> Response:
        replies = [
            a
            for a in self.out
            if isinstance(a, Respond) and (request is None or a.request is request)
        ]
        assert len(replies) == 1, f"expected one response: {self.out}"
        return replies[0].response

    def responses(self) -> list[Respond]:
        return [a for a in self.out if isinstance(a, Respond)]

    def commits(self) -> list[int]:
        return [a.high_watermark for a in self.out if isinstance(a, CommitTo)]

    def leader_changes(self) -> list[tuple[int, int]]:
        return [(a.leader_id, a.epoch) for a in self.out if isinstance(a, LeaderChanged)]

    @property
    def role(self) -> str:
        return self.core.role.name

    @property
    def persisted(self) -> ElectionState | None:
        return self.store.state


def vote_request(
    candidate: int,
    epoch: int,
    last_epoch: int = 0,
    last_offset: int = 0,
    *,
    pre_vote: bool = False,
    voter_id: int = -1,
    cluster_id: str | None = CLUSTER,
) -> VoteRequest:
    return VoteRequest(cluster_id, candidate, epoch, last_epoch, last_offset, pre_vote, voter_id)


def fetch_request(
    replica: int,
    epoch: int,
    offset: int,
    last_epoch: int,
    *,
    max_wait_ms: int = 500,
    max_bytes: int = 1 << 20,
) -> FetchRequest:
    return FetchRequest(CLUSTER, replica, epoch, offset, last_epoch, max_wait_ms, max_bytes)


def grant(node: Node, voter: int, request: Request) -> list[Action]:
    assert isinstance(request, VoteRequest)
    return node.answer(voter, request, VoteResponse(Errors.NONE, -1, request.replica_epoch, True))


def elect(node: Node) -> Leader:
    """Make ``node`` (a voter of a fresh cluster) leader: its election timer expires, the
    other voters grant its pre-vote and then its vote."""
    others = [v for v in node.voters if v != node.node_id]
    majority = len(node.voters) // 2  # besides itself
    node.advance(2 * node.config.election_timeout_ms)
    assert node.role == "Prospective", node.core.role
    pre_votes = {v: node.request_to(v, VoteRequest) for v in others}
    for voter in others[:majority]:
        grant(node, voter, pre_votes[voter])
    assert node.role == "Candidate", node.core.role
    votes = {v: node.request_to(v, VoteRequest) for v in others}
    for voter in others[:majority]:
        grant(node, voter, votes[voter])
    assert node.role == "Leader", node.core.role
    leader = node.core.role
    assert isinstance(leader, Leader)
    return leader


def fetch_at(
    node: Node, replica: int, offset: int, last_epoch: int, max_bytes: int = 1 << 20
) -> FetchResponse:
    """A replica fetches from ``node`` without waiting; returns the response."""
    request = fetch_request(
        replica, node.core.epoch, offset, last_epoch, max_wait_ms=0, max_bytes=max_bytes
    )
    node.receive(replica, request)
    response = node.response(request)
    assert isinstance(response, FetchResponse)
    return response


def begin_epoch(leader: int, epoch: int) -> BeginQuorumEpochRequest:
    return BeginQuorumEpochRequest(CLUSTER, leader, epoch)


def payloads(*values: str) -> Sequence[bytes]:
    return [v.encode() for v in values]
