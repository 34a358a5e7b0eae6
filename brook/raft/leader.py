"""The Leader role (Kafka's LeaderState): every replica's fetch position and the high
watermark they add up to (KIP-595's rule), the fetches parked until there is data,
BeginQuorumEpoch until each voter acknowledges, check-quorum, and what the leader serves:
Fetch (records, a DivergingEpoch, or a SnapshotId) and FetchSnapshot chunks. The epochs of a
request are checked by the core before it gets here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .config import OBSERVER_SESSION_TIMEOUT_MS
from .log import Position, RaftLog, validate_offset_and_epoch
from .messages import (
    BOOTSTRAP_SNAPSHOT_ID,
    UNKNOWN_HIGH_WATERMARK,
    Errors,
    FetchRequest,
    FetchResponse,
    FetchSnapshotRequest,
    FetchSnapshotResponse,
    ReplicaInfo,
)
from .request_manager import NEVER
from .roles import Role


@dataclass(slots=True)
class ParkedFetch:
    """A Fetch with nothing to return yet: answered when the log end passes its offset, or
    with ``response`` (what it would have got when it came) at ``deadline``."""

    sender: int
    request: FetchRequest
    deadline: int
    response: FetchResponse


class ReplicaState:
    """The leader's view of one replica (voter or observer): the end offset it last fetched
    from, and the timestamps DescribeQuorum reports."""

    __slots__ = (
        "acknowledged",
        "end_offset",
        "last_caught_up_ms",
        "last_fetch_leader_end",
        "last_fetch_ms",
        "replica_id",
    )

    def __init__(self, replica_id: int, acknowledged: bool = False) -> None:
        self.replica_id = replica_id
        self.end_offset: int | None = None
        self.last_fetch_ms = -1
        self.last_fetch_leader_end = -1
        self.last_caught_up_ms = -1
        self.acknowledged = acknowledged

    def update_follower(self, now: int, fetch_offset: int, leader_end: int | None) -> None:
        if leader_end is not None:
            if fetch_offset >= leader_end:
                self.last_caught_up_ms = max(self.last_caught_up_ms, now)
            elif 0 < self.last_fetch_leader_end <= fetch_offset:
                # caught up with where the leader was at the previous fetch
                self.last_caught_up_ms = max(self.last_caught_up_ms, self.last_fetch_ms)
            self.last_fetch_leader_end = leader_end
        self.last_fetch_ms = max(self.last_fetch_ms, now)
        self.end_offset = fetch_offset
        self.acknowledged = True

    def info(self, leader_id: int, now: int) -> ReplicaInfo:
        end = -1 if self.end_offset is None else self.end_offset
        if self.replica_id == leader_id:
            return ReplicaInfo(self.replica_id, end, now, now)
        return ReplicaInfo(self.replica_id, end, self.last_fetch_ms, self.last_caught_up_ms)


class Leader(Role):
    """The elected leader: tracks every replica's fetch position, moves the high watermark
    (KIP-595's rule), re-sends BeginQuorumEpoch to voters that have not acknowledged it, and
    resigns when a majority of voters stops fetching (check-quorum)."""

    name = "Leader"
    __slots__ = (
        "begin_epoch_deadline",
        "check_quorum_deadline",
        "check_quorum_timeout_ms",
        "epoch",
        "epoch_start_offset",
        "fetched_voters",
        "granting_voters",
        "high_watermark",
        "hw_sent",
        "local_id",
        "observer_states",
        "parked",
        "resign_requested",
        "voter_states",
    )

    def __init__(
        self,
        epoch: int,
        local_id: int,
        epoch_start_offset: int,
        voters: tuple[int, ...],
        granting_voters: Iterable[int],
        check_quorum_timeout_ms: int,
        now: int,
    ) -> None:
        self.epoch = epoch
        self.local_id = local_id
        self.epoch_start_offset = epoch_start_offset
        self.granting_voters = tuple(sorted(granting_voters))
        self.voter_states = {v: ReplicaState(v, acknowledged=v == local_id) for v in voters}
        self.observer_states: dict[int, ReplicaState] = {}
        self.high_watermark: int | None = None  # a new leader knows none (see update_hw)
        self.check_quorum_timeout_ms = check_quorum_timeout_ms
        self.check_quorum_deadline = now + check_quorum_timeout_ms
        self.fetched_voters: set[int] = set()
        self.begin_epoch_deadline = now
        self.resign_requested = False
        self.parked: list[ParkedFetch] = []
        # the high watermark each replica was last told: a fetch from a replica that does
        # not know the current one is answered at once rather than parked
        self.hw_sent: dict[int, int] = {}

    @property
    def leader_id(self) -> int:
        return self.local_id

    # ------------------------------------------------------------------ high watermark
    def update_local_end(self, end_offset: int) -> bool:
        """The leader's own (flushed) log end moved; True if the high watermark moved."""
        state = self.voter_states.get(self.local_id)
        if state is None:
            state = self.observer_states.setdefault(self.local_id, ReplicaState(self.local_id))
        if state.end_offset is not None and end_offset < state.end_offset:
            raise AssertionError(
                f"leader end offset moved back: {state.end_offset} -> {end_offset}"
            )
        state.end_offset = end_offset
        return self._update_high_watermark()

    def update_replica(self, replica_id: int, now: int, fetch_offset: int) -> bool:
        """A replica fetched from ``fetch_offset`` (its log end); True if the HW moved."""
        if replica_id < 0:
            return False
        if replica_id == self.local_id:
            raise AssertionError(f"replica {replica_id} fetched from itself")
        state = self.voter_states.get(replica_id)
        is_voter = state is not None
        if state is None:
            state = self.observer_states.get(replica_id)
            if state is None:
                state = self.observer_states[replica_id] = ReplicaState(replica_id)
        local = self.voter_states.get(self.local_id)
        state.update_follower(now, fetch_offset, None if local is None else local.end_offset)
        self.update_check_quorum(replica_id, now)
        return is_voter and self._update_high_watermark()

    def _update_high_watermark(self) -> bool:
        """KIP-595: the ``n // 2``-th largest voter end offset (the leader's included), once it
        is past the epoch's start offset, so a new leader only exposes a high watermark after a
        majority holds an entry of its own epoch; never moves back."""
        ends = sorted(
            (s.end_offset for s in self.voter_states.values() if s.end_offset is not None),
            reverse=True,
        )
        index = len(self.voter_states) // 2
        if index >= len(ends):
            return False
        candidate = ends[index]
        if candidate <= self.epoch_start_offset:
            return False
        if self.high_watermark is not None and candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    # ------------------------------------------------------------------ liveness of the quorum
    def update_check_quorum(self, replica_id: int, now: int) -> None:
        """A voter fetched (Fetch or FetchSnapshot): once a majority (the leader counting
        itself) has, the check-quorum timer starts again."""
        if replica_id == self.local_id:
            raise AssertionError(f"replica {replica_id} fetched from itself")
        if replica_id in self.voter_states:
            self.fetched_voters.add(replica_id)
        majority = len(self.voter_states) // 2 + 1
        if self.local_id in self.voter_states:
            majority -= 1
        if len(self.fetched_voters) >= majority:
            self.fetched_voters.clear()
            self.check_quorum_deadline = now + self.check_quorum_timeout_ms

    def check_quorum_expires_at(self) -> int:
        if len(self.voter_states) == 1:
            return NEVER
        return self.check_quorum_deadline

    def acknowledge(self, voter: int) -> None:
        state = self.voter_states.get(voter)
        if state is not None:
            state.acknowledged = True

    def non_acknowledging_voters(self) -> list[int]:
        return sorted(v for v, s in self.voter_states.items() if not s.acknowledged)

    def voters_by_descending_end(self) -> tuple[int, ...]:
        """The other voters, the most caught up first (the preferred successors)."""
        others = [s for v, s in self.voter_states.items() if v != self.local_id]
        others.sort(key=lambda s: (s.end_offset is None, -(s.end_offset or 0), s.replica_id))
        return tuple(s.replica_id for s in others)

    def describe(self, now: int) -> tuple[tuple[ReplicaInfo, ...], tuple[ReplicaInfo, ...]]:
        """(voters, observers) for DescribeQuorum; observers silent for 5 minutes are dropped."""
        for replica_id in [
            r
            for r, s in self.observer_states.items()
            if now - s.last_fetch_ms >= OBSERVER_SESSION_TIMEOUT_MS and r != self.local_id
        ]:
            del self.observer_states[replica_id]
        voters = tuple(
            self.voter_states[v].info(self.local_id, now) for v in sorted(self.voter_states)
        )
        observers = tuple(
            self.observer_states[o].info(self.local_id, now) for o in sorted(self.observer_states)
        )
        return voters, observers

    # ------------------------------------------------------------------ serving fetches
    def serve_fetch(
        self, log: RaftLog, request: FetchRequest, now: int
    ) -> tuple[FetchResponse, bool]:
        """Answer a Fetch of this epoch: records from a valid position (recording it as the
        replica's), else where to truncate or which snapshot to fetch. Also returns whether
        the high watermark moved."""
        if request.replica_id == self.local_id:
            response = FetchResponse(
                Errors.UNKNOWN_SERVER_ERROR,
                self.local_id,
                self.epoch,
                log_start_offset=log.start_offset,
            )
            return response, False
        latest = log.latest_snapshot_id()
        if request.fetch_offset == 0 and latest is not None and latest != BOOTSTRAP_SNAPSHOT_ID:
            # an empty replica is better served by the snapshot than by the log
            kind, at = Position.SNAPSHOT, latest
        else:
            position = validate_offset_and_epoch(
                log, request.fetch_offset, request.last_fetched_epoch
            )
            kind, at = position.kind, position.at
        records: Sequence[object] = ()
        moved = False
        if kind is Position.VALID:
            records = log.read(request.fetch_offset, request.max_bytes)
            moved = self.update_replica(request.replica_id, now, request.fetch_offset)
        hw = UNKNOWN_HIGH_WATERMARK if self.high_watermark is None else self.high_watermark
        self.hw_sent[request.replica_id] = hw
        response = FetchResponse(
            Errors.NONE,
            self.local_id,
            self.epoch,
            hw,
            log.start_offset,
            at if kind is Position.DIVERGING else None,
            at if kind is Position.SNAPSHOT else None,
            records,
        )
        return response, moved

    def park(self, sender: int, request: FetchRequest, now: int, response: FetchResponse) -> None:
        self.parked.append(ParkedFetch(sender, request, now + request.max_wait_ms, response))

    def take_ready(self, end_offset: int) -> list[ParkedFetch]:
        """The parked fetches the log end has now passed."""
        ready = [p for p in self.parked if p.request.fetch_offset < end_offset]
        if ready:
            self.parked = [p for p in self.parked if p.request.fetch_offset >= end_offset]
        return ready

    def take_expired(self, now: int) -> list[ParkedFetch]:
        expired = [p for p in self.parked if p.deadline <= now]
        if expired:
            self.parked = [p for p in self.parked if p.deadline > now]
        return expired

    def take_all_parked(self) -> list[ParkedFetch]:
        parked, self.parked = self.parked, []
        return parked

    def serve_fetch_snapshot(
        self, log: RaftLog, request: FetchSnapshotRequest, now: int
    ) -> FetchSnapshotResponse:
        """One chunk of a snapshot this leader holds (never the bootstrap one)."""
        snapshot_id = request.snapshot_id
        size = log.snapshot_size(snapshot_id)
        if size is None or snapshot_id == BOOTSTRAP_SNAPSHOT_ID:
            return FetchSnapshotResponse(Errors.SNAPSHOT_NOT_FOUND, self.local_id, self.epoch)
        if request.position < 0 or request.position >= size:
            return FetchSnapshotResponse(Errors.POSITION_OUT_OF_RANGE, self.local_id, self.epoch)
        data = log.read_snapshot(snapshot_id, request.position, min(request.max_bytes, size))
        if request.replica_id != self.local_id:
            self.update_check_quorum(request.replica_id, now)
        return FetchSnapshotResponse(
            Errors.NONE, self.local_id, self.epoch, snapshot_id, size, request.position, data
        )
