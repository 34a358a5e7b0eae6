"""One classic consumer group as plain logic: the membership state machine (Empty,
PreparingRebalance, CompletingRebalance, Stable, Dead), its deadlines and its committed offsets,
driven by requests and ``tick`` with the time passed in; it returns actions for the shell to run.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from brook.protocol.errors import Errors

from .model import (
    UNKNOWN_MEMBER_ID,
    Action,
    GroupConfig,
    GroupDescription,
    GroupState,
    JoinMember,
    JoinResult,
    Member,
    MemberDescription,
    Reply,
    StoreGroup,
    StoreKind,
    SyncResult,
    Waiter,
)
from .offsets import OffsetCache
from .store import GroupMetadataValue, MemberMetadata, subscribed_topics

CONSUMER_PROTOCOL_TYPE = "consumer"
# A member that joined but never got its JoinGroup answered is dropped after this long (Kafka's
# NewMemberJoinTimeoutMs): its socket is parked, so it cannot heartbeat.
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000

TopicPartition = tuple[str, int]

_EMPTY = GroupState.EMPTY
_PREPARING = GroupState.PREPARING_REBALANCE
_COMPLETING = GroupState.COMPLETING_REBALANCE
_STABLE = GroupState.STABLE
_DEAD = GroupState.DEAD

_VALID_PREVIOUS: dict[GroupState, frozenset[GroupState]] = {
    _PREPARING: frozenset({_STABLE, _COMPLETING, _EMPTY}),
    _COMPLETING: frozenset({_PREPARING}),
    _STABLE: frozenset({_COMPLETING}),
    _EMPTY: frozenset({_PREPARING}),
    _DEAD: frozenset(GroupState),
}


@dataclass(frozen=True)
class _StaticRejoin:
    waiter: Waiter
    group_instance_id: str
    old_member_id: str
    new_member_id: str
    old_protocols: list[tuple[str, bytes]]
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int
    previous_leader: str | None
    support_skip_assignment: bool


@dataclass(frozen=True)
class _LeaderAssignment:
    assignment: dict[str, bytes]


# ---------------------------------------------------------------------- the group


@dataclass(eq=False)
class Group:
    group_id: str
    config: GroupConfig
    state: GroupState = _EMPTY
    state_timestamp: int | None = None
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation_id: int = 0
    leader_id: str | None = None
    members: dict[str, Member] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_members: dict[str, int] = field(default_factory=dict)  # member id -> expiry
    pending_sync: set[str] = field(default_factory=set)
    offsets: OffsetCache = field(default_factory=OffsetCache)
    subscribed: set[str] | None = None
    new_member_id: Callable[[str], str] = field(default=lambda prefix: f"{prefix}-{uuid.uuid4()}")
    _new_member_added: bool = field(default=False, init=False, repr=False)
    _join_deadline: int | None = field(default=None, init=False, repr=False)
    # (configured delay, this delay, remaining rebalance time) while the initial delay runs
    _initial_join: tuple[int, int, int] | None = field(default=None, init=False, repr=False)
    _sync_deadline: int | None = field(default=None, init=False, repr=False)
    _sync_generation: int = field(default=-1, init=False, repr=False)

    # ------------------------------------------------------------------ lifecycle
    @classmethod
    def create(
        cls,
        group_id: str,
        config: GroupConfig,
        now_ms: int,
        new_member_id: Callable[[str], str] | None = None,
    ) -> Group:
        """A new, Empty group."""
        group = cls(group_id, config, state_timestamp=now_ms)
        if new_member_id is not None:
            group.new_member_id = new_member_id
        return group

    @classmethod
    def from_metadata(
        cls,
        group_id: str,
        config: GroupConfig,
        value: GroupMetadataValue,
        now_ms: int,
        new_member_id: Callable[[str], str] | None = None,
    ) -> Group:
        """A group as ``__consumer_offsets`` left it: Stable with its members, or Empty."""
        group = cls.create(group_id, config, now_ms, new_member_id)
        group.protocol_type = value.protocol_type or None
        group.protocol_name = value.protocol
        group.generation_id = value.generation
        group.leader_id = value.leader
        group.state_timestamp = (
            value.current_state_timestamp if value.current_state_timestamp >= 0 else None
        )
        for m in value.members:
            member = Member(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                value.protocol_type,
                [(value.protocol or "", m.subscription)],
                m.assignment,
                heartbeat_deadline=now_ms + m.session_timeout_ms,
            )
            group.members[m.member_id] = member
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
        if group.members:
            group.state = _STABLE
            if group.leader_id not in group.members:
                group.leader_id = next(iter(group.members))
        group.subscribed = group._compute_subscribed_topics()
        return group

    def on_loaded(self, now_ms: int) -> list[Action]:
        """A freshly loaded group above ``group.max.size`` rebalances to shed members."""
        out: list[Action] = []
        if len(self.members) > self.config.max_size:
            self._prepare_rebalance(now_ms, out)
        return out

    def unload(self, now_ms: int) -> list[Action]:
        """This broker no longer coordinates the group: fail whatever is parked."""
        out: list[Action] = []
        self._transition(_DEAD, now_ms)
        for member in self.members.values():
            if member.join_waiter is not None:
                out.append(
                    Reply(member.join_waiter, JoinResult(Errors.NOT_COORDINATOR, member.member_id))
                )
                member.join_waiter = None
            if member.sync_waiter is not None:
                out.append(Reply(member.sync_waiter, SyncResult(Errors.NOT_COORDINATOR)))
                member.sync_waiter = None
        self._clear_deadlines()
        return out

    def delete(self, now_ms: int) -> int:
        """DeleteGroups: only an Empty group can go (it turns Dead; the caller drops it)."""
        if self.state is _DEAD:
            return Errors.GROUP_ID_NOT_FOUND
        if self.state is not _EMPTY:
            return Errors.NON_EMPTY_GROUP
        self._transition(_DEAD, now_ms)
        self._clear_deadlines()
        return Errors.NONE

    # ------------------------------------------------------------------ JoinGroup
    def join(
        self,
        waiter: Waiter,
        *,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        require_known_member_id: bool,
        support_skip_assignment: bool,
        now_ms: int,
    ) -> list[Action]:
        out: list[Action] = []
        protocols = list(protocols)
        if not (
            self.config.min_session_timeout_ms
            <= session_timeout_ms
            <= self.config.max_session_timeout_ms
        ):
            out.append(Reply(waiter, JoinResult(Errors.INVALID_SESSION_TIMEOUT, member_id)))
            return out
        if not self._accept_joining_member(member_id):
            self._remove(member_id)
            out.append(Reply(waiter, JoinResult(Errors.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID)))
        elif self.state is _DEAD:
            # The group was just unloaded or deleted: the client should find its coordinator again.
            out.append(Reply(waiter, JoinResult(Errors.COORDINATOR_NOT_AVAILABLE, member_id)))
        elif not self._supports_protocols(protocol_type, {name for name, _ in protocols}):
            out.append(Reply(waiter, JoinResult(Errors.INCONSISTENT_GROUP_PROTOCOL, member_id)))
        elif member_id == UNKNOWN_MEMBER_ID:
            new_id = self.new_member_id(group_instance_id or client_id)
            if group_instance_id is not None:
                old_id = self.static_members.get(group_instance_id)
                if old_id is not None:
                    self._rejoin_static_member(
                        waiter,
                        group_instance_id,
                        old_id,
                        new_id,
                        protocols,
                        rebalance_timeout_ms,
                        session_timeout_ms,
                        support_skip_assignment,
                        now_ms,
                        out,
                    )
                else:
                    self._add_member_and_rebalance(
                        waiter,
                        Member(
                            new_id,
                            group_instance_id,
                            client_id,
                            client_host,
                            rebalance_timeout_ms,
                            session_timeout_ms,
                            protocol_type,
                            protocols,
                        ),
                        now_ms,
                        out,
                    )
            elif require_known_member_id:
                self.pending_members[new_id] = now_ms + session_timeout_ms
                out.append(Reply(waiter, JoinResult(Errors.MEMBER_ID_REQUIRED, new_id)))
            else:
                member = Member(
                    new_id,
                    None,
                    client_id,
                    client_host,
                    rebalance_timeout_ms,
                    session_timeout_ms,
                    protocol_type,
                    protocols,
                )
                self._add_member_and_rebalance(waiter, member, now_ms, out)
        elif member_id in self.pending_members:
            member = Member(
                member_id,
                None,
                client_id,
                client_host,
                rebalance_timeout_ms,
                session_timeout_ms,
                protocol_type,
                protocols,
            )
            self._add_member_and_rebalance(waiter, member, now_ms, out)
        else:
            error = self._validate_member(member_id, group_instance_id)
            if error:
                out.append(Reply(waiter, JoinResult(error, member_id)))
            else:
                self._join_current_member(
                    waiter,
                    self.members[member_id],
                    protocols,
                    rebalance_timeout_ms,
                    session_timeout_ms,
                    now_ms,
                    out,
                )
        if self.state is _PREPARING:
            self._try_complete_join(now_ms, out)
        return out

    def _join_current_member(
        self,
        waiter: Waiter,
        member: Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        now_ms: int,
        out: list[Action],
    ) -> None:
        state = self.state
        if state is _PREPARING:
            self._update_member(
                member, protocols, rebalance_timeout_ms, session_timeout_ms, waiter, out
            )
            self._maybe_prepare_rebalance(now_ms, out)
        elif state is _COMPLETING:
            if member.matches(protocols):
                # The member lost the first answer: repeat the generation it belongs to.
                out.append(Reply(waiter, self._join_result(member, members_for_leader=True)))
            else:
                self._update_member(
                    member, protocols, rebalance_timeout_ms, session_timeout_ms, waiter, out
                )
                self._maybe_prepare_rebalance(now_ms, out)
        elif state is _STABLE:
            if self.leader_id == member.member_id or not member.matches(protocols):
                # A leader's JoinGroup asks for a rebalance (e.g. after a metadata change that
                # does not show in its subscription).
                self._update_member(
                    member, protocols, rebalance_timeout_ms, session_timeout_ms, waiter, out
                )
                self._maybe_prepare_rebalance(now_ms, out)
            else:
                out.append(Reply(waiter, self._join_result(member, members_for_leader=False)))
        else:
            out.append(Reply(waiter, JoinResult(Errors.UNKNOWN_MEMBER_ID, member.member_id)))

    def _rejoin_static_member(
        self,
        waiter: Waiter,
        instance_id: str,
        old_id: str,
        new_id: str,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        support_skip_assignment: bool,
        now_ms: int,
        out: list[Action],
    ) -> None:
        previous_leader = self.leader_id
        member = self._replace_static_member(instance_id, old_id, new_id, out)
        member.heartbeat_deadline = now_ms + member.session_timeout_ms
        context = _StaticRejoin(
            waiter,
            instance_id,
            old_id,
            new_id,
            list(member.protocols),
            member.rebalance_timeout_ms,
            member.session_timeout_ms,
            previous_leader,
            support_skip_assignment,
        )
        self._update_member(
            member, protocols, rebalance_timeout_ms, session_timeout_ms, waiter, out
        )
        if self.state is _STABLE:
            if self.protocol_name == self._select_protocol():
                # Same protocol: no rebalance, only the new member id has to be persisted.
                out.append(
                    StoreGroup(
                        StoreKind.STATIC_REJOIN,
                        self.generation_id,
                        self.metadata_value(),
                        context,
                    )
                )
            else:
                self._maybe_prepare_rebalance(now_ms, out)
        elif self.state is _COMPLETING:
            # The leader may already be assigning to the old member id: start over.
            self._prepare_rebalance(now_ms, out)

    # ------------------------------------------------------------------ SyncGroup
    def sync(
        self,
        waiter: Waiter,
        *,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
        now_ms: int,
    ) -> list[Action]:
        out: list[Action] = []
        if self.state is _DEAD:
            out.append(Reply(waiter, SyncResult(Errors.COORDINATOR_NOT_AVAILABLE)))
            return out
        error = self._validate_member(member_id, group_instance_id)
        if not error:
            if generation_id != self.generation_id:
                error = Errors.ILLEGAL_GENERATION
            elif (protocol_type is not None and protocol_type != self.protocol_type) or (
                protocol_name is not None and protocol_name != self.protocol_name
            ):
                error = Errors.INCONSISTENT_GROUP_PROTOCOL
        if error:
            out.append(Reply(waiter, SyncResult(error)))
        elif self.state is _EMPTY:
            out.append(Reply(waiter, SyncResult(Errors.UNKNOWN_MEMBER_ID)))
        elif self.state is _PREPARING:
            out.append(Reply(waiter, SyncResult(Errors.REBALANCE_IN_PROGRESS)))
        elif self.state is _COMPLETING:
            member = self.members[member_id]
            if member.sync_waiter is not None and member.sync_waiter is not waiter:
                out.append(Reply(member.sync_waiter, SyncResult(Errors.REBALANCE_IN_PROGRESS)))
            member.sync_waiter = waiter
            self.pending_sync.discard(member_id)
            if self.leader_id == member_id:
                full = {mid: bytes(assignments.get(mid, b"")) for mid in self.members}
                out.append(
                    StoreGroup(
                        StoreKind.SYNC,
                        self.generation_id,
                        self.metadata_value(full),
                        _LeaderAssignment(full),
                    )
                )
        else:
            member = self.members[member_id]
            self.pending_sync.discard(member_id)
            out.append(
                Reply(
                    waiter,
                    SyncResult(
                        Errors.NONE, self.protocol_type, self.protocol_name, member.assignment
                    ),
                )
            )
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
        return out

    def stored(self, action: StoreGroup, error: int, now_ms: int) -> list[Action]:
        """The write asked for by ``action`` finished with ``error`` (a group-level code)."""
        out: list[Action] = []
        if action.kind is StoreKind.SYNC:
            if self.state is not _COMPLETING or self.generation_id != action.generation_id:
                return out
            assert isinstance(action.context, _LeaderAssignment)
            if error:
                self._propagate_assignment_error(error, now_ms, out)
                self._maybe_prepare_rebalance(now_ms, out)
            else:
                for member in self.members.values():
                    member.assignment = action.context.assignment.get(member.member_id, b"")
                self._propagate_assignment(now_ms, out)
                self._transition(_STABLE, now_ms)
        elif action.kind is StoreKind.STATIC_REJOIN:
            assert isinstance(action.context, _StaticRejoin)
            self._static_rejoin_stored(action.context, error, now_ms, out)
        return out

    def _static_rejoin_stored(
        self, ctx: _StaticRejoin, error: int, now_ms: int, out: list[Action]
    ) -> None:
        member = self.members.get(ctx.new_member_id)
        if member is None or member.join_waiter is not ctx.waiter:
            # Removed or fenced while the write was in flight; it has had its answer.
            return
        if error:
            member.join_waiter = None
            self._update_member(
                member,
                ctx.old_protocols,
                ctx.old_rebalance_timeout_ms,
                ctx.old_session_timeout_ms,
                None,
                out,
            )
            self._replace_static_member(
                ctx.group_instance_id, ctx.new_member_id, ctx.old_member_id, out
            )
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
            out.append(
                Reply(
                    ctx.waiter,
                    JoinResult(
                        error,
                        UNKNOWN_MEMBER_ID,
                        self.generation_id,
                        self.protocol_type,
                        self.protocol_name,
                        ctx.previous_leader or "",
                    ),
                )
            )
            return
        if self.state is not _STABLE:
            # A rebalance began meanwhile; the member is answered when it completes.
            return
        member.join_waiter = None
        if ctx.support_skip_assignment:
            # JoinGroup v9+: tell a returning leader it leads, but that it must not assign.
            is_leader = self.leader_id == member.member_id
            result = JoinResult(
                Errors.NONE,
                member.member_id,
                self.generation_id,
                self.protocol_type,
                self.protocol_name,
                self.leader_id or "",
                skip_assignment=is_leader,
                members=self._member_metadata() if is_leader else (),
            )
        else:
            # Older clients: report the previous leader id so a returning leader does not
            # believe it leads and run a new assignment a Stable group would never deliver.
            result = JoinResult(
                Errors.NONE,
                member.member_id,
                self.generation_id,
                self.protocol_type,
                self.protocol_name,
                ctx.previous_leader or "",
            )
        out.append(Reply(ctx.waiter, result))

    # ------------------------------------------------------------------ Heartbeat / LeaveGroup
    def heartbeat(
        self, *, member_id: str, group_instance_id: str | None, generation_id: int, now_ms: int
    ) -> int:
        if self.state is _DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        error = self._validate_member(member_id, group_instance_id)
        if error:
            return error
        if generation_id != self.generation_id:
            return Errors.ILLEGAL_GENERATION
        if self.state is _EMPTY:
            return Errors.UNKNOWN_MEMBER_ID
        member = self.members[member_id]
        member.heartbeat_deadline = now_ms + member.session_timeout_ms
        if self.state is _PREPARING:
            return Errors.REBALANCE_IN_PROGRESS
        return Errors.NONE

    def leave(
        self, members: Iterable[tuple[str, str | None]], now_ms: int
    ) -> tuple[int, list[int], list[Action]]:
        """LeaveGroup: (top-level error, one error per member, actions)."""
        out: list[Action] = []
        if self.state is _DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE, [], out
        errors = []
        for member_id, instance_id in members:
            if member_id == UNKNOWN_MEMBER_ID:
                # Administrative removal by group.instance.id alone.
                current = self.static_members.get(instance_id) if instance_id else None
                if current is None:
                    errors.append(Errors.UNKNOWN_MEMBER_ID)
                else:
                    self._remove_member_and_update(self.members[current], now_ms, out)
                    errors.append(Errors.NONE)
            elif member_id in self.pending_members:
                del self.pending_members[member_id]
                if self.state is _PREPARING:
                    self._try_complete_join(now_ms, out)
                errors.append(Errors.NONE)
            else:
                error = self._validate_member(member_id, instance_id)
                if not error:
                    self._remove_member_and_update(self.members[member_id], now_ms, out)
                errors.append(error)
        return Errors.NONE, errors, out

    # ------------------------------------------------------------------ time
    def tick(self, now_ms: int) -> list[Action]:
        """Run every deadline that has passed: pending members, sessions, the join phase's
        end (initial delay or rebalance timeout) and the sync phase's end."""
        out: list[Action] = []
        if self.state is _DEAD:
            return out
        for member_id, deadline in list(self.pending_members.items()):
            if deadline <= now_ms and member_id in self.pending_members:
                del self.pending_members[member_id]
                if self.state is _PREPARING:
                    self._try_complete_join(now_ms, out)
        for member in list(self.members.values()):
            deadline = member.heartbeat_deadline
            if deadline is None or deadline > now_ms or member.member_id not in self.members:
                continue
            if member.is_new or not (member.awaiting_join or member.sync_waiter is not None):
                self._remove_member_and_update(member, now_ms, out)
            else:
                # A member parked in a rebalance keeps its session until it is answered.
                member.heartbeat_deadline = None
        if (
            self.state is _PREPARING
            and self._join_deadline is not None
            and self._join_deadline <= now_ms
        ):
            initial = self._initial_join
            if initial is not None and self._new_member_added and initial[2] != 0:
                # More members arrived during the initial delay: wait a little longer, within
                # the rebalance timeout.
                configured, delay, remaining = initial
                self._new_member_added = False
                next_delay = min(configured, remaining)
                self._initial_join = (configured, next_delay, max(remaining - delay, 0))
                self._join_deadline = now_ms + next_delay
            else:
                self._complete_join(now_ms, out)
        if self._sync_deadline is not None and self._sync_deadline <= now_ms:
            self._sync_deadline = None
            if (
                self.generation_id == self._sync_generation
                and self.state in (_COMPLETING, _STABLE)
                and self.pending_sync
            ):
                for member_id in list(self.pending_sync):
                    self._remove(member_id)
                self._prepare_rebalance(now_ms, out)
        return out

    def next_deadline(self) -> int | None:
        """The earliest time ``tick`` has something to do."""
        if self.state is _DEAD:
            return None
        times = list(self.pending_members.values())
        times += [
            m.heartbeat_deadline for m in self.members.values() if m.heartbeat_deadline is not None
        ]
        if self.state is _PREPARING and self._join_deadline is not None:
            times.append(self._join_deadline)
        if self._sync_deadline is not None:
            times.append(self._sync_deadline)
        return min(times) if times else None

    # ------------------------------------------------------------------ offsets
    def validate_offset_commit(
        self, *, member_id: str, group_instance_id: str | None, generation_id: int, now_ms: int
    ) -> int:
        """Whether this commit may be written; a member's commit also keeps its session."""
        if self.state is _DEAD:
            return Errors.COORDINATOR_NOT_AVAILABLE
        if generation_id < 0 and self.state is _EMPTY:
            # The admin client or a consumer that assigns partitions itself.
            return Errors.NONE
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = self._validate_member(member_id, group_instance_id)
            if error:
                return error
            if generation_id != self.generation_id:
                return Errors.ILLEGAL_GENERATION
        elif self.state is not _EMPTY:
            return Errors.UNKNOWN_MEMBER_ID
        if self.state is _COMPLETING:
            return Errors.REBALANCE_IN_PROGRESS
        member = self.members.get(member_id)
        if member is not None and self.state in (_STABLE, _PREPARING):
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
        return Errors.NONE

    def is_subscribed_to(self, topic: str) -> bool:
        """True when unknown (not a consumer group, or its metadata does not parse)."""
        return self.subscribed is None or topic in self.subscribed

    def offset_delete_errors(
        self, tps: Sequence[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        """OffsetDelete: (group error, per-partition error); partitions with NONE may go."""
        if self.state is _DEAD:
            return Errors.GROUP_ID_NOT_FOUND, {}
        if self.state is _EMPTY:
            return Errors.NONE, dict.fromkeys(tps, Errors.NONE)
        if self.protocol_type == CONSUMER_PROTOCOL_TYPE:
            return Errors.NONE, {
                tp: Errors.GROUP_SUBSCRIBED_TO_TOPIC
                if self.is_subscribed_to(tp[0])
                else Errors.NONE
                for tp in tps
            }
        return Errors.NON_EMPTY_GROUP, {}

    def expire_offsets(self, now_ms: int, retention_ms: int) -> list[TopicPartition]:
        """Drop offsets past retention (Kafka 2.1+ rules) and return their partitions.

        Empty group: retention counts from when the group became Empty. Stable consumer group
        with known subscriptions: offsets of topics no longer subscribed, counted from their
        commit. Group without a protocol (commits only): counted from each commit. An explicit
        expire timestamp (OffsetCommit v2-v4 retention time) always wins.
        """
        if self.protocol_type is not None and self.state is _EMPTY:
            since = self.state_timestamp
            return self.offsets.expire(
                now_ms,
                retention_ms,
                lambda v: since if since is not None else v.commit_timestamp,
            )
        if (
            self.protocol_type == CONSUMER_PROTOCOL_TYPE
            and self.subscribed is not None
            and self.state is _STABLE
        ):
            return self.offsets.expire(
                now_ms, retention_ms, lambda v: v.commit_timestamp, self.subscribed
            )
        if self.protocol_type is None:
            return self.offsets.expire(now_ms, retention_ms, lambda v: v.commit_timestamp)
        return []

    def expire_if_empty(self, now_ms: int) -> bool:
        """An Empty group without offsets is forgotten (Kafka writes its tombstone)."""
        if self.state is _EMPTY and not self.offsets.has_any and not self.pending_members:
            self._transition(_DEAD, now_ms)
            self._clear_deadlines()
            return True
        return False

    # ------------------------------------------------------------------ views
    def describe(self) -> GroupDescription:
        if self.state is _STABLE:
            protocol = self.protocol_name or ""
            members = tuple(
                MemberDescription(
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.metadata(protocol),
                    m.assignment,
                )
                for m in self.members.values()
            )
        else:
            protocol = ""
            members = tuple(
                MemberDescription(
                    m.member_id, m.group_instance_id, m.client_id, m.client_host, b"", b""
                )
                for m in self.members.values()
            )
        return GroupDescription(self.state.value, self.protocol_type or "", protocol, members)

    def metadata_value(self, assignment: Mapping[str, bytes] | None = None) -> GroupMetadataValue:
        """The GroupMetadataValue record of the group as it stands."""
        protocol = self.protocol_name
        members = tuple(
            MemberMetadata(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                m.metadata(protocol) if protocol is not None else b"",
                assignment.get(m.member_id, b"") if assignment is not None else m.assignment,
            )
            for m in self.members.values()
        )
        return GroupMetadataValue(
            self.protocol_type or "",
            self.generation_id,
            protocol,
            self.leader_id,
            self.state_timestamp if self.state_timestamp is not None else -1,
            members,
        )

    # ------------------------------------------------------------------ internals
    def _transition(self, target: GroupState, now_ms: int) -> None:
        if self.state not in _VALID_PREVIOUS[target]:
            raise RuntimeError(
                f"group {self.group_id} cannot move from {self.state.value} to {target.value}"
            )
        self.state = target
        self.state_timestamp = now_ms

    def _clear_deadlines(self) -> None:
        self._join_deadline = None
        self._initial_join = None
        self._sync_deadline = None
        self.pending_members.clear()
        for member in self.members.values():
            member.heartbeat_deadline = None

    def _accept_joining_member(self, member_id: str) -> bool:
        if self.state in (_EMPTY, _DEAD):
            return True
        member = self.members.get(member_id)
        if self.state is _PREPARING:
            # Counting parked members lets a shrunken group.max.size shed the latecomers.
            awaiting = sum(1 for m in self.members.values() if m.awaiting_join)
            return (member is not None and member.awaiting_join) or awaiting < self.config.max_size
        return member is not None or len(self.members) < self.config.max_size

    def _supports_protocols(self, protocol_type: str, protocols: set[str]) -> bool:
        if self.state is _EMPTY:
            return bool(protocol_type) and bool(protocols)
        if self.protocol_type != protocol_type:
            return False
        if not self.members:
            return bool(protocols)
        return any(all(p in m.protocol_names() for m in self.members.values()) for p in protocols)

    def _select_protocol(self) -> str:
        names = [set(m.protocol_names()) for m in self.members.values()]
        candidates = set.intersection(*names) if names else set()
        votes: Counter[str] = Counter(m.vote(candidates) for m in self.members.values())
        # Ties go to the protocol voted first, as a stable, deterministic choice.
        return max(votes, key=lambda p: votes[p])

    def _compute_subscribed_topics(self) -> set[str] | None:
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return set()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            parsed = subscribed_topics(member.metadata(self.protocol_name))
            if parsed is None:
                return None
            topics |= parsed
        return topics

    def _validate_member(self, member_id: str, instance_id: str | None) -> int:
        if instance_id is not None:
            current = self.static_members.get(instance_id)
            if current is None:
                return Errors.UNKNOWN_MEMBER_ID
            if current != member_id:
                return Errors.FENCED_INSTANCE_ID
            return Errors.NONE
        if member_id not in self.members:
            return Errors.UNKNOWN_MEMBER_ID
        return Errors.NONE

    def _add(self, member: Member, waiter: Waiter) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        member.join_waiter = waiter
        self.pending_members.pop(member.member_id, None)

    def _remove(self, member_id: str) -> None:
        member = self.members.pop(member_id, None)
        instance_id = member.group_instance_id if member is not None else None
        if instance_id is not None and self.static_members.get(instance_id) == member_id:
            del self.static_members[instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync.discard(member_id)

    def _replace_static_member(
        self, instance_id: str, old_id: str, new_id: str, out: list[Action]
    ) -> Member:
        member = self.members.pop(old_id)
        # Whoever still waits under the old id is a duplicate instance: fence it now.
        if member.join_waiter is not None:
            out.append(Reply(member.join_waiter, JoinResult(Errors.FENCED_INSTANCE_ID, old_id)))
            member.join_waiter = None
        if member.sync_waiter is not None:
            out.append(Reply(member.sync_waiter, SyncResult(Errors.FENCED_INSTANCE_ID)))
            member.sync_waiter = None
        member.member_id = new_id
        self.members[new_id] = member
        if self.leader_id == old_id:
            self.leader_id = new_id
        if old_id in self.pending_sync:
            self.pending_sync.discard(old_id)
            self.pending_sync.add(new_id)
        self.static_members[instance_id] = new_id
        return member

    def _update_member(
        self,
        member: Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        waiter: Waiter | None,
        out: list[Action],
    ) -> None:
        member.protocols = list(protocols)
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms
        if (
            member.join_waiter is not None
            and waiter is not None
            and member.join_waiter is not waiter
        ):
            # A retried JoinGroup replaces the parked one; answer the old so it is not leaked.
            out.append(
                Reply(
                    member.join_waiter, JoinResult(Errors.REBALANCE_IN_PROGRESS, member.member_id)
                )
            )
        member.join_waiter = waiter

    def _add_member_and_rebalance(
        self, waiter: Waiter, member: Member, now_ms: int, out: list[Action]
    ) -> None:
        member.is_new = True
        if self.state is _PREPARING and self.generation_id == 0:
            self._new_member_added = True
        self._add(member, waiter)
        member.heartbeat_deadline = now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS
        self._maybe_prepare_rebalance(now_ms, out)

    def _remove_member_and_update(self, member: Member, now_ms: int, out: list[Action]) -> None:
        if member.join_waiter is not None:
            out.append(
                Reply(member.join_waiter, JoinResult(Errors.UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID))
            )
            member.join_waiter = None
        if member.sync_waiter is not None:
            out.append(Reply(member.sync_waiter, SyncResult(Errors.UNKNOWN_MEMBER_ID)))
            member.sync_waiter = None
        self._remove(member.member_id)
        if self.state in (_STABLE, _COMPLETING):
            self._maybe_prepare_rebalance(now_ms, out)
        elif self.state is _PREPARING:
            self._try_complete_join(now_ms, out)

    def _rebalance_timeout(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def _maybe_prepare_rebalance(self, now_ms: int, out: list[Action]) -> None:
        if self.state in _VALID_PREVIOUS[_PREPARING]:
            self._prepare_rebalance(now_ms, out)

    def _prepare_rebalance(self, now_ms: int, out: list[Action]) -> None:
        if self.state is _COMPLETING:
            self._propagate_assignment_error(Errors.REBALANCE_IN_PROGRESS, now_ms, out)
        self.pending_sync.clear()
        self._sync_deadline = None
        if self.state is _EMPTY:
            delay = self.config.initial_rebalance_delay_ms
            self._initial_join = (delay, delay, max(self._rebalance_timeout() - delay, 0))
            self._join_deadline = now_ms + delay
        else:
            self._initial_join = None
            self._join_deadline = now_ms + self._rebalance_timeout()
        self._transition(_PREPARING, now_ms)
        if self._initial_join is None:
            self._try_complete_join(now_ms, out)

    def _try_complete_join(self, now_ms: int, out: list[Action]) -> None:
        # The initial delay always runs to its end, to gather the members of a new group.
        if self.state is not _PREPARING or self._initial_join is not None:
            return
        if self.pending_members or not all(m.awaiting_join for m in self.members.values()):
            return
        self._complete_join(now_ms, out)

    def _complete_join(self, now_ms: int, out: list[Action]) -> None:
        self._join_deadline = None
        self._initial_join = None
        for member in list(self.members.values()):
            # Dynamic members that did not rejoin in time are gone; static ones keep their seat.
            if not member.awaiting_join and member.group_instance_id is None:
                self._remove(member.member_id)
        if self.state is _DEAD:
            return
        if not self._elect_joined_leader() and self.members:
            # Only absent static members remain: wait another rebalance timeout for them.
            self._join_deadline = now_ms + self._rebalance_timeout()
            return
        self._init_next_generation(now_ms)
        if self.state is _EMPTY:
            out.append(StoreGroup(StoreKind.EMPTY, self.generation_id, self.metadata_value()))
            return
        for member in self.members.values():
            if member.join_waiter is not None:
                out.append(Reply(member.join_waiter, self._join_result(member, True)))
                member.join_waiter = None
            member.heartbeat_deadline = now_ms + member.session_timeout_ms
            member.is_new = False
            self.pending_sync.add(member.member_id)
        self._sync_deadline = now_ms + self._rebalance_timeout()
        self._sync_generation = self.generation_id

    def _elect_joined_leader(self) -> bool:
        if self.leader_id is None or self.leader_id not in self.members:
            return False
        if self.members[self.leader_id].awaiting_join:
            return True
        for member in self.members.values():
            if member.awaiting_join:
                self.leader_id = member.member_id
                return True
        return False

    def _init_next_generation(self, now_ms: int) -> None:
        self.generation_id += 1
        if self.members:
            self.protocol_name = self._select_protocol()
            self.subscribed = self._compute_subscribed_topics()
            self._transition(_COMPLETING, now_ms)
        else:
            self.protocol_name = None
            self.subscribed = self._compute_subscribed_topics()
            self._transition(_EMPTY, now_ms)
        self.pending_sync.clear()

    def _member_metadata(self) -> tuple[JoinMember, ...]:
        protocol = self.protocol_name or ""
        return tuple(
            JoinMember(m.member_id, m.group_instance_id, m.metadata(protocol))
            for m in self.members.values()
        )

    def _join_result(self, member: Member, members_for_leader: bool) -> JoinResult:
        is_leader = self.leader_id == member.member_id
        return JoinResult(
            Errors.NONE,
            member.member_id,
            self.generation_id,
            self.protocol_type,
            self.protocol_name,
            self.leader_id or "",
            members=self._member_metadata() if (is_leader and members_for_leader) else (),
        )

    def _propagate_assignment(self, now_ms: int, out: list[Action]) -> None:
        for member in self.members.values():
            if member.sync_waiter is not None:
                out.append(
                    Reply(
                        member.sync_waiter,
                        SyncResult(
                            Errors.NONE, self.protocol_type, self.protocol_name, member.assignment
                        ),
                    )
                )
                member.sync_waiter = None
                # Sessions restart once the assignment is out: a member may have gone quiet
                # while the leader (or the write) kept everyone waiting.
                member.heartbeat_deadline = now_ms + member.session_timeout_ms

    def _propagate_assignment_error(self, error: int, now_ms: int, out: list[Action]) -> None:
        for member in self.members.values():
            member.assignment = b""
            if member.sync_waiter is not None:
                out.append(Reply(member.sync_waiter, SyncResult(error)))
                member.sync_waiter = None
                member.heartbeat_deadline = now_ms + member.session_timeout_ms
