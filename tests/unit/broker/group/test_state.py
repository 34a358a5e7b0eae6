"""The group state machine driven by simulated time: joins, syncs, leader election, fencing,
static membership, session and rebalance timeouts, and Kafka's error codes."""

from __future__ import annotations

import itertools
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from brook.broker.group.model import (
    GroupConfig,
    GroupState,
    JoinResult,
    Reply,
    StoreGroup,
    StoreKind,
    SyncResult,
)
from brook.broker.group.state import Group
from brook.broker.group.store import OffsetAndMetadata
from brook.protocol.errors import Errors

SESSION = 10_000
REBALANCE = 20_000
DELAY = 3_000


def subscription(*topics: str) -> bytes:
    """A ConsumerProtocolSubscription v0."""
    out = struct.pack(">hi", 0, len(topics))
    for t in topics:
        out += struct.pack(">h", len(t)) + t.encode()
    return out + struct.pack(">i", -1)


RANGE = [("range", subscription("t"))]


@dataclass(eq=False)
class W:
    """A parked request's reply slot."""

    name: str

    def __repr__(self) -> str:
        return f"W({self.name})"


@dataclass
class Harness:
    """One group, a clock, and the replies it has sent so far."""

    group: Group
    now: int = 0
    replies: dict[W, JoinResult | SyncResult] = field(default_factory=dict)
    stores: list[StoreGroup] = field(default_factory=list)
    auto_store: bool = True

    def run(self, actions: Sequence[object]) -> None:
        for action in actions:
            if isinstance(action, Reply):
                assert isinstance(action.waiter, W)
                assert action.waiter not in self.replies, f"{action.waiter} answered twice"
                self.replies[action.waiter] = action.result
            elif isinstance(action, StoreGroup):
                self.stores.append(action)
                if self.auto_store:
                    self.run(self.group.stored(action, Errors.NONE, self.now))

    def join(
        self,
        name: str,
        member_id: str = "",
        *,
        instance: str | None = None,
        protocols: list[tuple[str, bytes]] | None = None,
        protocol_type: str = "consumer",
        version: int = 5,
        session: int = SESSION,
        rebalance: int = REBALANCE,
        client_id: str | None = None,
    ) -> W:
        waiter = W(name)
        self.run(
            self.group.join(
                waiter,
                member_id=member_id,
                group_instance_id=instance,
                client_id=client_id or name,
                client_host="/127.0.0.1",
                session_timeout_ms=session,
                rebalance_timeout_ms=rebalance,
                protocol_type=protocol_type,
                protocols=RANGE if protocols is None else protocols,
                require_known_member_id=version >= 4 and instance is None,
                support_skip_assignment=version >= 9,
                now_ms=self.now,
            )
        )
        return waiter

    def sync(
        self,
        name: str,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        instance: str | None = None,
    ) -> W:
        waiter = W(name)
        self.run(
            self.group.sync(
                waiter,
                member_id=member_id,
                group_instance_id=instance,
                generation_id=generation,
                protocol_type="consumer",
                protocol_name="range",
                assignments=assignments or {},
                now_ms=self.now,
            )
        )
        return waiter

    def heartbeat(self, member_id: str, generation: int, instance: str | None = None) -> int:
        return self.group.heartbeat(
            member_id=member_id,
            group_instance_id=instance,
            generation_id=generation,
            now_ms=self.now,
        )

    def advance(self, ms: int) -> None:
        """Move the clock, running every deadline on the way as the shell's timer would."""
        target = self.now + ms
        while True:
            deadline = self.group.next_deadline()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self.run(self.group.tick(self.now))
        self.now = target
        self.run(self.group.tick(self.now))

    def result(self, waiter: W) -> JoinResult | SyncResult | None:
        return self.replies.get(waiter)

    def join_result(self, waiter: W) -> JoinResult:
        result = self.replies[waiter]
        assert isinstance(result, JoinResult)
        return result

    def sync_result(self, waiter: W) -> SyncResult:
        result = self.replies[waiter]
        assert isinstance(result, SyncResult)
        return result

    def join_known(self, name: str, **kwargs: Any) -> tuple[str, W]:
        """A v4+ dynamic join: MEMBER_ID_REQUIRED first, then the join with that id."""
        first = self.join(name, **kwargs)
        required = self.join_result(first)
        assert required.error == Errors.MEMBER_ID_REQUIRED
        return required.member_id, self.join(name, required.member_id, **kwargs)


def make(config: GroupConfig | None = None) -> Harness:
    ids = itertools.count(1)
    group = Group.create(
        "g",
        config or GroupConfig(initial_rebalance_delay_ms=DELAY),
        0,
        new_member_id=lambda prefix: f"{prefix}-{next(ids)}",
    )
    return Harness(group)


def stable_group(*names: str) -> tuple[Harness, dict[str, str]]:
    """A Stable group of dynamic members, the first the leader; returns member ids by name."""
    h = make()
    ids: dict[str, str] = {}
    waiters: dict[str, W] = {}
    for name in names:
        ids[name], waiters[name] = h.join_known(name)
    h.advance(DELAY * 4)
    gen = h.group.generation_id
    leader = h.join_result(waiters[names[0]]).leader_id
    assert leader == ids[names[0]]
    syncs = {n: h.sync(f"sync-{n}", ids[n], gen) for n in names if ids[n] != leader}
    syncs[names[0]] = h.sync(
        f"sync-{names[0]}", leader, gen, {mid: name.encode() for name, mid in ids.items()}
    )
    assert h.group.state is GroupState.STABLE
    for name in names:
        assert h.sync_result(syncs[name]).assignment == name.encode()
    return h, ids


# ---------------------------------------------------------------------- joining


def test_member_id_required_only_from_v4() -> None:
    h = make()
    old = h.join("v3", version=3)
    assert h.result(old) is None, "v0-v3 joins are parked at once, with a member id assigned"
    new = h.join("v4", version=4)
    result = h.join_result(new)
    assert result.error == Errors.MEMBER_ID_REQUIRED
    assert result.member_id.startswith("v4-")
    assert result.member_id in h.group.pending_members


def test_first_join_is_held_for_the_initial_delay() -> None:
    h = make()
    member_id, waiter = h.join_known("a")
    h.advance(DELAY - 1)
    assert h.result(waiter) is None
    assert h.group.state is GroupState.PREPARING_REBALANCE
    h.advance(1)
    result = h.join_result(waiter)
    assert result.error == Errors.NONE
    assert result.generation_id == 1
    assert result.leader_id == member_id
    assert result.protocol_name == "range"
    assert [m.member_id for m in result.members] == [member_id]
    assert h.group.state is GroupState.COMPLETING_REBALANCE


def test_initial_delay_extends_while_members_arrive() -> None:
    h = make()
    a, wa = h.join_known("a")
    h.advance(1000)
    b, wb = h.join_known("b")
    h.advance(DELAY - 1000)  # t=3000: b arrived during the delay, so it is extended
    assert h.result(wa) is None
    h.advance(DELAY - 1)
    assert h.result(wa) is None
    h.advance(1)  # t=6000
    ra, rb = h.join_result(wa), h.join_result(wb)
    assert ra.leader_id == a == rb.leader_id
    assert {m.member_id for m in ra.members} == {a, b}
    assert rb.members == ()
    assert ra.generation_id == rb.generation_id == 1


def test_initial_delay_is_bounded_by_the_rebalance_timeout() -> None:
    h = make()
    _, wa = h.join_known("a", rebalance=5000)
    for _ in range(5):
        h.advance(1000)
        h.join_known(f"late{h.now}", rebalance=5000)
    # 5000 ms rebalance timeout: 3000 initial + at most 2000 more, however many arrive.
    assert h.join_result(wa).error == Errors.NONE
    assert h.now <= 6000


def test_sync_distributes_the_leaders_assignment() -> None:
    h = make()
    a, wa = h.join_known("a")
    b, _wb = h.join_known("b")
    h.advance(DELAY * 2)
    gen = h.join_result(wa).generation_id
    follower = h.sync("sb", b, gen)
    assert h.result(follower) is None, "followers wait for the leader"
    leader = h.sync("sa", a, gen, {a: b"A", b: b"B"})
    assert h.sync_result(leader) == SyncResult(Errors.NONE, "consumer", "range", b"A")
    assert h.sync_result(follower).assignment == b"B"
    assert h.group.state is GroupState.STABLE
    assert [s.kind for s in h.stores] == [StoreKind.SYNC]
    assert {m.member_id: m.assignment for m in h.stores[0].value.members} == {a: b"A", b: b"B"}


def test_leader_sync_waits_for_the_write() -> None:
    h = make()
    h.auto_store = False
    a, wa = h.join_known("a")
    h.advance(DELAY)
    gen = h.join_result(wa).generation_id
    leader = h.sync("sa", a, gen, {a: b"A"})
    assert h.result(leader) is None
    assert h.group.state is GroupState.COMPLETING_REBALANCE
    h.run(h.group.stored(h.stores[0], Errors.NONE, h.now))
    assert h.sync_result(leader).assignment == b"A"
    assert h.group.state is GroupState.STABLE


def test_failed_write_of_the_assignment_rebalances() -> None:
    h = make()
    h.auto_store = False
    a, wa = h.join_known("a")
    h.advance(DELAY)
    leader = h.sync("sa", a, h.join_result(wa).generation_id, {a: b"A"})
    h.run(h.group.stored(h.stores[0], Errors.NOT_COORDINATOR, h.now))
    assert h.sync_result(leader).error == Errors.NOT_COORDINATOR
    assert h.group.state is GroupState.PREPARING_REBALANCE


def test_missing_assignments_are_empty() -> None:
    h = make()
    a, wa = h.join_known("a")
    b, _ = h.join_known("b")
    h.advance(DELAY * 2)
    gen = h.join_result(wa).generation_id
    sb = h.sync("sb", b, gen)
    h.sync("sa", a, gen, {a: b"A"})
    assert h.sync_result(sb) == SyncResult(Errors.NONE, "consumer", "range", b"")


def test_stable_group_answers_a_late_sync_with_the_assignment() -> None:
    h, ids = stable_group("a", "b")
    again = h.sync("again", ids["b"], h.group.generation_id)
    assert h.sync_result(again).assignment == b"b"


# ---------------------------------------------------------------------- rebalancing


def test_new_member_triggers_a_rebalance_without_initial_delay() -> None:
    h, ids = stable_group("a", "b")
    c, wc = h.join_known("c")
    assert h.group.state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(ids["a"], 1) == Errors.REBALANCE_IN_PROGRESS
    wa = h.join("a2", ids["a"])
    assert h.result(wc) is None
    wb = h.join("b2", ids["b"])
    # Everyone rejoined: no delay once the group is past generation 0.
    for w in (wa, wb, wc):
        assert h.join_result(w).generation_id == 2
    assert h.join_result(wa).leader_id == ids["a"]
    assert {m.member_id for m in h.join_result(wa).members} == {ids["a"], ids["b"], c}


def test_sync_and_commit_during_rebalance() -> None:
    h, ids = stable_group("a", "b")
    h.join_known("c")
    assert h.sync_result(h.sync("s", ids["a"], 1)).error == Errors.REBALANCE_IN_PROGRESS
    # Commits of the previous generation still go through while members rejoin.
    assert (
        h.group.validate_offset_commit(
            member_id=ids["a"], group_instance_id=None, generation_id=1, now_ms=h.now
        )
        == Errors.NONE
    )


def test_member_missing_the_rebalance_timeout_is_removed() -> None:
    h, ids = stable_group("a", "b")
    first = h.join("a2", ids["a"])  # leader rejoins: rebalance; b heartbeats but never rejoins
    assert h.group.state is GroupState.PREPARING_REBALANCE
    for _ in range(3):
        h.advance(REBALANCE // 4)
        assert h.heartbeat(ids["b"], 1) == Errors.REBALANCE_IN_PROGRESS
    h.advance(REBALANCE // 4 - 1)
    assert ids["b"] in h.group.members
    wa = h.join("a3", ids["a"])  # a retried JoinGroup replaces the parked one
    assert h.join_result(first).error == Errors.REBALANCE_IN_PROGRESS
    h.advance(1)
    result = h.join_result(wa)
    assert result.error == Errors.NONE
    assert result.generation_id == 2
    assert ids["b"] not in h.group.members
    assert h.heartbeat(ids["b"], 2) == Errors.UNKNOWN_MEMBER_ID


def test_leader_that_misses_the_rebalance_is_replaced() -> None:
    h, ids = stable_group("a", "b")
    wb = h.join("b2", ids["b"], protocols=[("range", subscription("t", "u"))])
    h.advance(REBALANCE)
    result = h.join_result(wb)
    assert result.leader_id == ids["b"]
    assert [m.member_id for m in result.members] == [ids["b"]]


def test_session_expiry_removes_a_silent_member() -> None:
    h, ids = stable_group("a", "b")
    h.advance(SESSION // 2)
    assert h.heartbeat(ids["a"], 1) == Errors.NONE
    h.advance(SESSION // 2 - 1)
    assert ids["b"] in h.group.members
    h.advance(1)
    # b never heartbeat: gone after its session timeout, and a must rejoin.
    assert ids["b"] not in h.group.members
    assert h.group.state is GroupState.PREPARING_REBALANCE
    assert h.heartbeat(ids["a"], 1) == Errors.REBALANCE_IN_PROGRESS
    wa = h.join("a2", ids["a"])
    assert h.join_result(wa).generation_id == 2


def test_commit_keeps_a_member_alive() -> None:
    h, ids = stable_group("a")
    for _ in range(4):
        h.advance(SESSION // 2)
        err = h.group.validate_offset_commit(
            member_id=ids["a"], group_instance_id=None, generation_id=1, now_ms=h.now
        )
        assert err == Errors.NONE
    assert h.group.state is GroupState.STABLE


def test_member_that_never_syncs_is_removed() -> None:
    h = make()
    a, wa = h.join_known("a")
    b, _wb = h.join_known("b")
    h.advance(DELAY * 2)
    gen = h.join_result(wa).generation_id
    h.sync("sa", a, gen, {a: b"A", b: b"B"})
    for _ in range(4):  # a heartbeats, b never sends SyncGroup
        h.advance(REBALANCE // 4)
        h.heartbeat(a, gen)
    assert b not in h.group.members
    assert h.group.state is GroupState.PREPARING_REBALANCE


def test_leave_rebalances_and_last_leave_empties_the_group() -> None:
    h, ids = stable_group("a", "b")
    top, errors, actions = h.group.leave([(ids["b"], None)], h.now)
    h.run(actions)
    assert (top, errors) == (Errors.NONE, [Errors.NONE])
    assert h.group.state is GroupState.PREPARING_REBALANCE
    wa = h.join("a2", ids["a"])
    assert h.join_result(wa).generation_id == 2
    h.sync("sa", ids["a"], 2, {ids["a"]: b"all"})
    _, errors, actions = h.group.leave([(ids["a"], None), ("nobody", None)], h.now)
    h.run(actions)
    assert errors == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert h.group.state is GroupState.EMPTY
    assert h.group.generation_id == 3
    assert h.stores[-1].kind is StoreKind.EMPTY
    assert h.stores[-1].value.members == ()


def test_leaving_member_parked_in_join_is_answered() -> None:
    h, ids = stable_group("a", "b")
    wa = h.join("a2", ids["a"])
    _, _, actions = h.group.leave([(ids["a"], None)], h.now)
    h.run(actions)
    assert h.join_result(wa).error == Errors.UNKNOWN_MEMBER_ID


def test_pending_member_expires_after_its_session_timeout() -> None:
    h = make()
    w = h.join("a")
    pending = h.join_result(w).member_id
    h.advance(SESSION)
    assert pending not in h.group.pending_members
    late = h.join("a2", pending)
    assert h.join_result(late).error == Errors.UNKNOWN_MEMBER_ID


def test_completing_rebalance_repeats_the_generation_to_a_rejoining_member() -> None:
    h = make()
    a, wa = h.join_known("a")
    b, wb = h.join_known("b")
    h.advance(DELAY * 2)
    again = h.join("b-again", b)
    assert h.join_result(again) == h.join_result(wb)
    lead_again = h.join("a-again", a)
    assert h.join_result(lead_again).members == h.join_result(wa).members
    assert h.group.state is GroupState.COMPLETING_REBALANCE


def test_changed_metadata_in_completing_rebalance_restarts_it() -> None:
    h = make()
    _a, wa = h.join_known("a")
    b, _ = h.join_known("b")
    h.advance(DELAY * 2)
    gen = h.join_result(wa).generation_id
    parked = h.sync("sb", b, gen)
    h.join("b2", b, protocols=[("range", subscription("t", "other"))])
    assert h.sync_result(parked).error == Errors.REBALANCE_IN_PROGRESS
    assert h.group.state is GroupState.PREPARING_REBALANCE


def test_follower_rejoin_with_same_metadata_keeps_the_group_stable() -> None:
    h, ids = stable_group("a", "b")
    w = h.join("b2", ids["b"])
    result = h.join_result(w)
    assert (result.error, result.generation_id, result.members) == (Errors.NONE, 1, ())
    assert h.group.state is GroupState.STABLE


def test_leader_rejoin_forces_a_rebalance() -> None:
    h, ids = stable_group("a", "b")
    h.join("a2", ids["a"])
    assert h.group.state is GroupState.PREPARING_REBALANCE


def test_protocol_selection_prefers_the_common_choice() -> None:
    h = make()
    rr = ("roundrobin", subscription("t"))
    rg = ("range", subscription("t"))
    _, wa = h.join_known("a", protocols=[rr, rg])
    _, _wb = h.join_known("b", protocols=[rg, rr])
    _, _wc = h.join_known("c", protocols=[rr])
    h.advance(DELAY * 3)
    assert h.join_result(wa).protocol_name == "roundrobin"


# ---------------------------------------------------------------------- fencing and errors


def test_generation_fencing() -> None:
    h, ids = stable_group("a", "b")
    assert h.heartbeat(ids["a"], 0) == Errors.ILLEGAL_GENERATION
    assert h.heartbeat(ids["a"], 2) == Errors.ILLEGAL_GENERATION
    assert h.sync_result(h.sync("s", ids["a"], 7)).error == Errors.ILLEGAL_GENERATION
    err = h.group.validate_offset_commit(
        member_id=ids["a"], group_instance_id=None, generation_id=0, now_ms=h.now
    )
    assert err == Errors.ILLEGAL_GENERATION


def test_unknown_members() -> None:
    h, _ = stable_group("a")
    assert h.heartbeat("ghost", 1) == Errors.UNKNOWN_MEMBER_ID
    assert h.sync_result(h.sync("s", "ghost", 1)).error == Errors.UNKNOWN_MEMBER_ID
    assert h.join_result(h.join("j", "ghost")).error == Errors.UNKNOWN_MEMBER_ID
    err = h.group.validate_offset_commit(
        member_id="ghost", group_instance_id=None, generation_id=1, now_ms=h.now
    )
    assert err == Errors.UNKNOWN_MEMBER_ID
    err = h.group.validate_offset_commit(
        member_id="", group_instance_id=None, generation_id=-1, now_ms=h.now
    )
    assert err == Errors.UNKNOWN_MEMBER_ID, "only members commit to a non-empty group"


def test_empty_group_answers_unknown_member_and_takes_plain_commits() -> None:
    h = make()
    assert h.heartbeat("x", 0) == Errors.UNKNOWN_MEMBER_ID
    assert h.sync_result(h.sync("s", "x", 0)).error == Errors.UNKNOWN_MEMBER_ID
    err = h.group.validate_offset_commit(
        member_id="", group_instance_id=None, generation_id=-1, now_ms=h.now
    )
    assert err == Errors.NONE


def test_commit_while_completing_rebalance() -> None:
    h = make()
    a, wa = h.join_known("a")
    h.advance(DELAY)
    gen = h.join_result(wa).generation_id
    err = h.group.validate_offset_commit(
        member_id=a, group_instance_id=None, generation_id=gen, now_ms=h.now
    )
    assert err == Errors.REBALANCE_IN_PROGRESS


def test_inconsistent_group_protocol() -> None:
    h, _ = stable_group("a")
    w = h.join("other-type", protocol_type="connect")
    assert h.join_result(w).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    w = h.join("other-proto", protocols=[("sticky", b"")], version=3)
    assert h.join_result(w).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    empty = make()
    w = empty.join("none", protocols=[])
    assert empty.join_result(w).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    w = empty.join("blank", protocol_type="")
    assert empty.join_result(w).error == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_inconsistent_protocol_on_sync() -> None:
    h, ids = stable_group("a")
    waiter = W("s")
    h.run(
        h.group.sync(
            waiter,
            member_id=ids["a"],
            group_instance_id=None,
            generation_id=1,
            protocol_type="consumer",
            protocol_name="roundrobin",
            assignments={},
            now_ms=h.now,
        )
    )
    assert h.sync_result(waiter).error == Errors.INCONSISTENT_GROUP_PROTOCOL


def test_invalid_session_timeout() -> None:
    h = make(GroupConfig(min_session_timeout_ms=6000, max_session_timeout_ms=30000))
    for session in (5999, 30001):
        w = h.join(f"s{session}", session=session)
        result = h.join_result(w)
        assert (result.error, result.member_id) == (Errors.INVALID_SESSION_TIMEOUT, "")
    assert h.result(h.join("ok", session=6000, version=3)) is None


def test_group_max_size_reached() -> None:
    h = make(GroupConfig(max_size=2, initial_rebalance_delay_ms=DELAY))
    a, wa = h.join_known("a")
    b, _wb = h.join_known("b")
    c = h.join("c", version=3)
    result = h.join_result(c)
    assert (result.error, result.member_id) == (Errors.GROUP_MAX_SIZE_REACHED, "")
    h.advance(DELAY * 2)
    assert h.join_result(wa).error == Errors.NONE
    h.sync("sa", a, 1, {})
    h.sync("sb", b, 1, {})
    late = h.join("d", version=3)
    assert h.join_result(late).error == Errors.GROUP_MAX_SIZE_REACHED
    assert h.group.state is GroupState.STABLE


def test_dead_group_sends_members_elsewhere() -> None:
    h, ids = stable_group("a", "b")
    wa = h.join("a2", ids["a"])
    h.run(h.group.unload(h.now))
    assert h.join_result(wa).error == Errors.NOT_COORDINATOR
    assert h.group.state is GroupState.DEAD
    assert h.join_result(h.join("late")).error == Errors.COORDINATOR_NOT_AVAILABLE
    assert h.heartbeat(ids["a"], 1) == Errors.COORDINATOR_NOT_AVAILABLE
    assert h.sync_result(h.sync("s", ids["a"], 1)).error == Errors.COORDINATOR_NOT_AVAILABLE
    assert h.group.next_deadline() is None


def test_unload_fails_parked_syncs() -> None:
    h = make()
    _a, wa = h.join_known("a")
    b, _ = h.join_known("b")
    h.advance(DELAY * 2)
    parked = h.sync("sb", b, h.join_result(wa).generation_id)
    h.run(h.group.unload(h.now))
    assert h.sync_result(parked).error == Errors.NOT_COORDINATOR


def test_delete_only_empty_groups() -> None:
    h, ids = stable_group("a")
    assert h.group.delete(h.now) == Errors.NON_EMPTY_GROUP
    _, _, actions = h.group.leave([(ids["a"], None)], h.now)
    h.run(actions)
    assert h.group.delete(h.now) == Errors.NONE
    assert h.group.state is GroupState.DEAD
    assert h.group.delete(h.now) == Errors.GROUP_ID_NOT_FOUND


# ---------------------------------------------------------------------- static membership


def static_group(*instances: str, version: int = 5) -> tuple[Harness, dict[str, str]]:
    h = make()
    waiters = {i: h.join(f"join-{i}", instance=i, version=version) for i in instances}
    h.advance(DELAY * 2)
    ids = {i: h.join_result(w).member_id for i, w in waiters.items()}
    leader = h.join_result(waiters[instances[0]]).leader_id
    assert leader == ids[instances[0]]
    for i in instances[1:]:
        h.sync(f"sync-{i}", ids[i], 1, instance=i)
    h.sync(f"sync-{instances[0]}", leader, 1, {m: i.encode() for i, m in ids.items()}, instances[0])
    assert h.group.state is GroupState.STABLE
    return h, ids


def test_static_members_join_without_member_id_required() -> None:
    h = make()
    w = h.join("s", instance="i1", version=5)
    assert h.result(w) is None
    h.advance(DELAY)
    assert h.join_result(w).member_id.startswith("i1-")
    assert h.group.static_members == {"i1": h.join_result(w).member_id}


def test_static_member_rejoin_keeps_the_group_stable_and_fences_the_old_id() -> None:
    h, ids = static_group("i1", "i2")
    w = h.join("i2-again", instance="i2")
    result = h.join_result(w)
    assert result.error == Errors.NONE
    assert result.member_id != ids["i2"]
    assert result.generation_id == 1
    assert result.leader_id == ids["i1"]
    assert h.group.state is GroupState.STABLE
    assert h.stores[-1].kind is StoreKind.STATIC_REJOIN
    # The new id keeps the old assignment; the old id is fenced.
    sync = h.sync("s", result.member_id, 1, instance="i2")
    assert h.sync_result(sync).assignment == b"i2"
    assert h.heartbeat(ids["i2"], 1, instance="i2") == Errors.FENCED_INSTANCE_ID
    assert h.heartbeat(result.member_id, 1, instance="i2") == Errors.NONE


def test_static_leader_rejoin_before_v9_is_not_told_it_leads() -> None:
    h, ids = static_group("i1", "i2")
    w = h.join("i1-again", instance="i1", version=8)
    result = h.join_result(w)
    assert result.error == Errors.NONE
    assert result.member_id != ids["i1"]
    # The previous leader id comes back, so the client does not run an assignment that a
    # Stable group would never hand out; the group still knows who leads.
    assert result.leader_id == ids["i1"]
    assert (result.members, result.skip_assignment) == ((), False)
    assert h.group.leader_id == result.member_id
    assert h.group.state is GroupState.STABLE


def test_static_leader_rejoin_v9_skips_assignment() -> None:
    h, ids = static_group("i1", "i2", version=9)
    w = h.join("i1-again", instance="i1", version=9)
    result = h.join_result(w)
    assert result.leader_id == result.member_id != ids["i1"]
    assert result.skip_assignment is True
    assert {m.group_instance_id for m in result.members} == {"i1", "i2"}
    assert h.group.state is GroupState.STABLE


def test_static_rejoin_with_new_protocol_rebalances() -> None:
    h = make()
    both = [("range", b""), ("roundrobin", b"")]
    w = h.join("i1", instance="i1", protocols=both)
    h.advance(DELAY)
    member_id = h.join_result(w).member_id
    h.sync("s", member_id, 1, {member_id: b"x"}, "i1")
    assert h.group.protocol_name == "range"
    again = h.join("i1-again", instance="i1", protocols=both[::-1])
    # The vote changes the group's protocol, so the rejoin is a rebalance (done at once: the
    # only member is back).
    result = h.join_result(again)
    assert (result.generation_id, result.protocol_name) == (2, "roundrobin")
    assert h.group.state is GroupState.COMPLETING_REBALANCE


def test_static_rejoin_with_unsupported_protocol_is_inconsistent() -> None:
    h, _ = static_group("i1", "i2")
    w = h.join("i2-again", instance="i2", protocols=[("roundrobin", b"")])
    assert h.join_result(w).error == Errors.INCONSISTENT_GROUP_PROTOCOL
    assert h.group.state is GroupState.STABLE


def test_static_rejoin_fences_the_parked_duplicate() -> None:
    h, ids = static_group("i1", "i2")
    parked = h.join("i1-rejoin", ids["i1"], instance="i1")  # leader join: rebalance
    assert h.group.state is GroupState.PREPARING_REBALANCE
    dup = h.join("i1-dup", instance="i1")
    assert h.join_result(parked).error == Errors.FENCED_INSTANCE_ID
    assert h.result(dup) is None
    h.join("i2-rejoin", ids["i2"], instance="i2")
    assert h.join_result(dup).error == Errors.NONE


def test_static_member_with_wrong_member_id_is_fenced() -> None:
    h, ids = static_group("i1")
    w = h.join("imposter", "i1-999", instance="i1")
    assert h.join_result(w).error == Errors.FENCED_INSTANCE_ID
    w = h.join("unknown-instance", "x-1", instance="nope")
    assert h.join_result(w).error == Errors.UNKNOWN_MEMBER_ID
    assert h.sync_result(h.sync("s", "i1-999", 1, instance="i1")).error == (
        Errors.FENCED_INSTANCE_ID
    )
    assert h.heartbeat(ids["i1"], 1, instance="i1") == Errors.NONE


def test_absent_static_member_keeps_its_seat_through_a_rebalance() -> None:
    h = make()
    w1 = h.join("i1", instance="i1")
    w2 = h.join("i2", instance="i2", session=10 * REBALANCE)
    h.advance(DELAY * 2)
    i1, i2 = h.join_result(w1).member_id, h.join_result(w2).member_id
    h.sync("s2", i2, 1, instance="i2")
    h.sync("s1", i1, 1, {i1: b"1", i2: b"2"}, "i1")
    w = h.join("i1-rejoin", i1, instance="i1")  # the leader asks for a rebalance
    for _ in range(4):
        h.advance(REBALANCE // 4)
        h.heartbeat(i1, 1, instance="i1")
    # The rebalance timeout passed without i2: a dynamic member would be dropped, a static
    # one keeps its seat and only leaves by its session timeout.
    result = h.join_result(w)
    assert result.generation_id == 2
    assert {m.member_id for m in result.members} == {i1, i2}
    assert h.group.static_members == {"i1": i1, "i2": i2}


def test_static_member_removed_by_session_timeout() -> None:
    h, ids = static_group("i1", "i2")
    for _ in range(4):
        h.advance(SESSION // 3)
        h.heartbeat(ids["i1"], h.group.generation_id, instance="i1")
    assert ids["i2"] not in h.group.members
    assert "i2" not in h.group.static_members


def test_failed_static_rejoin_write_restores_the_old_member() -> None:
    h, ids = static_group("i1", "i2")
    h.auto_store = False
    w = h.join("i2-again", instance="i2")
    h.run(h.group.stored(h.stores[-1], Errors.COORDINATOR_NOT_AVAILABLE, h.now))
    result = h.join_result(w)
    assert (result.error, result.member_id) == (Errors.COORDINATOR_NOT_AVAILABLE, "")
    assert h.group.static_members["i2"] == ids["i2"]
    assert h.heartbeat(ids["i2"], 1, instance="i2") == Errors.NONE


def test_admin_removes_a_static_member_by_instance_id() -> None:
    h, ids = static_group("i1", "i2")
    _top, errors, actions = h.group.leave([("", "i2"), ("", "nobody")], h.now)
    h.run(actions)
    assert errors == [Errors.NONE, Errors.UNKNOWN_MEMBER_ID]
    assert ids["i2"] not in h.group.members


def test_leave_with_wrong_instance_is_fenced() -> None:
    h, ids = static_group("i1", "i2")
    _, errors, _ = h.group.leave([(ids["i1"], "i2")], h.now)
    assert errors == [Errors.FENCED_INSTANCE_ID]


# ---------------------------------------------------------------------- persistence and offsets


def test_loaded_group_resumes_stable_and_expires_absent_members() -> None:
    h, ids = stable_group("a", "b")
    value = h.group.metadata_value()
    loaded = Group.from_metadata("g", h.group.config, value, h.now)
    assert loaded.state is GroupState.STABLE
    assert loaded.generation_id == 1
    assert loaded.leader_id == ids["a"]
    assert loaded.subscribed == {"t"}
    assert {m.member_id: m.assignment for m in loaded.members.values()} == {
        ids["a"]: b"a",
        ids["b"]: b"b",
    }
    assert (
        loaded.heartbeat(member_id=ids["a"], group_instance_id=None, generation_id=1, now_ms=h.now)
        == Errors.NONE
    )
    h2 = Harness(loaded, now=h.now)
    h2.advance(SESSION * 2)
    assert loaded.state is GroupState.EMPTY
    assert h2.stores[-1].kind is StoreKind.EMPTY


def test_empty_group_offsets_expire_from_when_it_emptied() -> None:
    h, ids = stable_group("a")
    h.group.offsets.apply(("t", 0), OffsetAndMetadata(5, -1, "", commit_timestamp=0), 0)
    h.advance(1000)
    _, _, actions = h.group.leave([(ids["a"], None)], h.now)
    h.run(actions)
    emptied = h.now
    assert h.group.expire_offsets(emptied + 999, 1000) == []
    assert h.group.expire_offsets(emptied + 1000, 1000) == [("t", 0)]
    assert h.group.expire_if_empty(emptied + 1000)
    assert h.group.state is GroupState.DEAD


def test_stable_group_keeps_offsets_of_subscribed_topics() -> None:
    h, _ = stable_group("a")
    h.group.offsets.apply(("t", 0), OffsetAndMetadata(1, commit_timestamp=0), 0)
    h.group.offsets.apply(("old", 0), OffsetAndMetadata(1, commit_timestamp=0), 1)
    assert h.group.expire_offsets(10**9, 1000) == [("old", 0)]
    assert h.group.offsets.get(("t", 0)) is not None


def test_simple_group_offsets_expire_per_commit_and_explicit_expiry() -> None:
    h = make()
    h.group.offsets.apply(("t", 0), OffsetAndMetadata(1, commit_timestamp=100), 0)
    h.group.offsets.apply(
        ("t", 1), OffsetAndMetadata(1, commit_timestamp=0, expire_timestamp=50), 1
    )
    assert h.group.expire_offsets(60, 1000) == [("t", 1)]
    assert h.group.expire_offsets(1099, 1000) == []
    assert h.group.expire_offsets(1100, 1000) == [("t", 0)]


def test_pending_commits_do_not_expire() -> None:
    h = make()
    h.group.offsets.apply(("t", 0), OffsetAndMetadata(1, commit_timestamp=0), 0)
    commit = {("t", 0): OffsetAndMetadata(2, commit_timestamp=5)}
    h.group.offsets.begin_commit(commit)
    assert h.group.expire_offsets(10**9, 1) == []
    assert not h.group.expire_if_empty(10**9)
    h.group.offsets.end_commit(commit, 7)
    assert h.group.offsets.get(("t", 0)) == OffsetAndMetadata(2, commit_timestamp=5)
    assert h.group.expire_offsets(10**9, 1) == [("t", 0)]
    assert h.group.expire_if_empty(10**9)


def test_offsets_apply_in_log_order() -> None:
    h = make()
    cache = h.group.offsets
    cache.apply(("t", 0), OffsetAndMetadata(9), 10)
    cache.apply(("t", 0), OffsetAndMetadata(3), 4)  # an older record arriving late
    assert cache.get(("t", 0)) == OffsetAndMetadata(9)
    cache.apply(("t", 0), None, 11)
    assert cache.get(("t", 0)) is None


def test_offset_delete_rules() -> None:
    h, _ = stable_group("a")
    err, per = h.group.offset_delete_errors([("t", 0), ("other", 0)])
    assert err == Errors.NONE
    assert per == {("t", 0): Errors.GROUP_SUBSCRIBED_TO_TOPIC, ("other", 0): Errors.NONE}
    other = make()
    other.join("c", protocol_type="connect", version=3)
    assert other.group.offset_delete_errors([("t", 0)])[0] == Errors.NON_EMPTY_GROUP


def test_describe() -> None:
    h, ids = stable_group("a", "b")
    d = h.group.describe()
    assert (d.state, d.protocol_type, d.protocol) == ("Stable", "consumer", "range")
    assert {m.member_id: m.assignment for m in d.members} == {ids["a"]: b"a", ids["b"]: b"b"}
    h.join_known("c")
    d = h.group.describe()
    assert (d.state, d.protocol) == ("PreparingRebalance", "")
    assert all(m.metadata == b"" and m.assignment == b"" for m in d.members)


@pytest.mark.parametrize("seed", range(20))
def test_random_traffic_keeps_invariants(seed: int) -> None:
    """Members joining, syncing, heartbeating, leaving and going silent in random order never
    break the group's bookkeeping, and every parked request is answered at most once."""
    import random

    rng = random.Random(seed)
    h = make()
    known: dict[str, str] = {}
    for step in range(300):
        name = f"m{rng.randrange(6)}"
        op = rng.random()
        member_id = known.get(name, "")
        if op < 0.3:
            w = h.join(f"{name}-j{step}", member_id, version=rng.choice([3, 4, 9]))
            result = h.result(w)
            if isinstance(result, JoinResult) and result.error in (
                Errors.MEMBER_ID_REQUIRED,
                Errors.NONE,
            ):
                known[name] = result.member_id
        elif op < 0.5 and member_id:
            h.sync(
                f"{name}-s{step}",
                member_id,
                h.group.generation_id,
                {m: b"x" for m in h.group.members},
            )
        elif op < 0.8 and member_id:
            h.heartbeat(member_id, h.group.generation_id)
        elif op < 0.85 and member_id:
            h.run(h.group.leave([(member_id, None)], h.now)[2])
            known.pop(name)
        h.advance(rng.randrange(0, 4000))
        g = h.group
        assert g.leader_id is None or g.leader_id in g.members
        assert (g.leader_id is None) == (not g.members) or g.state is GroupState.EMPTY
        assert set(g.static_members.values()) <= set(g.members)
        assert g.pending_sync <= set(g.members)
        if g.state is GroupState.EMPTY:
            assert not g.members
        if g.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            assert g.protocol_name is not None and g.members


def test_unload_answers_a_static_rejoin_waiting_for_its_write() -> None:
    h, _ = static_group("i1", "i2")
    h.auto_store = False
    w = h.join("i2-again", instance="i2")
    h.run(h.group.unload(h.now))
    assert h.join_result(w).error == Errors.NOT_COORDINATOR
    h.run(h.group.stored(h.stores[-1], Errors.NONE, h.now))  # the write lands afterwards
