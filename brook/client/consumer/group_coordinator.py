"""The consumer's group coordinator (Java's ConsumerCoordinator): the asyncio shell around
``membership.Membership``. It finds the group's coordinator and keeps a connection of its own
to it, runs JoinGroup / SyncGroup in a background task (the leader assigns with the chosen
assignor), heartbeats in another, and does the rest inside the consumer's poll(): revoking
and assigning partitions with the rebalance listener, auto-commits, and the commits and
committed-offset lookups the consumer asks for.

poll() never waits for a rebalance: a cooperative member keeps reading the partitions it
keeps while the group rebalances, as KIP-429 intends.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from ..cluster import BrokerNode, TopicPartition
from ..connection import BrokerConnection, NetworkError, RequestTimeoutError
from ..group_requests import (
    OFFSET_COMMIT_MAX,
    OFFSET_FETCH_MAX,
    connect_coordinator,
    find_coordinator,
    offset_commit_errors,
    offset_commit_request,
    offset_fetch_request,
    parse_offset_fetch,
)
from ..network import backoff_ms
from .assignors import (
    Assignor,
    GroupMember,
    RebalanceProtocol,
    rebalance_protocol,
    resolve_assignors,
)
from .consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from .coordinator import CommitCallback, CoordinatorContext, OffsetAndMetadata, consumed_offsets
from .errors import CommitFailedError, RebalanceInProgressError
from .membership import NO_GENERATION, Generation, Membership, MemberState, Reaction

__all__ = ["ConsumerGroupCoordinator"]

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "consumer"
# Java's JOIN_GROUP_TIMEOUT_LAPSE: a JoinGroup may be parked for the whole rebalance timeout.
JOIN_TIMEOUT_LAPSE_MS = 5000
_FETCH_RETRIABLE = frozenset(
    {
        Errors.COORDINATOR_LOAD_IN_PROGRESS,
        Errors.COORDINATOR_NOT_AVAILABLE,
        Errors.NOT_COORDINATOR,
        Errors.UNSTABLE_OFFSET_COMMIT,
        Errors.REQUEST_TIMED_OUT,
    }
)
_POLL_TIMEOUT_REASON = (
    "consumer poll timeout has expired. This means the time between subsequent calls to "
    "poll() was longer than the configured max.poll.interval.ms, which typically implies "
    "that the poll loop is spending too much time processing messages. You can address this "
    "either by increasing max.poll.interval.ms or by reducing the maximum size of batches "
    "returned in poll() with max.poll.records."
)


class _Retriable(Exception):
    def __init__(self, cause: KafkaError) -> None:
        super().__init__(str(cause))
        self.cause = cause


@dataclass(frozen=True)
class _Joined:
    """A finished JoinGroup + SyncGroup, waiting for poll() to install it."""

    generation: Generation
    assignment: bytes
    topics: frozenset[str]


class ConsumerGroupCoordinator:
    """Group membership, commits and committed offsets for one consumer with a group.id."""

    def __init__(self, context: CoordinatorContext) -> None:
        cfg = context.config
        self._network = context.network
        self._subs = context.subscriptions
        self._wake = context.wake
        self.group_id: str = cfg["group.id"]
        self.assignors: list[Assignor] = resolve_assignors(cfg["partition.assignment.strategy"])
        self.protocol = rebalance_protocol(self.assignors)
        self._request_timeout_ms = int(cfg["request.timeout.ms"])
        self._backoff = (int(cfg["retry.backoff.ms"]), int(cfg["retry.backoff.max.ms"]))
        self._auto_commit = bool(cfg["enable.auto.commit"])
        self._auto_commit_interval_ms = int(cfg["auto.commit.interval.ms"])
        self._rack = cfg["client.rack"] or None
        rebalance_timeout = int(cfg["max.poll.interval.ms"])
        now = self._now()
        self.membership = Membership(
            group_id=self.group_id,
            group_instance_id=cfg["group.instance.id"],
            session_timeout_ms=int(cfg["session.timeout.ms"]),
            heartbeat_interval_ms=int(cfg["heartbeat.interval.ms"]),
            rebalance_timeout_ms=rebalance_timeout,
            retry_backoff_ms=self._backoff[0],
            now_ms=now,
        )
        self._join_timeout_ms = max(
            self._request_timeout_ms, rebalance_timeout + JOIN_TIMEOUT_LAPSE_MS
        )
        self._next_auto_commit = now + self._auto_commit_interval_ms
        self._node: BrokerNode | None = None
        self._conn: BrokerConnection | None = None
        self._lookup: asyncio.Task[None] | None = None
        self._join: asyncio.Task[None] | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self._heartbeat_wake = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        self._commits: set[asyncio.Task[Any]] = set()
        self._joined: _Joined | None = None
        self._joined_topics: frozenset[str] = frozenset()
        self._snapshot: dict[str, int] | None = None  # the leader's view at its assignment
        # Until when the commit before a rejoin keeps being retried (Java's joinPrepareTimer).
        self._join_prepare_until: float | None = None
        self._errors: list[BaseException] = []
        self._closed = False

    # -- small helpers ---------------------------------------------------------------------

    @staticmethod
    def _now() -> float:
        return asyncio.get_running_loop().time() * 1000

    def _backoff_s(self, attempt: int) -> float:
        return backoff_ms(self._backoff[0], self._backoff[1], attempt) / 1000

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _raise_pending(self) -> None:
        m = self.membership
        if m.fatal is not None:
            raise m.fatal
        if m.error is not None:
            error, m.error = m.error, None
            raise error
        if self._errors:
            error = self._errors.pop(0)
            raise error

    def _assignor(self, name: str | None) -> Assignor | None:
        return next((a for a in self.assignors if a.name == name), None)

    # -- the coordinator -------------------------------------------------------------------

    def _ensure_lookup(self) -> None:
        if self._closed or (self._conn is not None and self._conn.ready):
            return
        if self._lookup is None or self._lookup.done():
            self._lookup = self._spawn(self._find_coordinator())

    async def _find_coordinator(self) -> None:
        attempt = 0
        while not self._closed:
            try:
                node = await find_coordinator(self._network, self.group_id)
                conn = await connect_coordinator(self._network, node)
            except KafkaError as exc:
                if exc.code in (Errors.GROUP_AUTHORIZATION_FAILED, Errors.INVALID_GROUP_ID):
                    self.membership.fatal = exc
                    self._wake()
                    return
                log.debug("group %s: coordinator lookup failed: %s", self.group_id, exc)
                await asyncio.sleep(self._backoff_s(attempt))
                attempt += 1
                continue
            if self._closed:
                conn.close()
                return
            log.info(
                "group %s: discovered group coordinator %s:%s (id: %s)",
                self.group_id,
                node.host,
                node.port,
                node.node_id,
            )
            self._conn = conn
            self._node = node
            self.membership.coordinator_found(self._now())
            self._heartbeat_wake.set()
            self._wake()
            return

    def _coordinator_lost(self, reason: str) -> None:
        """Java's markCoordinatorUnknown: drop the connection (failing what is in flight on
        it) and find the coordinator again."""
        conn, self._conn = self._conn, None
        if conn is not None:
            log.info(
                "group %s: group coordinator %s is unavailable or invalid due to cause: %s. "
                "Rediscovery will be attempted.",
                self.group_id,
                conn.address,
                reason,
            )
            conn.close()
        self._ensure_lookup()

    async def _coordinator_conn(self, deadline: float) -> BrokerConnection:
        """The coordinator connection, waiting for a lookup until ``deadline`` (loop time, s)."""
        loop = asyncio.get_running_loop()
        while True:
            self._raise_pending()
            conn = self._conn
            if conn is not None and conn.ready:
                return conn
            self._ensure_lookup()
            assert self._lookup is not None
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise KafkaError(
                    Errors.COORDINATOR_NOT_AVAILABLE,
                    f"the coordinator of group {self.group_id} was not found in time",
                )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(self._lookup), remaining)

    async def _send(self, conn: BrokerConnection, api: int, body: Any, **kw: Any) -> Any:
        try:
            return await conn.send(api, body, **kw)
        except (NetworkError, RequestTimeoutError) as exc:
            if self._conn is conn:
                self._coordinator_lost(str(exc))
            raise

    # -- poll: rebalances happen here ------------------------------------------------------

    async def poll(self, now_ms: float, timeout_ms: float) -> None:
        m = self.membership
        deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
        m.polled(now_ms)
        self._raise_pending()
        if self._subs.has_auto_assignment:
            if self._heartbeat is None or self._heartbeat.done():
                self._heartbeat = self._spawn(self._heartbeat_loop())
            self._ensure_lookup()
            if self._joined is not None:
                joined, self._joined = self._joined, None
                await self._join_complete(joined)
            if m.state is MemberState.STABLE:
                self._check_rejoin_triggers()
            if (
                m.rejoin_needed
                and (self._join is None or self._join.done())
                and self._conn is not None
                and self._conn.ready
            ):
                if m.needs_join_prepare:
                    if not await self._join_prepare(deadline):
                        return  # the commit before rejoining did not fit: the next poll
                    m.needs_join_prepare = False
                self._join = self._spawn(self._join_group())
        self._maybe_auto_commit(now_ms)
        self._raise_pending()

    def _check_rejoin_triggers(self) -> None:
        m = self.membership
        if frozenset(self._subs.topics) != self._joined_topics:
            m.request_rejoin("the subscription changed since the group was joined")
        if m.is_leader and self._snapshot is not None:
            # The leader watches every topic of the group for partition changes.
            self._network.add_topics(self._snapshot)
            current = self._partition_counts(self._snapshot)
            if current != self._snapshot:
                m.request_rejoin(
                    f"the assignment metadata has changed from {self._snapshot} to {current}"
                )

    def _partition_counts(self, topics: Iterable[str]) -> dict[str, int]:
        cluster = self._network.cluster
        return {t: len(cluster.partitions_for(t)) for t in sorted(topics)}

    async def _join_prepare(self, deadline: float) -> bool:
        """Java's onJoinPrepare: commit what was consumed, then give up partitions (all of
        them for an eager member, the unsubscribed ones for a cooperative one, and all of them
        as lost after the member was dropped from the group). False when the commit ran out
        of the poll's time: nothing was given up, the next poll tries again."""
        m = self.membership
        offsets = self._consumed() if self._auto_commit else {}
        if offsets and m.generation_if_stable() is not None:
            loop = asyncio.get_running_loop()
            if self._join_prepare_until is None:
                self._join_prepare_until = loop.time() + m.rebalance_timeout_ms / 1000
            give_up = self._join_prepare_until
            try:
                await self._commit_until(offsets, min(deadline, give_up))
            except KafkaError as exc:
                # As Java: a retriable failure is tried again at the next poll() until the
                # rebalance timeout; after that, or on any other failure, the member rejoins.
                if exc.retriable and loop.time() < give_up:
                    return False
                log.warning(
                    "group %s: committing offsets before rejoining the group failed "
                    "(rejoining anyway): %s",
                    self.group_id,
                    exc,
                )
        self._join_prepare_until = None
        owned = set(self._subs.assignment)
        self._snapshot = None
        if m.generation == NO_GENERATION:
            if owned:
                log.info(
                    "group %s: giving away all assigned partitions as lost since "
                    "generation/memberID has been reset",
                    self.group_id,
                )
                await self._invoke("on_partitions_lost", owned)
                self._subs.assign_from_subscribed([])
        elif self.protocol is RebalanceProtocol.EAGER:
            await self._invoke("on_partitions_revoked", owned)
            self._subs.assign_from_subscribed([])
        else:
            gone = {tp for tp in owned if tp.topic not in self._subs.topics}
            if gone:
                await self._invoke("on_partitions_revoked", gone)
                self._subs.assign_from_subscribed(sorted(owned - gone))
        return True

    async def _join_complete(self, joined: _Joined) -> None:
        """Java's onJoinComplete: install the assignment of the generation just joined."""
        m = self.membership
        if joined.generation != m.generation or m.state is not MemberState.STABLE:
            return  # the member was reset or rejoined since
        try:
            assignment = decode_assignment(joined.assignment)
        except ConsumerProtocolError as exc:
            m.request_rejoin(f"the assignment could not be decoded: {exc}")
            return
        new = set(assignment.partitions)
        if any(tp.topic not in self._subs.topics for tp in new):
            m.request_rejoin(
                "received assignment does not match the current subscription; it is likely "
                "that the subscription has changed since we joined the group"
            )
            return
        assignor = self._assignor(joined.generation.protocol_name)
        if assignor is not None:
            assignor.on_assignment(assignment, joined.generation.generation_id)
        self._joined_topics = joined.topics
        owned = set(self._subs.assignment)
        if self.protocol is RebalanceProtocol.COOPERATIVE:
            revoked = owned - new
            if revoked:
                if self._auto_commit:
                    positions = self._consumed()
                    await self._commit_quietly(
                        {tp: positions[tp] for tp in revoked if tp in positions},
                        "before revoking partitions",
                    )
                await self._invoke("on_partitions_revoked", revoked)
                m.request_rejoin("need to revoke partitions and re-join")
        self._subs.assign_from_subscribed(sorted(new))
        m.needs_join_prepare = True
        self._next_auto_commit = self._now() + self._auto_commit_interval_ms
        log.info(
            "group %s: member %s of generation %d assigned %s",
            self.group_id,
            joined.generation.member_id,
            joined.generation.generation_id,
            sorted(new),
        )
        await self._invoke("on_partitions_assigned", new - owned)

    async def _invoke(self, method: str, partitions: Iterable[TopicPartition]) -> None:
        """Call the rebalance listener (a plain or async method); what it raises comes out of
        poll() once the rebalance step is done, as in Java."""
        listener = self._subs.listener
        if listener is None:
            return
        fn = getattr(listener, method, None)
        if fn is None and method == "on_partitions_lost":
            fn = getattr(listener, "on_partitions_revoked", None)  # Java's default
        if fn is None:
            return
        try:
            result = fn(sorted(partitions))
            if inspect.isawaitable(result):
                await result
        except Exception as exc:
            log.error("group %s: rebalance listener %s failed: %r", self.group_id, method, exc)
            self._errors.append(exc)

    # -- JoinGroup and SyncGroup -----------------------------------------------------------

    def _join_body(self, topics: Sequence[str]) -> dict[str, Any]:
        m = self.membership
        owned = tuple(sorted(self._subs.assignment))
        protocols = [
            {
                "name": a.name,
                "metadata": encode_subscription(
                    Subscription(
                        tuple(topics),
                        a.subscription_user_data(topics),
                        owned,
                        m.generation.generation_id,
                        self._rack,
                    )
                ),
            }
            for a in self.assignors
        ]
        return {
            "group_id": self.group_id,
            "session_timeout": m.session_timeout_ms,
            "rebalance_timeout": m.rebalance_timeout_ms,
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocols": protocols,
            "reason": m.rejoin_reason,
        }

    async def _join_group(self) -> None:
        """JoinGroup then SyncGroup, again on REJOIN reactions, until an assignment comes (left
        in ``_joined`` for poll), the coordinator is lost or the error is fatal."""
        m = self.membership
        attempt = 0
        try:
            while not self._closed:
                conn = self._conn
                if conn is None or not conn.ready:
                    m.request_rejoin("the coordinator is unknown")
                    return
                topics = sorted(self._subs.topics)
                body = self._join_body(topics)
                m.join_started()
                try:
                    resp = await self._send(
                        conn, ApiKey.JOIN_GROUP, body, timeout_ms=self._join_timeout_ms
                    )
                except KafkaError as exc:
                    m.request_rejoin(f"JoinGroup failed: {exc}")
                    return
                reaction = m.on_join_response(
                    int(resp.error_code),
                    generation_id=int(resp.generation_id),
                    member_id=resp.member_id or "",
                    protocol_name=resp.protocol_name,
                    leader_id=resp.leader or "",
                    now_ms=self._now(),
                )
                if reaction is Reaction.PROCEED:
                    self._heartbeat_wake.set()
                    reaction = await self._sync_group(conn, resp, frozenset(topics))
                if reaction is Reaction.PROCEED:
                    return
                if reaction is Reaction.REJOIN:
                    if m.needs_join_prepare and self._subs.assignment:
                        return  # poll() gives up the partitions first
                    continue
                if reaction is Reaction.RETRY:
                    m.request_rejoin("retrying JoinGroup")
                    await asyncio.sleep(self._backoff_s(attempt))
                    attempt += 1
                    continue
                if reaction is Reaction.COORDINATOR_LOST:
                    m.request_rejoin("the coordinator moved")
                    self._coordinator_lost(f"JoinGroup/SyncGroup answered {resp.error_code}")
                return
        except asyncio.CancelledError:
            raise
        except KafkaError as exc:
            m.request_rejoin(f"rebalance failed: {exc}")
        except Exception as exc:
            log.exception("group %s: rebalance failed", self.group_id)
            m.request_rejoin(f"rebalance failed: {exc!r}")
            self._errors.append(exc)
        finally:
            self._wake()

    async def _sync_group(
        self, conn: BrokerConnection, join: Any, topics: frozenset[str]
    ) -> Reaction:
        m = self.membership
        generation = m.generation
        assignments: dict[str, bytes] = {}
        if m.is_leader:
            plan = await self._assign(
                join.protocol_name, join.members, bool(getattr(join, "skip_assignment", False))
            )
            assignments = {
                mid: encode_assignment(Assignment(tuple(tps))) for mid, tps in plan.items()
            }
        body = {
            "group_id": self.group_id,
            "generation_id": generation.generation_id,
            "member_id": generation.member_id,
            "group_instance_id": m.group_instance_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocol_name": generation.protocol_name,
            "assignments": [{"member_id": k, "assignment": v} for k, v in assignments.items()],
        }
        try:
            resp = await self._send(conn, ApiKey.SYNC_GROUP, body, timeout_ms=self._join_timeout_ms)
        except KafkaError as exc:
            m.request_rejoin(f"SyncGroup failed: {exc}")
            return Reaction.IGNORE
        reaction = m.on_sync_response(
            int(resp.error_code),
            generation=generation,
            protocol_type=getattr(resp, "protocol_type", None),
            protocol_name=getattr(resp, "protocol_name", None),
        )
        if reaction is Reaction.PROCEED:
            self._joined = _Joined(generation, bytes(resp.assignment), topics)
        return reaction

    async def _assign(
        self, protocol: str | None, members: Sequence[Any], skip: bool
    ) -> dict[str, list[TopicPartition]]:
        """The leader's plan with the group's chosen assignor (JoinGroup v9 may tell a
        returning static leader to skip it)."""
        assignor = self._assignor(protocol)
        if assignor is None:
            raise KafkaError(
                Errors.INCONSISTENT_GROUP_PROTOCOL,
                f"the group chose assignor {protocol}, which this member does not have",
            )
        group: list[GroupMember] = []
        for member in members:
            try:
                subscription = decode_subscription(bytes(member.metadata))
            except ConsumerProtocolError as exc:
                log.warning(
                    "group %s: member %s sent a subscription that does not parse: %s",
                    self.group_id,
                    member.member_id,
                    exc,
                )
                subscription = Subscription(())
            group.append(GroupMember(member.member_id, member.group_instance_id, subscription))
        topics = {t for g in group for t in g.subscription.topics}
        self._network.add_topics(topics)
        if topics:
            await self._network.fetch_metadata(sorted(topics), allow_auto_topic_creation=False)
        counts = self._partition_counts(topics)
        self._snapshot = counts
        if skip:
            return {}
        plan = assignor.assign({t: n for t, n in counts.items() if n > 0}, group)
        log.info(
            "group %s: leader assigned with %s: %s",
            self.group_id,
            assignor.name,
            {mid: len(tps) for mid, tps in plan.items()},
        )
        return {mid: sorted(tps) for mid, tps in plan.items()}

    # -- heartbeats ------------------------------------------------------------------------

    async def _heartbeat_loop(self) -> None:
        """Java's HeartbeatThread: heartbeats while joined, the session timer (a silent
        coordinator is looked up again) and the poll timer (leave the group when poll() is
        not called within max.poll.interval.ms)."""
        m = self.membership
        while not self._closed:
            now = self._now()
            wait = self._backoff[0]
            conn = self._conn
            if m.has_joined and (conn is None or not conn.ready):
                self._ensure_lookup()
            elif m.has_joined and conn is not None:
                if m.session_expired(now):
                    self._coordinator_lost(
                        "session timed out without receiving a heartbeat response"
                    )
                elif m.poll_timeout_expired(now):
                    log.warning("group %s: %s", self.group_id, _POLL_TIMEOUT_REASON)
                    await self.leave_group("consumer poll timeout has expired.")
                    self._wake()
                else:
                    if m.heartbeat_due(now):
                        m.heartbeat_sent(now)
                        self._spawn(self._send_heartbeat(conn, m.generation))
                    deadlines = [m.session_deadline(), m.poll_deadline()]
                    if not m.heartbeat_in_flight:  # an answer wakes the loop itself
                        deadlines.append(m.next_heartbeat())
                    wait = min(deadlines) - now
            self._heartbeat_wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._heartbeat_wake.wait(), max(wait, 1) / 1000)

    async def _send_heartbeat(self, conn: BrokerConnection, generation: Generation) -> None:
        m = self.membership
        body = {
            "group_id": self.group_id,
            "generation_id": generation.generation_id,
            "member_id": generation.member_id,
            "group_instance_id": m.group_instance_id,
        }
        try:
            resp = await self._send(conn, ApiKey.HEARTBEAT, body)
        except KafkaError as exc:
            log.debug("group %s: heartbeat failed: %s", self.group_id, exc)
            m.heartbeat_failed(self._now())
            return
        reaction = m.on_heartbeat_response(int(resp.error_code), generation, self._now())
        if reaction is Reaction.COORDINATOR_LOST:
            m.heartbeat_failed(self._now())
            self._coordinator_lost(f"Heartbeat answered {KafkaError(int(resp.error_code)).name}")
        elif reaction in (Reaction.REJOIN, Reaction.FATAL):
            self._wake()
        self._heartbeat_wake.set()

    async def leave_group(self, reason: str) -> None:
        """LeaveGroup for a dynamic member (a static one keeps its seat for the session
        timeout, KIP-345), then forget the generation."""
        m = self.membership
        member_id = m.generation.member_id or m.member_id
        conn = self._conn
        if self._join is not None and not self._join.done():
            # The coordinator answers a connection's requests in order, and a JoinGroup may
            # stay parked for the whole rebalance: leave over a fresh connection.
            self._join.cancel()
            if conn is not None and self._node is not None:
                self._conn = None
                conn.close()
                try:
                    conn = self._conn = await connect_coordinator(self._network, self._node)
                except KafkaError:
                    conn = None
        if (
            not m.is_static
            and conn is not None
            and conn.ready
            and m.state is not MemberState.UNJOINED
            and member_id
        ):
            log.info(
                "group %s: member %s sending LeaveGroup request to coordinator %s due to %s",
                self.group_id,
                member_id,
                conn.address,
                reason,
            )
            body = {
                "group_id": self.group_id,
                "member_id": member_id,
                "members": [{"member_id": member_id, "group_instance_id": None, "reason": reason}],
            }
            with contextlib.suppress(KafkaError):
                await self._send(
                    conn, ApiKey.LEAVE_GROUP, body, timeout_ms=self._request_timeout_ms
                )
        m.reset_generation("consumer pro-actively leaving the group")

    async def _leave_prepare(self) -> None:
        """Java's onLeavePrepare: the listener hears of the partitions going away."""
        m = self.membership
        owned = set(self._subs.assignment)
        if self._subs.has_auto_assignment and owned:
            lost = m.generation == NO_GENERATION or m.rebalance_in_progress
            await self._invoke("on_partitions_lost" if lost else "on_partitions_revoked", owned)
            self._subs.assign_from_subscribed([])

    async def on_unsubscribe(self) -> None:
        await self._leave_prepare()
        await self.leave_group("the consumer unsubscribed from all topics")
        self._joined = None
        self._joined_topics = frozenset()

    async def on_close(self, timeout_ms: int) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        try:
            member = not self._subs.has_auto_assignment or self.membership.generation_if_stable()
            if self._auto_commit and self._subs.assignment and member:
                await self._commit_quietly(self._consumed(), "on close", deadline)
            if self._commits:
                await asyncio.wait(self._commits, timeout=max(0.0, deadline - loop.time()))
            await self._leave_prepare()
            await self.leave_group("the consumer is being closed")
        finally:
            await self.abandon()

    async def abandon(self) -> None:
        """Stop the heartbeat, joins and commits in progress, and close the coordinator's
        connection, without committing or leaving the group."""
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    # -- commits ---------------------------------------------------------------------------

    def _consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return consumed_offsets(self._subs)

    def _maybe_auto_commit(self, now_ms: float) -> None:
        if not self._auto_commit or now_ms < self._next_auto_commit:
            return
        self._next_auto_commit = now_ms + self._auto_commit_interval_ms
        offsets = self._consumed()
        if not offsets:
            return
        if self._subs.has_auto_assignment and self.membership.generation_if_stable() is None:
            return  # mid-rebalance; the rebalance itself commits first
        self.commit_async(offsets, self._auto_commit_done)

    def _auto_commit_done(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], error: BaseException | None
    ) -> None:
        if error is None:
            log.debug("group %s: auto-committed %s", self.group_id, dict(offsets))
        elif isinstance(error, KafkaError) and error.retriable:
            log.debug("group %s: auto-commit failed (will retry): %s", self.group_id, error)
            self._next_auto_commit = min(self._next_auto_commit, self._now() + self._backoff[0])
        else:
            log.warning(
                "group %s: auto-commit of %s failed: %s", self.group_id, dict(offsets), error
            )

    async def _commit_quietly(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        why: str,
        deadline: float | None = None,
    ) -> None:
        if not offsets:
            return
        loop = asyncio.get_running_loop()
        if deadline is None:
            deadline = loop.time() + self._request_timeout_ms / 1000
        try:
            await self._commit_until(offsets, deadline)
        except KafkaError as exc:
            log.warning(
                "group %s: committing %s %s failed: %s", self.group_id, dict(offsets), why, exc
            )

    def _commit_generation(self) -> tuple[Generation, str | None]:
        m = self.membership
        if not self._subs.has_auto_assignment:
            return NO_GENERATION, None  # assign(): the group only stores offsets
        generation = m.generation_if_stable()
        if generation is None:
            if m.rebalance_in_progress:
                raise RebalanceInProgressError()
            raise CommitFailedError(
                Errors.UNKNOWN_MEMBER_ID,
                "Offset commit cannot be completed since the consumer is not part of an active "
                "group for auto partition assignment; it is likely that the consumer was kicked "
                "out of the group.",
            )
        return generation, m.group_instance_id

    async def _commit_once(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], deadline: float
    ) -> None:
        generation, instance_id = self._commit_generation()
        conn = await self._coordinator_conn(deadline)
        body = offset_commit_request(
            self.group_id,
            offsets,
            generation_id=generation.generation_id,
            member_id=generation.member_id,
            group_instance_id=instance_id,
        )
        try:
            resp = await self._send(conn, ApiKey.OFFSET_COMMIT, body, client_max=OFFSET_COMMIT_MAX)
        except (NetworkError, RequestTimeoutError) as exc:
            raise _Retriable(exc) from None
        failed = {tp: code for tp, code in offset_commit_errors(resp).items() if code}
        if not failed:
            return
        tp, code = min(failed.items())
        reaction = self.membership.on_commit_error(code, generation)
        if reaction is Reaction.COORDINATOR_LOST:
            self._coordinator_lost(f"OffsetCommit answered {KafkaError(code).name}")
            raise _Retriable(KafkaError(code, f"committing offsets of group {self.group_id}"))
        if reaction is Reaction.RETRY:
            raise _Retriable(KafkaError(code, f"committing {tp.topic}-{tp.partition}"))
        if reaction is Reaction.REJOIN:
            self._wake()
            if code in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
                raise CommitFailedError(code)
            raise RebalanceInProgressError()
        self._raise_pending()
        raise KafkaError(code, f"committing {tp.topic}-{tp.partition} for group {self.group_id}")

    async def _commit_until(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], deadline: float
    ) -> None:
        loop = asyncio.get_running_loop()
        attempt = 0
        while True:
            try:
                await self._commit_once(offsets, deadline)
                return
            except _Retriable as exc:
                wait = self._backoff_s(attempt)
                attempt += 1
                if loop.time() + wait >= deadline:
                    raise exc.cause from None
                await asyncio.sleep(wait)

    async def commit_sync(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int
    ) -> None:
        if not offsets:
            return
        self._raise_pending()
        deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
        await self._commit_until(dict(offsets), deadline)

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback | None = None,
    ) -> None:
        offsets = dict(offsets)

        async def run() -> None:
            error: BaseException | None = None
            deadline = asyncio.get_running_loop().time() + self._request_timeout_ms / 1000
            try:
                await self._commit_once(offsets, deadline)
            except _Retriable as exc:
                error = exc.cause
            except Exception as exc:
                error = exc
            if callback is not None:
                try:
                    result = callback(offsets, error)
                    if inspect.isawaitable(result):
                        await result
                except Exception:
                    log.exception("group %s: commit callback failed", self.group_id)
            elif error is not None:
                log.warning("group %s: asynchronous commit failed: %s", self.group_id, error)

        if offsets:
            task = self._spawn(run())
            self._commits.add(task)
            task.add_done_callback(self._commits.discard)

    # -- committed offsets -----------------------------------------------------------------

    async def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        wanted = list(dict.fromkeys(partitions))
        if not wanted:
            return {}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        attempt = 0
        last: KafkaError | None = None
        while True:
            conn = await self._coordinator_conn(deadline)
            try:
                version = conn.version_for(ApiKey.OFFSET_FETCH, None, OFFSET_FETCH_MAX)
                resp = await self._send(
                    conn,
                    ApiKey.OFFSET_FETCH,
                    offset_fetch_request(self.group_id, wanted),
                    version=version,
                )
                error, found = parse_offset_fetch(resp, version)
                codes = [error] + [code for _, code in found.values() if code]
                retry = next((c for c in codes if c in _FETCH_RETRIABLE), None)
                if retry is None:
                    fatal = next((c for c in codes if c), None)
                    if fatal is not None:
                        raise KafkaError(fatal, f"fetching committed offsets of {self.group_id}")
                    return {tp: found.get(tp, (None, 0))[0] for tp in wanted}
                last = KafkaError(retry, f"fetching committed offsets of group {self.group_id}")
                if retry in (Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE):
                    self._coordinator_lost(last.name)
            except (NetworkError, RequestTimeoutError) as exc:
                last = exc
            wait = self._backoff_s(attempt)
            attempt += 1
            if loop.time() + wait >= deadline:
                raise last
            await asyncio.sleep(wait)
