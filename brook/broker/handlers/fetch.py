"""Fetch (1), v4-18: consumers read up to the high watermark (read_committed ones up to the
last stable offset, told the aborted transactions their range overlaps), followers up to the
log end.

A consumer needs READ on each topic, a follower CLUSTER_ACTION on the cluster
(TOPIC_AUTHORIZATION_FAILED per partition otherwise). A follower (replica id >= 0: the
top-level ReplicaId before v15, the tagged ReplicaState {replica id, broker epoch} from v15)
is checked as Kafka's leader checks it: leadership and
leader epoch (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH), then
membership (a replica outside the assignment gets UNKNOWN_LEADER_EPOCH when it sent an epoch,
else NOT_LEADER_OR_FOLLOWER), then, with a last fetched epoch, OFFSET_OUT_OF_RANGE below the
log start before any DivergingEpoch. Its fetch offset is then recorded as its position (the
leader's HW and ISR rules, partition.py), unless it diverged; a fetch from an older broker
epoch than the registered one gets NOT_LEADER_OR_FOLLOWER. A follower's long poll wakes on an
append, a consumer's on an HW move; an error or a DivergingEpoch is answered at once. A
follower fetch naming a leader epoch (or a topic) this broker's metadata has not reached yet
waits for it within its max wait first (design.md, "Non-obvious").

Every request goes through the fetch session cache (KIP-227, fetch_session.py): sessionless,
full, or incremental, and an incremental response carries only partitions that changed.
The request is held until ``min_bytes`` are available or ``max_wait`` passes (long poll); a
partition error answers at once. The first partition with data always returns at least one
whole batch (KIP-74), later ones stop at the response's ``max_bytes`` (capped by the broker's
``fetch.max.bytes``). Errors 6 and 74 carry
the leader hint and the leader's endpoint for v16+ (KIP-951). v13+ names topics by id.
Stored batches go to the socket as they are (brook.protocol.fetch_codec); large reads as
``StoredSpan``s that the connection reads from the segment as the socket drains.
"""

from __future__ import annotations

import inspect
import time
import uuid
from collections.abc import Sized
from typing import TYPE_CHECKING, Any

from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.fetch_codec import encode_fetch_response
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..fetch_session import (
    FetchContext,
    FetchPartition,
    FullFetchContext,
    IncrementalFetchContext,
    PartitionKey,
    PartitionResult,
)
from ..registry import RequestContext, handler
from .common import leader_hint

if TYPE_CHECKING:
    from ..partition import Partition
    from ..server import Broker

ZERO_UUID = uuid.UUID(int=0)
READ_COMMITTED = 1


@handler(ApiKey.FETCH, (4, 18))
def handle(ctx: RequestContext, request: Any) -> Any:
    broker = ctx.broker
    version = ctx.api_version
    uses_ids = version >= 13
    partitions = _requested(broker, request, uses_ids)
    forgotten: list[PartitionKey] = []
    for topic in getattr(request, "forgotten_topics_data", ()):
        key = (topic.topic_id or ZERO_UUID) if uses_ids else topic.topic
        forgotten.extend((key, p) for p in topic.partitions)
    max_wait = to_ms(request.max_wait, 0)
    is_follower = replica_of(request, version)[0] >= 0
    if is_follower and max_wait > 0 and not _caught_up(broker, partitions):
        # The follower learnt of a leadership (or a topic) from the metadata log before this
        # broker did: wait for it here, within the fetch's own max wait, rather than answer
        # UNKNOWN_LEADER_EPOCH (or UNKNOWN_TOPIC_ID) and have the follower back off
        # replica.fetch.backoff.ms.
        return _when_caught_up(ctx, request, forgotten, max_wait)
    return _serve(ctx, request, partitions, forgotten, max_wait)


def _requested(broker: Broker, request: Any, uses_ids: bool) -> list[FetchPartition]:
    """The request's partitions, named as this broker's metadata names their topics."""
    partitions: list[FetchPartition] = []
    for topic in request.topics:
        if uses_ids:
            topic_id = topic.topic_id or ZERO_UUID
            info = broker.image.topics_by_id.get(topic_id)
            name = info.name if info else ""
        else:
            info = broker.image.topics.get(topic.topic)
            name, topic_id = topic.topic, (info.topic_id if info else ZERO_UUID)
        for p in topic.partitions:
            partitions.append(
                FetchPartition(
                    topic=name,
                    topic_id=topic_id,
                    partition=p.partition,
                    fetch_offset=p.fetch_offset,
                    log_start_offset=getattr(p, "log_start_offset", -1),
                    max_bytes=p.partition_max_bytes,
                    current_leader_epoch=getattr(p, "current_leader_epoch", -1),
                    last_fetched_epoch=getattr(p, "last_fetched_epoch", -1),
                )
            )
    return partitions


def _caught_up(broker: Broker, partitions: list[FetchPartition]) -> bool:
    rm = broker.replica_manager
    return all(rm.knows_epoch(p.topic, p.partition, p.current_leader_epoch) for p in partitions)


async def _when_caught_up(
    ctx: RequestContext, request: Any, forgotten: list[PartitionKey], max_wait: int
) -> Any:
    broker = ctx.broker
    uses_ids = ctx.api_version >= 13
    started = time.monotonic()
    await broker.replica_manager.wait_for_metadata(
        lambda: _caught_up(broker, _requested(broker, request, uses_ids)), max_wait
    )
    waited = int((time.monotonic() - started) * 1000)
    partitions = _requested(broker, request, uses_ids)
    response = _serve(ctx, request, partitions, forgotten, max(0, max_wait - waited))
    return await response if inspect.isawaitable(response) else response


def _serve(
    ctx: RequestContext,
    request: Any,
    partitions: list[FetchPartition],
    forgotten: list[PartitionKey],
    max_wait: int,
) -> Any:
    broker = ctx.broker
    version = ctx.api_version
    uses_ids = version >= 13
    replica_id, broker_epoch = replica_of(request, version)
    is_follower = replica_id >= 0
    ctx.fetch_from_follower = is_follower
    session = broker.fetch_sessions.new_context(
        session_id=getattr(request, "session_id", 0),
        epoch=getattr(request, "session_epoch", -1),
        partitions=partitions,
        forgotten=forgotten,
        is_follower=is_follower,
        uses_topic_ids=uses_ids,
    )
    read_committed = request.isolation_level == READ_COMMITTED
    if session.error_code:
        return encode_fetch_response(
            version, [], error_code=session.error_code, read_committed=read_committed
        )
    max_bytes = min(request.max_bytes, int(broker.config["fetch.max.bytes"]))
    fetch = _Fetch(broker, ctx, session, replica_id, broker_epoch, max_bytes, read_committed)
    fetch.read()
    if fetch.done(request.min_bytes) or max_wait <= 0:
        return fetch.response(read_committed)
    return fetch.long_poll(request.min_bytes, max_wait, read_committed)


def replica_of(request: Any, version: int) -> tuple[int, int]:
    """(replica id, broker epoch) of the sender: v15+ carry them in the tagged ReplicaState
    (KIP-903), older versions only the top-level ReplicaId. -1 is a consumer."""
    if version >= 15:
        state = request.replica_state
        return int(state.replica_id), int(state.replica_epoch)
    return int(request.replica_id), -1


def _state(partition: Partition) -> tuple[int, int, int]:
    return (partition.appended_bytes, partition.high_watermark, partition.log.log_start_offset)


class _Fetch:
    def __init__(
        self,
        broker: Broker,
        ctx: RequestContext,
        session: FetchContext,
        replica_id: int,
        broker_epoch: int,
        max_bytes: int,
        read_committed: bool = False,
    ) -> None:
        self.broker = broker
        # isolation_level 1: up to the last stable offset, with the aborted transactions
        self.read_committed = read_committed and replica_id < 0
        self.ctx = ctx
        self.session = session
        self.replica_id = replica_id
        self.broker_epoch = broker_epoch
        self.is_follower = replica_id >= 0
        self.max_bytes = max_bytes
        self.results: dict[PartitionKey, PartitionResult] = {}
        self.allowed: dict[str, bool] = {}
        self.bytes = 0
        self.answer_now = False
        self.hosted: list[Partition] = []
        self.marks: list[int] = []
        self.session_marks = 0  # the follower session's marks when it was read
        # What each hosted partition looked like when it was read (see ``read``).
        self.states: dict[PartitionKey, tuple[Partition, tuple[int, int, int]]] = {}
        # A follower's incremental session reads only what changed (see docs/design.md).
        self.changes: IncrementalFetchContext | None = (
            session
            if isinstance(session, IncrementalFetchContext) and session.reads_changes_only
            else None
        )

    def _authorized(self, topic: str) -> bool:
        """A follower needs CLUSTER_ACTION on the cluster, a consumer READ on the topic
        (Kafka answers both refusals TOPIC_AUTHORIZATION_FAILED per partition)."""
        allowed = self.allowed.get(topic)
        if allowed is None:
            if self.is_follower:
                allowed = authz.authorize_cluster(self.ctx, AclOperation.CLUSTER_ACTION)
            else:
                allowed = authz.authorize(self.ctx, AclOperation.READ, ResourceType.TOPIC, topic)
            self.allowed[topic] = allowed
        return allowed

    def key(self, fp: FetchPartition) -> PartitionKey:
        return (fp.topic_id if self.ctx.api_version >= 13 else fp.topic, fp.partition)

    def read(self, again: bool = False) -> None:
        """Read every partition of the session. ``again`` (after a long poll): a partition
        whose first read found nothing and that has not changed since (no append, same high
        watermark and log start) keeps that result instead of being read a second time."""
        previous = self.results if again else {}
        states = self.states if again else {}
        self.results = {}
        self.states = {}
        self.bytes = 0
        self.answer_now = False
        self.hosted = []
        budget = self.max_bytes
        for fp in self.session.partitions():
            key = self.key(fp)
            old = previous.get(key) if again else None
            seen = states.get(key) if old is not None else None
            if (
                seen is not None
                and old is not None
                and not old.records
                and not old.error_code
                and seen[0].is_leader
                and _state(seen[0]) == seen[1]
            ):
                result, partition = old, seen[0]
            else:
                result, partition = self._read_one(fp, budget, min_one=self.bytes == 0)
            self.results[key] = result
            if result.error_code or result.diverging_epoch is not None:
                # as Kafka: an error or a divergence is answered without waiting
                self.answer_now = True
            if partition is not None:
                self.hosted.append(partition)
                self.states[key] = (partition, _state(partition))
            if self.changes is not None:
                if partition is not None:
                    partition.watch(self.changes.session, key)
                if (
                    result.error_code
                    or result.diverging_epoch is not None
                    or partition is None
                    or fp.fetch_offset < partition.log.log_end_offset
                ):
                    self.changes.keep_dirty(key)
            self.bytes += len(result.records)
            budget = max(0, budget - len(result.records))
        self.marks = [p.appended_bytes for p in self.hosted]
        if self.changes is not None:
            self.session_marks = self.changes.session.marks

    def _read_one(
        self, fp: FetchPartition, budget: int, min_one: bool
    ) -> tuple[PartitionResult, Partition | None]:
        version = self.ctx.api_version
        if not fp.topic:
            code = Errors.UNKNOWN_TOPIC_ID if version >= 13 else Errors.UNKNOWN_TOPIC_OR_PARTITION
            return _error(code), None
        if not self._authorized(fp.topic):
            return _error(Errors.TOPIC_AUTHORIZATION_FAILED), None
        rm = self.broker.replica_manager
        partition, code = rm.leader_partition(fp.topic, fp.partition, fp.current_leader_epoch)
        if partition is None:
            return self._with_hint(_error(code), fp), None
        if self.is_follower and self.replica_id not in partition.replicas:
            # Kafka's followerReplicaOrThrow: with an epoch, a replica not (yet) assigned
            # retries (a reassignment adding it is on its way); without, it is told off.
            code = (
                Errors.UNKNOWN_LEADER_EPOCH
                if fp.current_leader_epoch >= 0
                else Errors.NOT_LEADER_OR_FOLLOWER
            )
            return self._with_hint(_error(code), fp), None
        log = partition.log
        result = PartitionResult(
            Errors.NONE,
            partition.high_watermark,
            partition.high_watermark if self.is_follower else partition.last_stable_offset,
            log.log_start_offset,
            b"",
        )
        if fp.last_fetched_epoch >= 0:
            diverging = _divergence(partition, fp)
            if isinstance(diverging, int):
                result.error_code = diverging
                return result, partition
            if diverging is not None:
                result.diverging_epoch = diverging
                return result, partition
        try:
            data = partition.read(
                fp.fetch_offset,
                min(fp.max_bytes, budget),
                for_follower=self.is_follower,
                min_one_batch=min_one,
                spans=True,
                read_committed=self.read_committed,
            )
            if self.read_committed and data.records:
                result.aborted_transactions = [
                    (txn.producer_id, txn.first_offset)
                    for txn in log.aborted_transactions(fp.fetch_offset, result.last_stable_offset)
                ]
        except KafkaError as exc:
            result.error_code = exc.code
            return result, partition
        if self.is_follower:
            try:
                partition.record_follower_fetch(
                    self.replica_id, fp.fetch_offset, fp.log_start_offset, self.broker_epoch
                )
            except KafkaError as exc:
                return self._with_hint(_error(exc.code), fp), None
            # the fetch may have moved the HW
            result.high_watermark = result.last_stable_offset = partition.high_watermark
        result.records = data.records
        result.log_start_offset = data.log_start_offset
        return result, partition

    def _with_hint(self, result: PartitionResult, fp: FetchPartition) -> PartitionResult:
        if self.ctx.api_version >= 16 and result.error_code in (
            Errors.NOT_LEADER_OR_FOLLOWER,
            Errors.FENCED_LEADER_EPOCH,
        ):
            hint, _ = leader_hint(self.broker, fp.topic, fp.partition, self.ctx.listener)
            result.current_leader = hint
        return result

    def done(self, min_bytes: int) -> bool:
        # A follower's session with nothing changed reads nothing, yet waits like any other.
        empty = not self.results and self.changes is None
        return self.answer_now or self.bytes >= min_bytes or empty

    async def long_poll(
        self, min_bytes: int, max_wait_ms: int, read_committed: bool
    ) -> list[Sized]:
        def enough() -> bool:
            grown = sum(p.appended_bytes - m for p, m in zip(self.hosted, self.marks, strict=True))
            return self.bytes + grown >= min_bytes

        changes = self.changes
        await self.broker.replica_manager.wait_for_data(
            self.hosted,
            follower=self.is_follower,
            max_wait_ms=max_wait_ms,
            enough=enough,
            session=None if changes is None else changes.session,
            session_marks=self.session_marks,
        )
        if changes is not None:
            changes.take_changes()
        self.read(again=True)
        return self.response(read_committed)

    def response(self, read_committed: bool) -> list[Sized]:
        data = self.session.build_response(self.results)
        if self.is_follower and isinstance(self.session, FullFetchContext) and data.session_id:
            # a follower's new session: its partitions tell it when they change
            created = self.broker.fetch_sessions.get(data.session_id)
            if created is not None:
                for key, (partition, _) in self.states.items():
                    partition.watch(created, key)
        version = self.ctx.api_version
        topics: list[tuple[str | uuid.UUID, list[tuple[int, PartitionResult]]]] = []
        endpoints: dict[int, tuple[int, str, int, str | None]] = {}
        last_key: str | uuid.UUID | None = None
        counters, known = self.broker.counters, self.broker.image.topics
        for fp, result in data.partitions:
            counters.fetched(
                fp.topic if fp.topic in known else None,
                len(result.records),
                self.is_follower,
                bool(result.error_code),
            )
            key = fp.topic_id if version >= 13 else fp.topic
            if key != last_key or not topics:
                topics.append((key, []))
                last_key = key
            topics[-1][1].append((fp.partition, result))
            if version >= 16 and result.current_leader and result.current_leader[0] >= 0:
                leader = result.current_leader[0]
                _, ep = leader_hint(self.broker, fp.topic, fp.partition, self.ctx.listener)
                if ep is not None:
                    endpoints[leader] = (
                        leader,
                        ep.host,
                        ep.port,
                        self.broker.image.brokers[leader].rack,
                    )
        return encode_fetch_response(
            version,
            topics,
            error_code=data.error_code,
            session_id=data.session_id,
            node_endpoints=list(endpoints.values()),
            read_committed=read_committed,
        )


def _divergence(partition: Partition, fp: FetchPartition) -> tuple[int, int] | int | None:
    """Kafka's readRecords checks for a fetch naming its last fetched epoch, in its order: an
    offset below the log start is OFFSET_OUT_OF_RANGE (before any divergence); then the
    (epoch, end offset) the follower must truncate to when its epoch ended earlier here, or
    None when it has not diverged."""
    log = partition.log
    epoch, end = log.end_offset_for_epoch(fp.last_fetched_epoch)
    latest = log.epoch_cache.latest_epoch()
    if epoch < 0 and latest is not None and fp.last_fetched_epoch <= partition.leader_epoch:
        # an epoch after the last one this log wrote but not after the current one: Kafka's
        # leader has an entry for its epoch starting at the log end, and answers so
        epoch, end = latest, log.log_end_offset
    if epoch < 0 or end < 0:
        return Errors.OFFSET_OUT_OF_RANGE
    if fp.fetch_offset < log.log_start_offset:
        return Errors.OFFSET_OUT_OF_RANGE
    if epoch < fp.last_fetched_epoch or end < fp.fetch_offset:
        return (epoch, end)
    return None


def _error(code: int) -> PartitionResult:
    return PartitionResult(code, -1, -1, -1, b"")
