"""What a partition leader decides, as a pure state machine under a clock passed in: the
followers' positions, the high watermark, and ISR changes (Kafka's Partition.scala, leader
half).

Nothing here does I/O or knows asyncio; ``Partition`` is the shell that feeds it the log's end
offset, the time and the metadata image's view of the brokers, and carries out what it asks
(send an AlterPartition, complete waiting produces and fetches).

The rules (Kafka 3.7+, KIP-497 / KIP-841 / KIP-903):

- A follower's position is the FetchOffset of its fetch: the leader learns that records
  reached a follower only from its *next* fetch.
- ``last_caught_up_ms`` moves to this fetch's time when the follower asks for the leader's end
  offset, or to the previous fetch's time when it asks for at least what the leader's end was
  then. A follower that never keeps up thus ages out of the ISR after
  ``replica.lag.time.max.ms`` even while it fetches busily.
- The high watermark is frozen while the committed ISR is smaller than the effective min ISR
  (``min(min.insync.replicas, replication factor)``); otherwise it is the smallest log end
  offset of the leader, every member of the *maximal* ISR, and every replica that is caught
  up and eligible to join (so a joining replica is not left behind for ever). It never moves
  back.
- One ISR change is in flight at a time. While it is, the maximal ISR is the committed ISR
  plus the member being added (PendingExpand: the stricter set, used at once) or the committed
  ISR itself (PendingShrink: members leave only once the controller says so).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from brook.metadata import quorum_acks
from brook.protocol.errors import Errors, KafkaError

UNKNOWN = -1

# (broker id, the broker epoch the replica's fetch carried, -1 if none) -> may it be in the
# ISR: registered, unfenced, not shutting down, and (when known) that very incarnation.
Eligibility = Callable[[int, int], bool]


@dataclass
class FollowerState:
    """What the leader knows of one follower, learned only from its fetches."""

    log_end_offset: int = UNKNOWN
    log_start_offset: int = UNKNOWN
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0
    # The leader's log end offset when the previous fetch was served.
    last_fetch_leader_leo: int = UNKNOWN
    broker_epoch: int = UNKNOWN

    def caught_up(self, leader_leo: int, now_ms: int, lag_ms: int) -> bool:
        """Kafka's ReplicaState.isCaughtUp."""
        return self.log_end_offset == leader_leo or now_ms - self.last_caught_up_ms <= lag_ms


class Kind(enum.Enum):
    EXPAND = "expand"
    SHRINK = "shrink"


@dataclass(frozen=True, eq=False)
class IsrUpdate:
    """One AlterPartition entry this leader asks for (compared by identity: a reply for an
    update the leader has already left is ignored)."""

    kind: Kind
    leader_epoch: int
    partition_epoch: int
    new_isr: tuple[int, ...]
    # (broker id, broker epoch) of each member, for AlterPartition v3's NewIsrWithEpochs
    new_isr_with_epochs: tuple[tuple[int, int], ...]
    committed_isr: tuple[int, ...]


class Reaction(enum.Enum):
    """What the shell does after a reply (Kafka's handleAlterPartitionError and success)."""

    COMMITTED = "committed"  # the ISR changed; the HW may have moved
    ROLLED_BACK = "rolled_back"  # back to the committed ISR; a new change may be tried
    WAIT_FOR_METADATA = "wait"  # stays pending until the image says what happened
    RETRY = "retry"  # send the same update again
    IGNORED = "ignored"  # a reply for an update this leader has left


# Replies that leave the update pending until the metadata image moves (Kafka's
# handleAlterPartitionError returns false for these without rolling back).
_WAIT_ERRORS = frozenset(
    {
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.FENCED_LEADER_EPOCH,
        Errors.INVALID_UPDATE_VERSION,
        Errors.INVALID_REQUEST,
        Errors.NEW_LEADER_ELECTED,
    }
)
_ROLLBACK_ERRORS = frozenset({Errors.INELIGIBLE_REPLICA, Errors.OPERATION_NOT_ATTEMPTED})


@dataclass
class LeaderState:
    """One partition while this broker leads it, for one leader epoch onwards."""

    local_id: int
    leader_epoch: int
    partition_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]  # committed: what the metadata (or the controller's reply) says
    epoch_start_offset: int
    high_watermark: int
    min_insync_replicas: int
    lag_time_max_ms: int
    # KIP-250 (``quorum.required.acks``, -1: off): the HW is the Q-th largest log end in the
    # ISR, and an acks=all produce needs Q replicas in it.
    quorum_required_acks: int = quorum_acks.OFF
    followers: dict[int, FollowerState] = field(default_factory=dict)
    pending: IsrUpdate | None = None
    # This broker's own epoch, named for the leader in NewIsrWithEpochs (-1: not known).
    local_broker_epoch: int = UNKNOWN

    # ------------------------------------------------------------------ becoming leader
    @classmethod
    def become_leader(
        cls,
        *,
        local_id: int,
        leader_epoch: int,
        partition_epoch: int,
        replicas: Iterable[int],
        isr: Iterable[int],
        leader_leo: int,
        high_watermark: int,
        min_insync_replicas: int,
        lag_time_max_ms: int,
        now_ms: int,
        previous: LeaderState | None = None,
        quorum_required_acks: int = quorum_acks.OFF,
    ) -> LeaderState:
        """The state of a leader epoch that starts now at ``leader_leo``. A broker that was
        not leading forgets what it knew of its followers: their log ends become unknown and
        their last catch-up is now for ISR members, never for the others (Kafka's
        resetReplicaState), so its HW waits until every ISR member has fetched. A leader
        re-elected under a new epoch keeps the positions and restarts the clocks."""
        replicas, isr = tuple(replicas), tuple(isr)
        state = cls(
            local_id,
            leader_epoch,
            partition_epoch,
            replicas,
            isr,
            epoch_start_offset=leader_leo,
            high_watermark=high_watermark,
            min_insync_replicas=min_insync_replicas,
            lag_time_max_ms=lag_time_max_ms,
            quorum_required_acks=quorum_required_acks,
        )
        for replica in replicas:
            if replica == local_id:
                continue
            caught_up = now_ms if replica in isr else 0
            old = previous.followers.get(replica) if previous is not None else None
            if old is None:
                state.followers[replica] = FollowerState(last_caught_up_ms=caught_up)
            else:
                state.followers[replica] = FollowerState(
                    log_end_offset=old.log_end_offset,
                    log_start_offset=old.log_start_offset,
                    last_caught_up_ms=caught_up,
                    last_fetch_ms=now_ms,
                    last_fetch_leader_leo=leader_leo,
                    broker_epoch=old.broker_epoch,
                )
        return state

    def update_assignment(
        self, partition_epoch: int, replicas: Iterable[int], isr: Iterable[int], now_ms: int
    ) -> bool:
        """The image moved this partition on within the same leader epoch (an ISR change
        committed, a reassignment). An image older than what this leader already has is
        skipped; otherwise the ISR is committed from it and any pending update is over.
        Returns whether it was applied."""
        if partition_epoch < self.partition_epoch:
            return False
        self.partition_epoch = partition_epoch
        self.replicas = tuple(replicas)
        self.isr = tuple(isr)
        self.pending = None
        for replica in self.replicas:
            if replica != self.local_id and replica not in self.followers:
                self.followers[replica] = FollowerState(
                    last_caught_up_ms=now_ms if replica in self.isr else 0
                )
        for gone in [r for r in self.followers if r not in self.replicas]:
            del self.followers[gone]
        return True

    # ------------------------------------------------------------------ the ISR views
    @property
    def maximal_isr(self) -> tuple[int, ...]:
        if self.pending is not None and self.pending.kind is Kind.EXPAND:
            return self.pending.new_isr
        return self.isr

    @property
    def in_flight(self) -> bool:
        return self.pending is not None

    @property
    def effective_min_isr(self) -> int:
        floor = min(self.min_insync_replicas, len(self.replicas))
        if quorum_acks.enabled(self.quorum_required_acks):
            return max(floor, self.quorum_required_acks)
        return floor

    @property
    def under_min_isr(self) -> bool:
        return len(self.isr) < self.effective_min_isr

    # ------------------------------------------------------------------ follower fetches
    def record_fetch(
        self,
        replica: int,
        fetch_offset: int,
        log_start_offset: int,
        broker_epoch: int,
        leader_leo: int,
        now_ms: int,
    ) -> None:
        """A follower fetched from ``fetch_offset``: everything before it is on the follower.
        A fetch from an older incarnation than the one seen last is refused
        (NOT_LEADER_OR_FOLLOWER, Kafka's Replica.updateFetchStateOrThrow)."""
        state = self.followers.get(replica)
        if state is None:
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER, f"replica {replica} is not assigned here"
            )
        if broker_epoch != UNKNOWN and broker_epoch < state.broker_epoch:
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"replica {replica} fetched with broker epoch {broker_epoch}, older than "
                f"{state.broker_epoch}",
            )
        if fetch_offset >= leader_leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now_ms)
        elif fetch_offset >= state.last_fetch_leader_leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_start_offset = log_start_offset
        state.log_end_offset = fetch_offset
        state.broker_epoch = broker_epoch
        state.last_fetch_leader_leo = leader_leo
        state.last_fetch_ms = now_ms

    # ------------------------------------------------------------------ high watermark
    def maybe_increment_high_watermark(
        self, leader_leo: int, now_ms: int, eligible: Eligibility
    ) -> bool:
        """Move the HW as far as the rule allows; True if it moved."""
        if self.under_min_isr:
            return False
        if quorum_acks.enabled(self.quorum_required_acks):
            return self._quorum_high_watermark(leader_leo)
        candidate = leader_leo
        maximal = self.maximal_isr
        for replica, state in self.followers.items():
            if state.log_end_offset >= candidate:
                continue
            if replica in maximal or (
                state.caught_up(leader_leo, now_ms, self.lag_time_max_ms)
                and eligible(replica, state.broker_epoch)
            ):
                candidate = state.log_end_offset
        if candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    def _quorum_high_watermark(self, leader_leo: int) -> bool:
        """KIP-250: the Q-th largest log end among the maximal ISR (the leader's included;
        a follower not heard from since this leader epoch began counts as unknown), once it
        is past the start of this leader's epoch (``quorum_acks.high_watermark``)."""
        ends = [
            leader_leo if r == self.local_id else self._follower_end(r) for r in self.maximal_isr
        ]
        candidate = quorum_acks.high_watermark(
            ends, self.quorum_required_acks, self.epoch_start_offset
        )
        if candidate is None or candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        return True

    def _follower_end(self, replica: int) -> int:
        state = self.followers.get(replica)
        return UNKNOWN if state is None else state.log_end_offset

    # ------------------------------------------------------------------ ISR changes
    def maybe_expand_isr(self, replica: int, eligible: Eligibility) -> IsrUpdate | None:
        """After ``replica``'s fetch: the update adding it, when every condition holds (no
        update in flight, not a member, log end at or past the HW and past the start of this
        leader epoch, eligible)."""
        state = self.followers.get(replica)
        if (
            state is None
            or self.pending is not None
            or replica in self.isr
            or state.log_end_offset < self.high_watermark
            or state.log_end_offset < self.epoch_start_offset
            or not eligible(replica, state.broker_epoch)
        ):
            return None
        new_isr = (*self.isr, replica)
        return self._submit(Kind.EXPAND, new_isr)

    def out_of_sync(self, leader_leo: int, now_ms: int) -> tuple[int, ...]:
        """ISR members (the leader aside) not caught up for ``replica.lag.time.max.ms``."""
        return tuple(
            r
            for r in self.isr
            if r != self.local_id
            and (state := self.followers.get(r)) is not None
            and not state.caught_up(leader_leo, now_ms, self.lag_time_max_ms)
        )

    def maybe_shrink_isr(self, leader_leo: int, now_ms: int) -> IsrUpdate | None:
        if self.pending is not None:
            return None
        lagging = self.out_of_sync(leader_leo, now_ms)
        if not lagging:
            return None
        return self._submit(Kind.SHRINK, tuple(r for r in self.isr if r not in lagging))

    def _submit(self, kind: Kind, new_isr: tuple[int, ...]) -> IsrUpdate:
        update = IsrUpdate(
            kind,
            self.leader_epoch,
            self.partition_epoch,
            new_isr,
            tuple((r, self._epoch_of(r)) for r in new_isr),
            self.isr,
        )
        self.pending = update
        return update

    def _epoch_of(self, replica: int) -> int:
        if replica == self.local_id:
            return self.local_broker_epoch
        state = self.followers.get(replica)
        return UNKNOWN if state is None else state.broker_epoch

    def on_reply(
        self,
        update: IsrUpdate,
        error: int,
        *,
        leader_epoch: int = UNKNOWN,
        partition_epoch: int = UNKNOWN,
        isr: Iterable[int] = (),
    ) -> Reaction:
        """The controller answered ``update`` (Kafka's AlterPartition callback)."""
        if self.pending is not update:
            return Reaction.IGNORED
        if error != Errors.NONE:
            if error in _ROLLBACK_ERRORS:
                self.pending = None
                return Reaction.ROLLED_BACK
            if error in _WAIT_ERRORS:
                return Reaction.WAIT_FOR_METADATA
            return Reaction.RETRY
        if leader_epoch != self.leader_epoch or partition_epoch < self.partition_epoch:
            return Reaction.IGNORED
        self.isr = tuple(isr)
        self.partition_epoch = partition_epoch
        self.pending = None
        return Reaction.COMMITTED
