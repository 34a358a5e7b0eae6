"""A consumer's membership of a classic group as plain logic (Java's AbstractCoordinator and
its Heartbeat): member state, generation, the rejoin flag, the session / heartbeat / poll
timers, and Kafka's reaction to every error JoinGroup, SyncGroup, Heartbeat and OffsetCommit
can answer. Time is passed in (ms); the asyncio shell in ``group_coordinator`` sends the
requests and acts on the returned ``Reaction``.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass

from brook.protocol.errors import Errors, KafkaError

__all__ = ["NO_GENERATION", "Generation", "MemberState", "Membership", "Reaction"]

log = logging.getLogger(__name__)


class MemberState(enum.Enum):
    UNJOINED = "unjoined"  # not in the group (or reset after an error)
    PREPARING_REBALANCE = "preparing"  # JoinGroup sent
    COMPLETING_REBALANCE = "completing"  # joined; SyncGroup sent
    STABLE = "stable"  # holds the generation's assignment


class Reaction(enum.Enum):
    PROCEED = "proceed"  # success: go on (JoinGroup -> SyncGroup -> assignment)
    REJOIN = "rejoin"  # send JoinGroup again at once
    RETRY = "retry"  # the same step again after retry.backoff.ms
    COORDINATOR_LOST = "coordinator-lost"  # find the coordinator again, then retry
    FATAL = "fatal"  # raise ``Membership.fatal`` to the application, on every call
    ERROR = "error"  # raise ``Membership.error`` once; the next poll() joins again
    IGNORE = "ignore"  # a stale answer; nothing to do


@dataclass(frozen=True)
class Generation:
    generation_id: int = -1
    member_id: str = ""
    protocol_name: str | None = None


NO_GENERATION = Generation()

# Errors after which the coordinator is looked up again (markCoordinatorUnknown).
_COORDINATOR_ERRORS = frozenset(
    {Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR, Errors.REQUEST_TIMED_OUT}
)


class Membership:
    """One member's view of its group. ``rebalance_timeout_ms`` is max.poll.interval.ms."""

    def __init__(
        self,
        *,
        group_id: str,
        group_instance_id: str | None,
        session_timeout_ms: int,
        heartbeat_interval_ms: int,
        rebalance_timeout_ms: int,
        retry_backoff_ms: int,
        now_ms: float,
    ) -> None:
        self.group_id = group_id
        self.group_instance_id = group_instance_id
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        # A member id the coordinator handed out (MEMBER_ID_REQUIRED) before a generation.
        self.member_id = ""
        self.leader_id = ""
        self.rejoin_needed = True
        self.rejoin_reason = "initialized"
        self.needs_join_prepare = True
        self.fatal: KafkaError | None = None
        self.error: KafkaError | None = None
        self._last_poll = now_ms
        self._session_start = now_ms  # the last heartbeat answer (or the join)
        self._next_heartbeat = now_ms
        self.heartbeat_in_flight = False

    # -- queries ---------------------------------------------------------------------------

    @property
    def is_static(self) -> bool:
        return self.group_instance_id is not None

    @property
    def is_leader(self) -> bool:
        return bool(self.generation.member_id) and self.leader_id == self.generation.member_id

    @property
    def has_joined(self) -> bool:
        return self.state in (MemberState.COMPLETING_REBALANCE, MemberState.STABLE)

    def generation_if_stable(self) -> Generation | None:
        return self.generation if self.state is MemberState.STABLE else None

    @property
    def rebalance_in_progress(self) -> bool:
        return self.state in (MemberState.PREPARING_REBALANCE, MemberState.COMPLETING_REBALANCE)

    # -- transitions -----------------------------------------------------------------------

    def request_rejoin(self, reason: str) -> None:
        if not self.rejoin_needed:
            log.info("group %s: request joining the group due to: %s", self.group_id, reason)
        self.rejoin_needed = True
        self.rejoin_reason = reason

    def reset_generation(self, reason: str, *, reset_member_id: bool = True) -> None:
        """Drop the generation (and the member id): whatever is owned is lost."""
        log.info("group %s: resetting generation due to: %s", self.group_id, reason)
        self.state = MemberState.UNJOINED
        self.generation = NO_GENERATION
        if reset_member_id:
            self.member_id = ""
        self.leader_id = ""
        self.needs_join_prepare = True
        self.request_rejoin(reason)

    def _reset_on(self, error: int, api: str) -> None:
        # As Java: ILLEGAL_GENERATION keeps the member id (it may still be valid, and a new
        # id would leave the old one in the group until the rebalance timeout);
        # UNKNOWN_MEMBER_ID drops it.
        self.reset_generation(
            f"{api} answered {KafkaError(error).name}",
            reset_member_id=error != Errors.ILLEGAL_GENERATION,
        )

    def join_started(self) -> None:
        self.state = MemberState.PREPARING_REBALANCE
        self.rejoin_needed = False

    def _fail(self, code: int, message: str) -> Reaction:
        """An error the member cannot get past (a fenced static member): every call raises."""
        self.fatal = KafkaError(code, f"group {self.group_id}: {message}")
        return Reaction.FATAL

    def _raise_once(self, code: int, message: str) -> Reaction:
        """An unexpected answer: raised from the next poll(), and the poll after joins again
        (as Java's consumer throws it once from poll)."""
        self.error = KafkaError(code, f"group {self.group_id}: {message}")
        self.request_rejoin(message)
        return Reaction.ERROR

    def on_join_response(
        self,
        error: int,
        *,
        generation_id: int,
        member_id: str,
        protocol_name: str | None,
        leader_id: str,
        now_ms: float,
    ) -> Reaction:
        if error == Errors.NONE:
            if self.state is not MemberState.PREPARING_REBALANCE:
                return Reaction.REJOIN  # the member left meanwhile (close, poll timeout)
            self.generation = Generation(generation_id, member_id, protocol_name)
            self.member_id = member_id
            self.leader_id = leader_id
            self.state = MemberState.COMPLETING_REBALANCE
            self._session_start = now_ms
            self._next_heartbeat = now_ms + self.heartbeat_interval_ms
            return Reaction.PROCEED
        if error == Errors.MEMBER_ID_REQUIRED:
            # JoinGroup v4+: join again with the member id the coordinator chose.
            self.member_id = member_id
            self.request_rejoin("need to re-join with the given member-id")
            return Reaction.REJOIN
        if error == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            return Reaction.RETRY
        if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            self._reset_on(error, "JoinGroup")
            return Reaction.REJOIN
        if error == Errors.REBALANCE_IN_PROGRESS:
            self.request_rejoin("the coordinator is rebalancing the group")
            return Reaction.REJOIN
        if error in _COORDINATOR_ERRORS:
            return Reaction.COORDINATOR_LOST
        if error == Errors.FENCED_INSTANCE_ID:
            return self._fail(
                error,
                f"group.instance.id {self.group_instance_id} is used by another member",
            )
        if error == Errors.INVALID_SESSION_TIMEOUT:
            return self._raise_once(
                error,
                f"session.timeout.ms {self.session_timeout_ms} is outside the broker's "
                "group.min.session.timeout.ms / group.max.session.timeout.ms",
            )
        if error == Errors.INCONSISTENT_GROUP_PROTOCOL:
            return self._raise_once(
                error,
                "no partition.assignment.strategy in common with the other members "
                "(or a group of another protocol type uses this group.id)",
            )
        if error == Errors.GROUP_MAX_SIZE_REACHED:
            return self._raise_once(error, "the group has reached group.max.size")
        return self._raise_once(error, "JoinGroup failed")

    def on_sync_response(
        self,
        error: int,
        *,
        generation: Generation,
        protocol_type: str | None,
        protocol_name: str | None,
    ) -> Reaction:
        if error == Errors.NONE:
            if generation != self.generation or self.state is not MemberState.COMPLETING_REBALANCE:
                return Reaction.REJOIN
            if (protocol_type not in (None, "", "consumer")) or (
                protocol_name and protocol_name != generation.protocol_name
            ):
                return self._raise_once(
                    Errors.INCONSISTENT_GROUP_PROTOCOL,
                    f"SyncGroup answered protocol {protocol_type}/{protocol_name}, joined with "
                    f"consumer/{generation.protocol_name}",
                )
            self.state = MemberState.STABLE
            self.rejoin_needed = False
            return Reaction.PROCEED
        if error == Errors.REBALANCE_IN_PROGRESS:
            self.request_rejoin("the coordinator is rebalancing the group")
            return Reaction.REJOIN
        if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            self._reset_on(error, "SyncGroup")
            return Reaction.REJOIN
        if error in _COORDINATOR_ERRORS:
            self.request_rejoin("the coordinator moved during SyncGroup")
            return Reaction.COORDINATOR_LOST
        if error == Errors.FENCED_INSTANCE_ID:
            return self._fail(
                error, f"group.instance.id {self.group_instance_id} is used by another member"
            )
        return self._raise_once(error, "SyncGroup failed")

    # -- heartbeats and timers -------------------------------------------------------------

    def polled(self, now_ms: float) -> None:
        self._last_poll = now_ms

    def poll_timeout_expired(self, now_ms: float) -> bool:
        return now_ms - self._last_poll > self.rebalance_timeout_ms

    def poll_deadline(self) -> float:
        return self._last_poll + self.rebalance_timeout_ms

    def session_expired(self, now_ms: float) -> bool:
        return now_ms - self._session_start > self.session_timeout_ms

    def session_deadline(self) -> float:
        return self._session_start + self.session_timeout_ms

    def heartbeat_due(self, now_ms: float) -> bool:
        return self.has_joined and not self.heartbeat_in_flight and now_ms >= self._next_heartbeat

    def next_heartbeat(self) -> float:
        return self._next_heartbeat

    def heartbeat_sent(self, now_ms: float) -> None:
        self.heartbeat_in_flight = True
        self._next_heartbeat = now_ms + self.heartbeat_interval_ms

    def heartbeat_failed(self, now_ms: float) -> None:
        """No answer (network error, timeout): try again after the backoff."""
        self.heartbeat_in_flight = False
        self._next_heartbeat = now_ms + self.retry_backoff_ms

    def coordinator_found(self, now_ms: float) -> None:
        # A new coordinator gets a whole session before it counts as silent.
        self._session_start = now_ms
        self._next_heartbeat = now_ms

    def on_heartbeat_response(self, error: int, sent: Generation, now_ms: float) -> Reaction:
        self.heartbeat_in_flight = False
        if error == Errors.NONE:
            self._session_start = now_ms
            return Reaction.PROCEED
        if error in _COORDINATOR_ERRORS:
            return Reaction.COORDINATOR_LOST
        if error == Errors.REBALANCE_IN_PROGRESS:
            self._session_start = now_ms  # the coordinator heard us
            if self.state is MemberState.STABLE:
                self.request_rejoin("group is already rebalancing")
                return Reaction.REJOIN
            return Reaction.IGNORE
        if error in (
            Errors.ILLEGAL_GENERATION,
            Errors.UNKNOWN_MEMBER_ID,
            Errors.FENCED_INSTANCE_ID,
        ):
            if sent != self.generation:
                return Reaction.IGNORE  # a heartbeat of an older generation
            if error == Errors.FENCED_INSTANCE_ID:
                return self._fail(
                    error,
                    f"group.instance.id {self.group_instance_id} is used by another member",
                )
            self._reset_on(error, "Heartbeat")
            return Reaction.REJOIN
        # Anything else: as Java's heartbeat thread, try again after the backoff.
        log.warning(
            "group %s: Heartbeat answered %s; trying again", self.group_id, KafkaError(error).name
        )
        self.heartbeat_failed(now_ms)
        return Reaction.RETRY

    # -- offset commits --------------------------------------------------------------------

    def on_commit_error(self, error: int, sent: Generation) -> Reaction:
        """A member-level OffsetCommit error: what it means for the membership."""
        if error in _COORDINATOR_ERRORS:
            return Reaction.COORDINATOR_LOST
        if error in (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.UNKNOWN_TOPIC_OR_PARTITION):
            return Reaction.RETRY
        if error in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
            if sent == self.generation and sent != NO_GENERATION:
                self._reset_on(error, "OffsetCommit")
            return Reaction.REJOIN
        if error == Errors.REBALANCE_IN_PROGRESS:
            if self.state is MemberState.STABLE:
                self.request_rejoin("group is already rebalancing")
            return Reaction.REJOIN
        if error == Errors.FENCED_INSTANCE_ID:
            if sent != self.generation:
                return Reaction.REJOIN  # fenced in an older generation: a rebalance is on
            return self._fail(
                error, f"group.instance.id {self.group_instance_id} is used by another member"
            )
        return Reaction.FATAL  # this commit fails (e.g. OFFSET_METADATA_TOO_LARGE)
