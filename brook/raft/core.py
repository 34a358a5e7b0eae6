"""``RaftCore``: one node of the metadata quorum as a pure state machine (Kafka's
KafkaRaftClient without its threads, network, clock or accumulator).

The shell owns everything with side effects outside the log and the state store: sockets,
timers, the append linger, applying committed records. It calls the core with the current
time and carries out the returned actions in order:

* ``poll(now)`` at or before ``next_poll_ms`` (timers: elections, fetch timeouts,
  check-quorum, retries, parked fetches that waited long enough);
* ``handle_request(sender, request, now)`` for every inbound RPC: the answer is a ``Respond``
  action, at once or, for a Fetch with nothing to return yet, later (parked until the log end
  passes its offset or its MaxWaitMs expires);
* ``handle_response(sender, request, response, now)`` / ``handle_send_failure(...)`` for the
  outcome of a ``Send``;
* ``append(payloads, now)`` on the leader, ``resign(now)``, ``shutdown(now, timeout_ms)``,
  ``create_snapshot(...)`` / ``delete_log_before_snapshot()``.

Every call ends the way KafkaRaftClient's poll loop does after each message: the current role
is polled at once, so a node that just became Candidate has its Vote requests in the same list.
Election state is written through the store before the call returns; the log is flushed by
the core itself where Kafka flushes (a voter's append, before its next Fetch says it has the
data; a leader's append, before it counts toward the high watermark).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from .actions import (
    Action,
    AppendResult,
    CommitTo,
    LeaderChanged,
    Respond,
    Send,
    ShutdownComplete,
)
from .config import ELECTION_BACKOFF_BASE_MS, RaftConfig
from .follower import Follower
from .leader import Leader
from .log import (
    LeaderChangeRecord,
    RaftLog,
)
from .messages import (
    INVALID_VOTER_KEY,
    METADATA_PARTITION,
    METADATA_TOPIC,
    NO_LEADER,
    NO_VOTER,
    UNKNOWN_HIGH_WATERMARK,
    BeginQuorumEpochRequest,
    BeginQuorumEpochResponse,
    EndQuorumEpochRequest,
    EndQuorumEpochResponse,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    OffsetAndEpoch,
    QuorumInfo,
    Request,
    Response,
    TopLevelError,
    VoteRequest,
    VoteResponse,
)
from .quorum_state import QuorumStateStore
from .request_manager import NEVER, RequestManager
from .roles import Candidate, Prospective, Resigned, Role, Unattached
from .state import QuorumState


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    """The leader this node knows (-1: none) in its current epoch."""

    leader_id: int
    epoch: int


def election_backoff_ms(retries: int, max_ms: int, rng: random.Random) -> int:
    """A Candidate's pause after losing: 100 ms times random[0, 2^retries), capped."""
    if retries <= 0:
        raise ValueError(f"retries must be positive, not {retries}")
    return min(ELECTION_BACKOFF_BASE_MS * rng.randrange(2 << min(20, retries - 1)), max_ms)


def end_epoch_backoff_ms(position: int, successors: int, max_ms: int) -> int:
    """How long a follower waits before its election after an EndQuorumEpoch that lists it at
    ``position`` of ``successors`` preferred candidates: 0 for the first, then doubling up to
    ``max_ms``; ``max_ms`` when it is not listed."""
    if position == 0:
        return 0
    if position < 0 or position >= successors:
        return max_ms
    return min(max_ms, (max_ms >> (successors - 1)) << (position - 1))


class RaftCore:
    def __init__(
        self,
        node_id: int,
        voters: Iterable[int],
        cluster_id: str,
        config: RaftConfig,
        log: RaftLog,
        store: QuorumStateStore,
        rng: random.Random,
        now_ms: int,
    ) -> None:
        self.node_id = node_id
        self.voters = tuple(sorted(set(voters)))
        if not self.voters:
            raise ValueError("a quorum needs at least one voter")
        self.cluster_id = cluster_id
        self.config = config
        self.log = log
        self._rng = rng
        self._quorum = QuorumState(node_id, self.voters, store, config, rng)
        self._requests = RequestManager(
            self.voters, config.retry_backoff_ms, config.request_timeout_ms, rng
        )
        self._shutdown_deadline: int | None = None
        self._shutdown_done = False
        self._notified: tuple[int, int] | None = None
        self.next_poll_ms = now_ms
        out: list[Action] = []
        self._quorum.initialize(log.last_fetched_epoch, now_ms)
        role = self._quorum.role
        if isinstance(role, Candidate):
            self._on_become_candidate(now_ms, out)
        if self._quorum.is_only_voter and not isinstance(self._quorum.role, Candidate | Leader):
            self._to_prospective(now_ms, out)
        self._pending = out

    # ------------------------------------------------------------------ what the node knows
    @property
    def role(self) -> Role:
        return self._quorum.role

    @property
    def epoch(self) -> int:
        return self._quorum.role.epoch

    @property
    def is_voter(self) -> bool:
        return self._quorum.is_voter

    @property
    def is_leader(self) -> bool:
        return isinstance(self._quorum.role, Leader)

    @property
    def high_watermark(self) -> int | None:
        return self._quorum.role.high_watermark

    @property
    def leader_and_epoch(self) -> LeaderAndEpoch:
        role = self._quorum.role
        return LeaderAndEpoch(role.leader_id, role.epoch)

    @property
    def shutdown_complete(self) -> bool:
        return self._shutdown_done

    def describe_quorum(self, now_ms: int) -> QuorumInfo:
        """DescribeQuorum: only the leader knows the replicas' progress."""
        role = self._quorum.role
        if not isinstance(role, Leader):
            return QuorumInfo(Errors.NOT_LEADER_OR_FOLLOWER)
        voters, observers = role.describe(now_ms)
        hw = UNKNOWN_HIGH_WATERMARK if role.high_watermark is None else role.high_watermark
        return QuorumInfo(Errors.NONE, self.node_id, role.epoch, hw, voters, observers)

    # ------------------------------------------------------------------ entry points
    def poll(self, now_ms: int) -> list[Action]:
        """Run the timers due at ``now_ms``; call it at ``next_poll_ms`` (first right after
        construction: a node's start-up may already have actions, e.g. a single voter's
        election)."""
        out = self._begin()
        self._finish(now_ms, out)
        return out

    def handle_request(self, sender: int, request: Request, now_ms: int) -> list[Action]:
        """An RPC from node ``sender``. Its answer is the ``Respond`` for this request object
        in the returned list; a Fetch with nothing to return yet has none (it is parked, and
        its ``Respond`` comes from a later call). After a completed shutdown nothing is
        answered."""
        out = self._begin()
        if not self._shutdown_done:
            response: Response | None
            if isinstance(request, FetchRequest):
                response = self._on_fetch(sender, request, now_ms, out)
            elif isinstance(request, VoteRequest):
                response = self._on_vote(request, now_ms, out)
            elif isinstance(request, BeginQuorumEpochRequest):
                response = self._on_begin_quorum_epoch(request, now_ms, out)
            elif isinstance(request, EndQuorumEpochRequest):
                response = self._on_end_quorum_epoch(request, now_ms, out)
            elif isinstance(request, FetchSnapshotRequest):
                response = self._on_fetch_snapshot(request, now_ms)
            else:
                raise TypeError(f"not a Raft request: {request!r}")
            if response is not None:
                out.append(Respond(sender, request, response))
        self._finish(now_ms, out)
        return out

    def handle_response(
        self, sender: int, request: Request, response: Response, now_ms: int
    ) -> list[Action]:
        """The answer to a ``Send``. Only the request still in flight to ``sender`` is
        handled: late, duplicated and superseded responses are dropped."""
        out = self._begin()
        if self._requests.is_expected(sender, request) and not self._shutdown_done:
            if isinstance(response, TopLevelError):
                ok = False  # BROKER_NOT_AVAILABLE or anything unexpected: back off
            elif isinstance(response, FetchResponse):
                ok = self._on_fetch_response(response, now_ms, out)
            elif isinstance(response, VoteResponse):
                ok = self._on_vote_response(sender, request, response, now_ms, out)
            elif isinstance(response, BeginQuorumEpochResponse):
                ok = self._on_begin_quorum_epoch_response(sender, response, now_ms, out)
            elif isinstance(response, EndQuorumEpochResponse):
                ok = self._on_end_quorum_epoch_response(sender, response, now_ms, out)
            elif isinstance(response, FetchSnapshotResponse):
                ok = self._on_fetch_snapshot_response(response, now_ms, out)
            else:
                raise TypeError(f"not a Raft response: {response!r}")
            self._requests.on_response(sender, request, ok, now_ms)
        self._finish(now_ms, out)
        return out

    def handle_send_failure(self, destination: int, request: Request, now_ms: int) -> list[Action]:
        """The request could not be sent or its connection broke: back off that destination."""
        out = self._begin()
        self._requests.on_response(destination, request, False, now_ms)
        self._finish(now_ms, out)
        return out

    def append(self, payloads: Sequence[bytes], now_ms: int) -> AppendResult:
        """Append one batch as leader; the shell's linger decides how records are batched."""
        out = self._begin()
        role = self._quorum.role
        if not isinstance(role, Leader) or self._shutdown_deadline is not None:
            self._finish(now_ms, out)
            return AppendResult(
                Errors.NOT_LEADER_OR_FOLLOWER,
                epoch=role.epoch,
                leader_id=role.leader_id if not isinstance(role, Resigned) else NO_LEADER,
                actions=out,
            )
        base, last = self.log.append_as_leader(payloads, role.epoch)
        self.log.flush()
        self._on_leader_log_grew(role, now_ms, out)
        self._finish(now_ms, out)
        return AppendResult(Errors.NONE, base, last, role.epoch, self.node_id, out)

    def on_flushed(self, now_ms: int) -> list[Action]:
        """The log was flushed by the shell (off the event loop): a leader's newly durable
        end may move the high watermark."""
        out = self._begin()
        role = self._quorum.role
        if isinstance(role, Leader):
            self._on_leader_log_grew(role, now_ms, out)
        self._finish(now_ms, out)
        return out

    def resign(self, now_ms: int) -> list[Action]:
        """Step down as leader of the current epoch (no-op on any other role)."""
        out = self._begin()
        role = self._quorum.role
        if isinstance(role, Leader):
            role.resign_requested = True
        self._finish(now_ms, out)
        return out

    def shutdown(self, now_ms: int, timeout_ms: int) -> list[Action]:
        """Graceful shutdown: a leader resigns and waits (Resigned) until another leader is
        elected; a follower is done at once. ``ShutdownComplete`` says when to stop."""
        out = self._begin()
        if self._shutdown_deadline is None:
            self._shutdown_deadline = now_ms + timeout_ms
        self._finish(now_ms, out)
        return out

    # ------------------------------------------------------------------ snapshots
    def create_snapshot(self, end_offset: int, content: bytes) -> OffsetAndEpoch:
        """Store the state machine's snapshot of every record below ``end_offset`` (committed,
        at a batch boundary); returns its id. ValueError if it cannot be taken there."""
        hw = self.high_watermark
        if not content:
            raise ValueError("a snapshot cannot be empty")
        if hw is None or end_offset > hw:
            raise ValueError(f"snapshot end {end_offset} is past the high watermark {hw}")
        log = self.log
        if end_offset <= log.start_offset:
            earliest = log.earliest_snapshot_id()
            if earliest is not None and earliest.offset == end_offset:
                return earliest
            raise ValueError(f"snapshot end {end_offset} is not past the log start")
        latest = log.latest_snapshot_id()
        if latest is not None and end_offset <= latest.offset:
            if latest.offset == end_offset:
                return latest
            raise ValueError(f"snapshot end {end_offset} is before the latest snapshot {latest}")
        snapshot_id = OffsetAndEpoch(end_offset, log.epoch_at(end_offset - 1))
        log.create_snapshot(snapshot_id, content)
        return snapshot_id

    def delete_log_before_snapshot(self) -> bool:
        """Drop the log below the latest snapshot; replicas behind it will fetch the snapshot."""
        latest = self.log.latest_snapshot_id()
        return latest is not None and self.log.delete_before_snapshot(latest)

    # ------------------------------------------------------------------ the loop
    def _begin(self) -> list[Action]:
        out, self._pending = self._pending, []
        return out

    def _finish(self, now: int, out: list[Action]) -> None:
        self._expire_parked(now, out)
        if self._maybe_complete_shutdown(now, out):
            self.next_poll_ms = NEVER
            return
        wake = self._poll_role(now, out)
        role = self._quorum.role
        if isinstance(role, Leader):
            for parked in role.parked:
                wake = min(wake, parked.deadline)
        if not isinstance(role, Resigned):
            seen = (role.leader_id, role.epoch)
            if seen != self._notified:
                self._notified = seen
                out.append(LeaderChanged(*seen))
        self.next_poll_ms = max(wake, now)

    def _maybe_complete_shutdown(self, now: int, out: list[Action]) -> bool:
        if self._shutdown_done:
            return True
        if self._shutdown_deadline is None:
            return False
        role = self._quorum.role
        if now >= self._shutdown_deadline:
            done, timed_out = True, True
        else:
            remote_leader = role.leader_id not in (NO_LEADER, self.node_id)
            done = not self.is_voter or self._quorum.is_only_voter or remote_leader
            timed_out = False
        if done:
            self._shutdown_done = True
            if isinstance(role, Leader):
                self._fail_parked(role, out)
            out.append(ShutdownComplete(timed_out))
        return done

    def _poll_role(self, now: int, out: list[Action]) -> int:
        for _ in range(8):
            role = self._quorum.role
            if isinstance(role, Leader):
                wake = self._poll_leader(role, now, out)
            elif isinstance(role, Candidate):
                wake = self._poll_candidate(role, now, out)
            elif isinstance(role, Prospective):
                wake = self._poll_prospective(role, now, out)
            elif isinstance(role, Follower):
                wake = self._poll_follower(role, now, out)
            elif isinstance(role, Unattached):
                wake = self._poll_unattached(role, now, out)
            elif isinstance(role, Resigned):
                wake = self._poll_resigned(role, now, out)
            else:
                raise AssertionError(f"unknown role {role!r}")
            if self._quorum.role is role:
                return wake
        raise AssertionError(f"the role did not settle: {self._quorum.role!r}")

    def _maybe_send(
        self, destination: int, now: int, build: Callable[[], Request], out: list[Action]
    ) -> int:
        """Send to ``destination`` if it is ready; returns when it is worth looking again."""
        requests = self._requests
        if requests.is_ready(destination, now):
            request = build()
            requests.on_request_sent(destination, request, now)
            out.append(Send(destination, request))
        return requests.next_ready_at(destination, now)

    # ------------------------------------------------------------------ polling each role
    def _poll_leader(self, leader: Leader, now: int, out: list[Action]) -> int:
        if (
            self._shutdown_deadline is not None
            or leader.resign_requested
            or now >= leader.check_quorum_expires_at()
        ):
            self._to_resigned(leader, now, out)
            return now
        if now >= leader.begin_epoch_deadline:
            for voter in leader.non_acknowledging_voters():
                self._maybe_send(voter, now, self._begin_epoch_builder(leader, voter), out)
            leader.begin_epoch_deadline = now + self.config.begin_quorum_epoch_interval_ms
        return min(leader.begin_epoch_deadline, leader.check_quorum_expires_at())

    def _begin_epoch_builder(self, leader: Leader, voter: int) -> Callable[[], Request]:
        return lambda: BeginQuorumEpochRequest(self.cluster_id, self.node_id, leader.epoch, voter)

    def _poll_resigned(self, role: Resigned, now: int, out: list[Action]) -> int:
        wake = NEVER
        request = EndQuorumEpochRequest(
            self.cluster_id, self.node_id, role.epoch, role.preferred_successors
        )
        for voter in sorted(role.unacked):
            wake = min(wake, self._maybe_send(voter, now, lambda r=request: r, out))
        if self._shutdown_deadline is not None:
            return min(wake, self._shutdown_deadline)
        if now >= role.election_deadline:
            # the next epoch, with no leader: an election can now take place (Kafka 4.0)
            self._to_unattached(role.epoch + 1, now, out)
            return now
        return min(wake, role.election_deadline)

    def _poll_candidate(self, role: Candidate, now: int, out: list[Action]) -> int:
        if self._shutdown_deadline is not None:
            return min(self._send_votes(role, False, now, out), self._shutdown_deadline)
        if role.backoff_until is not None:
            if now >= role.backoff_until:
                self._to_prospective(now, out)
                return now
            return role.backoff_until
        if now >= role.election_deadline:
            role.backoff_until = now + self._backoff(role.retries)
            return role.backoff_until
        return min(self._send_votes(role, False, now, out), role.election_deadline)

    def _poll_prospective(self, role: Prospective, now: int, out: list[Action]) -> int:
        if self._shutdown_deadline is not None:
            return min(self._send_votes(role, True, now, out), self._shutdown_deadline)
        if now >= role.election_deadline:
            self._prospective_lost(role, now, out)
            return now
        return min(self._send_votes(role, True, now, out), role.election_deadline)

    def _send_votes(
        self, role: Candidate | Prospective, pre_vote: bool, now: int, out: list[Action]
    ) -> int:
        election = role.election_round
        if election.is_rejected:
            return NEVER
        log = self.log
        last_epoch, end = log.last_fetched_epoch, log.end_offset
        wake = NEVER
        for voter in election.unrecorded():
            request = VoteRequest(
                self.cluster_id, self.node_id, role.epoch, last_epoch, end, pre_vote, voter
            )
            wake = min(wake, self._maybe_send(voter, now, lambda r=request: r, out))
        return wake

    def _poll_follower(self, role: Follower, now: int, out: list[Action]) -> int:
        if self.is_voter:
            if now >= role.fetch_deadline:
                self._to_prospective(now, out)
                return now
            return self._fetch_from_leader(role, now, out)
        if now >= role.fetch_deadline:
            return self._fetch_from_any_voter(now, out)
        return self._fetch_from_leader(role, now, out)

    def _poll_unattached(self, role: Unattached, now: int, out: list[Action]) -> int:
        if self.is_voter:
            if self._shutdown_deadline is not None:
                return self._shutdown_deadline
            if now >= role.election_deadline:
                self._to_prospective(now, out)
                return now
        return min(self._fetch_from_any_voter(now, out), role.election_deadline)

    def _fetch_from_leader(self, role: Follower, now: int, out: list[Action]) -> int:
        """Fetch from the leader; if it stopped answering (timed out, backing off), ask any
        voter instead, which will name the new leader if there is one."""
        requests = self._requests
        leader = role.leader_id
        if requests.has_request_timed_out(leader, now):
            requests.reset(leader)
            wake = self._fetch_from_any_voter(now, out)
        elif requests.is_backing_off(leader, now):
            wake = self._fetch_from_any_voter(now, out)
        elif not requests.has_any_inflight(now):
            wake = self._maybe_send(leader, now, lambda: self._fetch_request(role), out)
        else:
            wake = requests.backoff_before_available_bootstrap(now, self.node_id)
        return min(wake, role.fetch_deadline)

    def _fetch_from_any_voter(self, now: int, out: list[Action]) -> int:
        requests = self._requests
        node = requests.find_ready_bootstrap(now, self.node_id)
        if node is None:
            return requests.backoff_before_available_bootstrap(now, self.node_id)
        return self._maybe_send(node, now, lambda: self._fetch_request(self._quorum.role), out)

    def _fetch_request(self, role: Role) -> Request:
        if isinstance(role, Follower) and role.fetching_snapshot is not None:
            return FetchSnapshotRequest(
                self.cluster_id,
                self.node_id,
                role.epoch,
                role.fetching_snapshot,
                role.snapshot_position,
                self.config.fetch_max_bytes,
            )
        log = self.log
        return FetchRequest(
            self.cluster_id,
            self.node_id,
            role.epoch,
            log.end_offset,
            log.last_fetched_epoch,
            self.config.fetch_max_wait_ms,
            self.config.fetch_max_bytes,
        )

    def _backoff(self, retries: int) -> int:
        return election_backoff_ms(retries, self.config.election_backoff_max_ms, self._rng)

    # ------------------------------------------------------------------ transitions
    def _left(self, old: Role, out: list[Action]) -> None:
        self._requests.reset_all()
        if isinstance(old, Leader):
            self._fail_parked(old, out)

    def _to_unattached(self, epoch: int, now: int, out: list[Action]) -> None:
        old = self._quorum.role
        self._quorum.to_unattached(epoch, now)
        self._left(old, out)

    def _to_follower(self, epoch: int, leader_id: int, now: int, out: list[Action]) -> None:
        old = self._quorum.role
        self._quorum.to_follower(epoch, leader_id, now)
        self._left(old, out)

    def _to_prospective(self, now: int, out: list[Action]) -> None:
        self._quorum.to_prospective(now)
        self._requests.reset_all()
        role = self._quorum.role
        if isinstance(role, Prospective) and role.election_round.is_granted:
            self._to_candidate(now, out)

    def _to_candidate(self, now: int, out: list[Action]) -> None:
        self._quorum.to_candidate(now)
        self._on_become_candidate(now, out)

    def _on_become_candidate(self, now: int, out: list[Action]) -> None:
        self._requests.reset_all()
        role = self._quorum.role
        if isinstance(role, Candidate) and role.election_round.is_granted:
            self._become_leader(now, out)

    def _prospective_lost(self, role: Prospective, now: int, out: list[Action]) -> None:
        if role.leader_id not in (NO_LEADER, self.node_id):
            self._to_follower(role.epoch, role.leader_id, now, out)
        else:
            self._to_unattached(role.epoch, now, out)

    def _become_leader(self, now: int, out: list[Action]) -> None:
        log = self.log
        leader = self._quorum.to_leader(log.end_offset, now)
        self._requests.reset_all()
        log.initialize_leader_epoch(leader.epoch)
        # the high watermark can only pass the epoch's start once a record of this epoch is
        # on a majority, so the leader writes one at once
        log.append_leader_change(
            LeaderChangeRecord(self.node_id, self.voters, leader.granting_voters), leader.epoch
        )
        log.flush()
        self._on_leader_log_grew(leader, now, out)

    def _to_resigned(self, leader: Leader, now: int, out: list[Action]) -> None:
        self._quorum.to_resigned(leader.voters_by_descending_end(), now)
        self._left(leader, out)

    def _maybe_transition(self, leader_id: int, epoch: int, now: int, out: list[Action]) -> None:
        """A request or response named ``leader_id`` (-1: none) in ``epoch``."""
        role = self._quorum.role
        if leader_id == self.node_id and leader_id != NO_LEADER:
            consistent = isinstance(role, Leader) or epoch != role.epoch
        else:
            consistent = (
                epoch != role.epoch
                or leader_id == NO_LEADER
                or role.leader_id == NO_LEADER
                or leader_id == role.leader_id
            )
        if not consistent:
            raise AssertionError(
                f"leader {leader_id} in epoch {epoch} contradicts {role!r} of node {self.node_id}"
            )
        if epoch > role.epoch:
            if leader_id != NO_LEADER and leader_id != self.node_id:
                self._to_follower(epoch, leader_id, now, out)
            else:
                self._to_unattached(epoch, now, out)
        elif leader_id not in (NO_LEADER, self.node_id) and role.leader_id == NO_LEADER:
            self._to_follower(epoch, leader_id, now, out)

    # ------------------------------------------------------------------ parked fetches
    def _on_leader_log_grew(self, leader: Leader, now: int, out: list[Action]) -> None:
        if leader.update_local_end(self.log.flushed_offset):
            self._high_watermark_moved(leader, now, out)
        for parked in leader.take_ready(self.log.end_offset):
            response = self._try_complete_fetch(parked.request, now, out)
            out.append(Respond(parked.sender, parked.request, response))

    def _expire_parked(self, now: int, out: list[Action]) -> None:
        role = self._quorum.role
        if isinstance(role, Leader) and role.parked:
            for parked in role.take_expired(now):
                out.append(Respond(parked.sender, parked.request, parked.response))

    def _fail_parked(self, leader: Leader, out: list[Action]) -> None:
        """No longer leader: every parked fetch is answered now with the error it earns."""
        role = self._quorum.role
        for p in leader.take_all_parked():
            error = self._leader_only_error(p.request.current_leader_epoch)
            response = FetchResponse(
                error or Errors.NOT_LEADER_OR_FOLLOWER,
                role.leader_id,
                role.epoch,
                log_start_offset=self.log.start_offset,
            )
            out.append(Respond(p.sender, p.request, response))

    # ------------------------------------------------------------------ request checks
    def _bad_target(self, cluster_id: str | None, topic: str, partition: int) -> Response | None:
        if cluster_id is not None and cluster_id != self.cluster_id:
            return TopLevelError(Errors.INCONSISTENT_CLUSTER_ID)
        if topic != METADATA_TOPIC or partition != METADATA_PARTITION:
            return TopLevelError(Errors.INVALID_REQUEST)
        return None

    def _voter_only_error(self, remote_id: int, epoch: int) -> int:
        """Vote, BeginQuorumEpoch, EndQuorumEpoch: a stale epoch is fenced."""
        if epoch < self._quorum.epoch:
            return Errors.FENCED_LEADER_EPOCH
        if remote_id < 0:
            return Errors.INVALID_REQUEST
        return Errors.NONE

    def _leader_only_error(self, epoch: int) -> int:
        """Fetch, FetchSnapshot: only the leader of exactly this epoch answers."""
        role = self._quorum.role
        if epoch < role.epoch:
            return Errors.FENCED_LEADER_EPOCH
        if epoch > role.epoch:
            return Errors.UNKNOWN_LEADER_EPOCH
        if not isinstance(role, Leader):
            return Errors.NOT_LEADER_OR_FOLLOWER
        if self._shutdown_deadline is not None:
            return Errors.BROKER_NOT_AVAILABLE
        return Errors.NONE

    # ------------------------------------------------------------------ Vote
    def _on_vote(self, request: VoteRequest, now: int, out: list[Action]) -> Response:
        refused = self._bad_target(request.cluster_id, request.topic, request.partition)
        if refused is not None:
            return refused
        last_epoch, replica_epoch = request.last_offset_epoch, request.replica_epoch
        # a candidate bumped its epoch past its log's; a pre-vote asks in its current epoch
        illegal = last_epoch > replica_epoch if request.pre_vote else last_epoch >= replica_epoch
        if request.last_offset < 0 or last_epoch < 0 or illegal:
            return self._vote_response(Errors.INVALID_REQUEST, False)
        error = self._voter_only_error(request.replica_id, replica_epoch)
        if error:
            return self._vote_response(error, False)
        if replica_epoch > self._quorum.epoch:
            self._to_unattached(replica_epoch, now, out)
        if request.voter_id != NO_VOTER and request.voter_id != self.node_id:
            return self._vote_response(INVALID_VOTER_KEY, False)
        log = self.log
        up_to_date = OffsetAndEpoch(request.last_offset, last_epoch) >= OffsetAndEpoch(
            log.end_offset, log.last_fetched_epoch
        )
        role = self._quorum.role
        granted = role.can_grant_vote(request.replica_id, up_to_date, request.pre_vote)
        if granted and not request.pre_vote and role.voted_id == -1:
            if type(role) is Unattached:
                self._quorum.unattached_add_vote(request.replica_id, now)
            elif isinstance(role, Prospective):
                self._quorum.prospective_add_vote(request.replica_id, now)
        return self._vote_response(Errors.NONE, granted)

    def _vote_response(self, error: int, granted: bool) -> VoteResponse:
        role = self._quorum.role
        return VoteResponse(error, role.leader_id, role.epoch, granted)

    def _on_vote_response(
        self, sender: int, request: Request, response: VoteResponse, now: int, out: list[Action]
    ) -> bool:
        handled = self._common_response(
            response.error, response.leader_id, response.leader_epoch, now, out
        )
        if handled is not None:
            return handled
        if response.error != Errors.NONE:
            return False
        role = self._quorum.role
        pre_vote = isinstance(request, VoteRequest) and request.pre_vote
        if isinstance(role, Prospective) and pre_vote:
            if response.vote_granted:
                role.election_round.record_granted(sender)
                if role.election_round.is_granted:
                    self._to_candidate(now, out)
            else:
                role.election_round.record_rejected(sender)
                if role.election_round.is_rejected:
                    self._prospective_lost(role, now, out)
        elif isinstance(role, Candidate) and not pre_vote:
            if response.vote_granted:
                role.election_round.record_granted(sender)
                if role.election_round.is_granted:
                    self._become_leader(now, out)
            else:
                role.election_round.record_rejected(sender)
                # a lost election backs off at once instead of waiting for its timeout
                if role.election_round.is_rejected and role.backoff_until is None:
                    role.backoff_until = now + self._backoff(role.retries)
        return True

    # ------------------------------------------------------------------ BeginQuorumEpoch
    def _on_begin_quorum_epoch(
        self, request: BeginQuorumEpochRequest, now: int, out: list[Action]
    ) -> Response:
        refused = self._bad_target(request.cluster_id, request.topic, request.partition)
        if refused is not None:
            return refused
        error = self._voter_only_error(request.leader_id, request.leader_epoch)
        if not error:
            self._maybe_transition(request.leader_id, request.leader_epoch, now, out)
            if request.voter_id != NO_VOTER and request.voter_id != self.node_id:
                error = INVALID_VOTER_KEY
        role = self._quorum.role
        return BeginQuorumEpochResponse(error, role.leader_id, role.epoch)

    def _on_begin_quorum_epoch_response(
        self, sender: int, response: BeginQuorumEpochResponse, now: int, out: list[Action]
    ) -> bool:
        handled = self._common_response(
            response.error, response.leader_id, response.leader_epoch, now, out
        )
        if handled is not None:
            return handled
        if response.error != Errors.NONE:
            return False
        role = self._quorum.role
        if isinstance(role, Leader):
            role.acknowledge(sender)
        return True

    # ------------------------------------------------------------------ EndQuorumEpoch
    def _on_end_quorum_epoch(
        self, request: EndQuorumEpochRequest, now: int, out: list[Action]
    ) -> Response:
        refused = self._bad_target(request.cluster_id, request.topic, request.partition)
        if refused is not None:
            return refused
        error = self._voter_only_error(request.leader_id, request.leader_epoch)
        if not error:
            self._maybe_transition(request.leader_id, request.leader_epoch, now, out)
            role = self._quorum.role
            if isinstance(role, Follower) and role.leader_id == request.leader_id:
                successors = request.preferred_candidates
                position = (
                    successors.index(self.node_id)
                    if self.node_id in successors
                    else len(successors)
                )
                backoff = end_epoch_backoff_ms(
                    position, len(successors), self.config.election_backoff_max_ms
                )
                role.fetch_deadline = now + backoff
        role = self._quorum.role
        return EndQuorumEpochResponse(error, role.leader_id, role.epoch)

    def _on_end_quorum_epoch_response(
        self, sender: int, response: EndQuorumEpochResponse, now: int, out: list[Action]
    ) -> bool:
        handled = self._common_response(
            response.error, response.leader_id, response.leader_epoch, now, out
        )
        if handled is not None:
            return handled
        if response.error != Errors.NONE:
            return False
        role = self._quorum.role
        if isinstance(role, Resigned):
            role.unacked.discard(sender)
        return True

    # ------------------------------------------------------------------ Fetch (leader)
    def _on_fetch(
        self, sender: int, request: FetchRequest, now: int, out: list[Action]
    ) -> Response | None:
        refused = self._bad_target(request.cluster_id, request.topic, request.partition)
        if refused is not None:
            return refused
        if (
            request.max_wait_ms < 0
            or request.fetch_offset < 0
            or request.last_fetched_epoch < 0
            or request.last_fetched_epoch > request.current_leader_epoch
        ):
            role = self._quorum.role
            return FetchResponse(
                Errors.INVALID_REQUEST,
                role.leader_id,
                role.epoch,
                log_start_offset=self.log.start_offset,
            )
        before = self._quorum.role
        told = (
            before.hw_sent.get(sender, UNKNOWN_HIGH_WATERMARK) if isinstance(before, Leader) else 0
        )
        response = self._try_complete_fetch(request, now, out)
        role = self._quorum.role
        if (
            response.error != Errors.NONE
            or response.records
            or request.max_wait_ms == 0
            or response.diverging_epoch is not None
            or response.snapshot_id is not None
            or not isinstance(role, Leader)
            # the replica does not know the current high watermark yet: tell it now
            or response.high_watermark > told
        ):
            return response
        role.park(sender, request, now, response)
        return None

    def _try_complete_fetch(
        self, request: FetchRequest, now: int, out: list[Action]
    ) -> FetchResponse:
        role = self._quorum.role
        error = self._leader_only_error(request.current_leader_epoch)
        if error or not isinstance(role, Leader):
            return FetchResponse(
                error, role.leader_id, role.epoch, log_start_offset=self.log.start_offset
            )
        response, moved = role.serve_fetch(self.log, request, now)
        if moved:
            self._high_watermark_moved(role, now, out)
        return response

    def _high_watermark_moved(self, leader: Leader, now: int, out: list[Action]) -> None:
        """Commit, and answer the parked fetches at once with the new high watermark: the
        replicas learn it now rather than after their MaxWaitMs (Kafka 4.1 does the same
        with Fetch v18's HighWatermark), so a record committed on the leader is applied on
        every node within a round trip."""
        out.append(CommitTo(leader.high_watermark))  # type: ignore[arg-type]
        for parked in leader.take_all_parked():
            response = self._try_complete_fetch(parked.request, now, out)
            out.append(Respond(parked.sender, parked.request, response))

    # ------------------------------------------------------------------ Fetch (follower)
    def _on_fetch_response(self, response: FetchResponse, now: int, out: list[Action]) -> bool:
        handled = self._common_response(
            response.error, response.leader_id, response.leader_epoch, now, out
        )
        if handled is not None:
            return handled
        if response.error != Errors.NONE:
            return False
        role = self._quorum.role
        if not isinstance(role, Follower):
            raise AssertionError(f"a fetch response reached node {self.node_id} as {role!r}")
        if not role.apply_fetch(self.node_id, self.log, response, self.is_voter, out):
            return False
        role.good_fetch(now, self.config.follower_fetch_timeout_ms(self._rng))
        return True

    # ------------------------------------------------------------------ FetchSnapshot
    def _on_fetch_snapshot(self, request: FetchSnapshotRequest, now: int) -> Response:
        refused = self._bad_target(request.cluster_id, request.topic, request.partition)
        if refused is not None:
            return refused
        role = self._quorum.role
        error = self._leader_only_error(request.current_leader_epoch)
        if error:
            return FetchSnapshotResponse(error, role.leader_id, role.epoch)
        if not isinstance(role, Leader):
            raise AssertionError(f"node {self.node_id} serves a snapshot as {role!r}")
        return role.serve_fetch_snapshot(self.log, request, now)

    def _on_fetch_snapshot_response(
        self, response: FetchSnapshotResponse, now: int, out: list[Action]
    ) -> bool:
        handled = self._common_response(
            response.error, response.leader_id, response.leader_epoch, now, out
        )
        if handled is not None:
            return handled
        role = self._quorum.role
        if not isinstance(role, Follower):
            raise AssertionError(f"a snapshot response reached node {self.node_id} as {role!r}")
        role.apply_snapshot_chunk(self.log, response, out)
        role.fetch_deadline = now + self.config.follower_fetch_timeout_ms(self._rng)
        return True

    # ------------------------------------------------------------------ any response
    def _common_response(
        self, error: int, leader_id: int, epoch: int, now: int, out: list[Action]
    ) -> bool | None:
        """What every response shares (Kafka's maybeHandleCommonResponse): a stale epoch is
        ignored, a newer one adopted, a leader of our epoch we did not know is followed. None
        when the response is left to its own handler."""
        current = self._quorum.epoch
        if epoch < current or error == Errors.UNKNOWN_LEADER_EPOCH:
            return True
        if (
            epoch > current
            or error == Errors.FENCED_LEADER_EPOCH
            or error == Errors.NOT_LEADER_OR_FOLLOWER
        ):
            before = (current, self._quorum.role.leader_id)
            self._maybe_transition(leader_id, epoch, now, out)
            # A refusal that taught this node nothing (the peer knows no leader either) is a
            # failure for the request manager: ask again after the retry backoff, not at once,
            # which on loopback would be thousands of requests a second.
            return (self._quorum.epoch, self._quorum.role.leader_id) != before
        if leader_id not in (NO_LEADER, self.node_id) and self._quorum.role.leader_id == NO_LEADER:
            # an observer learns the leader here and may append from this very response
            self._to_follower(epoch, leader_id, now, out)
            return None if error == Errors.NONE else True
        if error == Errors.BROKER_NOT_AVAILABLE:
            return False
        if error == INVALID_VOTER_KEY:
            return True
        if error == Errors.INVALID_REQUEST:
            raise AssertionError(f"node {self.node_id} sent a request its peer found invalid")
        return None
