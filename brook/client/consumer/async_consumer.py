"""AsyncConsumer: the asyncio consumer. assign()/seek() or subscribe(), then poll() for records;
offset lookups, pause/resume, and read_range() for reading fixed offset ranges in bulk."""

from __future__ import annotations

import asyncio
import bisect
import re
from collections.abc import AsyncIterator, Iterable, Mapping
from operator import itemgetter
from types import TracebackType
from typing import Any

from brook.protocol.errors import Errors, KafkaError

from ..admin.types import ListedOffset, OffsetSpec
from ..cluster import PartitionInfo, TopicPartition
from ..config import parse_consumer_config, resolve_deserializer
from ..connection import NetworkError
from ..metrics import MetricName, Metrics
from ..network import NetworkClient
from .assignors import rebalance_protocol, resolve_assignors
from .consumer_metrics import ConsumerMetrics
from .coordinator import (
    CommitCallback,
    ConsumerGroupMetadata,
    CoordinatorContext,
    CoordinatorFactory,
    GroupCoordinator,
    OffsetAndMetadata,
    consumed_offsets,
)
from .errors import (
    GroupMembershipUnavailableError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
)
from .fetcher import Fetcher
from .group_coordinator import ConsumerGroupCoordinator
from .offsets import OffsetLookup
from .record import ConsumerRecord
from .subscription import FetchState, SubscriptionState, SubscriptionType

__all__ = ["AsyncConsumer", "OffsetAndTimestamp"]

OffsetAndTimestamp = ListedOffset  # offset, timestamp, leader_epoch: Java's OffsetAndTimestamp
TP = tuple[str, int]

_NO_GROUP_ID = (
    "To use the group management or offset commit APIs, you must provide a valid group.id "
    "in the consumer configuration"
)
_offset_of = itemgetter(2)


class AsyncConsumer:
    """Consumer on asyncio: ``async with AsyncConsumer({"bootstrap.servers": ...}) as c``.

    Every method is a coroutine and must run on the loop the consumer started on. With a
    group.id, subscribe() joins the group through Brook's group coordinator;
    ``coordinator_factory`` replaces it (see brook.client.consumer.coordinator).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        coordinator_factory: CoordinatorFactory | None = None,
    ) -> None:
        self.config = parse_consumer_config(config)
        cfg = self.config
        self._network = NetworkClient(
            cfg, kind="consumer", allow_auto_topic_creation=bool(cfg["allow.auto.create.topics"])
        )
        self._subscriptions = SubscriptionState(cfg["auto.offset.reset"])
        self._metrics = Metrics(
            float(cfg["metrics.sample.window.ms"]), int(cfg["metrics.num.samples"])
        )
        consumer_metrics = ConsumerMetrics(self._metrics, self._network.client_id)
        self._fetcher = Fetcher(
            cfg,
            self._network,
            self._subscriptions,
            key_deserializer=resolve_deserializer("key.deserializer", cfg["key.deserializer"]),
            value_deserializer=resolve_deserializer(
                "value.deserializer", cfg["value.deserializer"]
            ),
            metrics=consumer_metrics,
        )
        stats = self._fetcher.stats
        consumer_metrics.add_session_counters(
            {
                "full-fetch-total": lambda: float(stats.full_requests),
                "incremental-fetch-total": lambda: float(stats.incremental_requests),
                "sessionless-fetch-total": lambda: float(stats.sessionless_requests),
                "session-error-total": lambda: float(stats.session_errors),
                "leader-hint-applied-total": lambda: float(stats.leader_hints_applied),
            }
        )
        self._offsets = OffsetLookup(cfg, self._network, self._subscriptions, self._fetcher.wake)
        if coordinator_factory is None and cfg["group.id"] is not None:
            # Unknown assignors fail here, not at the first poll().
            rebalance_protocol(resolve_assignors(cfg["partition.assignment.strategy"]))
            coordinator_factory = ConsumerGroupCoordinator
        self._coordinator_factory = coordinator_factory
        self._coordinator: GroupCoordinator | None = None
        self._max_poll_records = int(cfg["max.poll.records"])
        self._api_timeout_ms = int(cfg["default.api.timeout.ms"])
        self._retry_backoff = cfg["retry.backoff.ms"] / 1000
        self._started = False
        self._start_lock: asyncio.Lock | None = None
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------

    @property
    def network(self) -> NetworkClient:
        return self._network

    @property
    def fetcher(self) -> Fetcher:
        return self._fetcher

    @property
    def subscriptions(self) -> SubscriptionState:
        return self._subscriptions

    async def start(self) -> None:
        """Connect (the first metadata); raises naming each bootstrap address and why it
        failed. Called by the first method that needs the cluster."""
        self._check_open()
        if self._started:
            return
        if self._start_lock is None:
            self._start_lock = asyncio.Lock()
        async with self._start_lock:
            if self._started:
                return
            await self._network.start()
            if self.config["group.id"] is not None and self._coordinator_factory is not None:
                self._coordinator = self._coordinator_factory(
                    CoordinatorContext(
                        self.config, self._network, self._subscriptions, self._fetcher.wake
                    )
                )
            self._started = True

    async def close(self, timeout_ms: int | None = None) -> None:
        """Leave the group (when there is one), close fetch sessions and connections."""
        if self._closed:
            return
        self._closed = True
        timeout = (self._api_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        try:
            if self._started:
                if self._coordinator is not None:
                    await self._coordinator.on_close(int(timeout * 1000))
                await self._fetcher.close(min(timeout, 1.0))
        finally:
            await self._offsets.close()
            await self._network.close()

    async def abandon(self) -> None:
        """Stop without a word to the brokers: no commit, no LeaveGroup, fetch sessions left
        to expire; connections closed. What a Consumer left open at interpreter exit gets,
        as librdkafka's destructor without consumer close: committing the positions of
        records the application may not have processed would lose them. The group drops the
        member after session.timeout.ms."""
        if self._closed:
            return
        self._closed = True
        try:
            abandon = getattr(self._coordinator, "abandon", None)
            if abandon is not None:
                await abandon()
        finally:
            await self._offsets.close()
            await self._network.close()

    def group_metadata(self) -> ConsumerGroupMetadata:
        """This member's group, generation and member id (Java's groupMetadata()), for a
        transactional producer's send_offsets_to_transaction: the coordinator refuses the
        offsets of a member that is no longer in the group's generation."""
        group_id = self.config["group.id"]
        if group_id is None:
            raise ValueError(
                "To use the group management or offset commit APIs, you must provide a valid "
                "group.id in the consumer configuration."
            )
        membership = getattr(self._coordinator, "membership", None)
        generation = getattr(membership, "generation", None)
        return ConsumerGroupMetadata(
            group_id,
            -1 if generation is None else int(generation.generation_id),
            "" if generation is None else str(generation.member_id),
            self.config["group.instance.id"],
        )

    async def __aenter__(self) -> AsyncConsumer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise NetworkError(f"consumer {self._network.client_id} is closed")

    def _track_topics(self) -> None:
        subs = self._subscriptions
        self._network.all_topics = subs.type is SubscriptionType.AUTO_PATTERN
        self._network.set_topics({tp.topic for tp in subs.assignment} | set(subs.topics))

    # -- assignment and subscription -------------------------------------------------------

    async def assign(self, partitions: Iterable[TP]) -> None:
        """Read exactly these partitions (no group membership); an empty list unassigns."""
        self._check_open()
        if self._subscriptions.assign_from_user(partitions):
            self._fetcher.clear_buffer()
        self._track_topics()

    async def assignment(self) -> set[TopicPartition]:
        return set(self._subscriptions.assignment)

    async def subscribe(
        self, topics: Iterable[str] | str | re.Pattern[str], listener: Any = None
    ) -> None:
        """Join the consumer group for these topics, or for every topic matching a pattern
        (a compiled regex, or a string starting with ``^``); needs group.id
        (GroupMembershipUnavailableError without it). ``listener`` gets
        on_partitions_revoked / on_partitions_assigned / on_partitions_lost calls (plain or
        async methods) from inside poll()."""
        self._check_open()
        if self.config["group.id"] is None:
            raise GroupMembershipUnavailableError(_NO_GROUP_ID)
        pattern = False
        if isinstance(topics, re.Pattern) or (isinstance(topics, str) and topics.startswith("^")):
            self._subscriptions.subscribe_pattern(topics, listener)
            pattern = True
        else:
            names = [topics] if isinstance(topics, str) else list(topics)
            self._subscriptions.subscribe(names, listener)
        self._track_topics()
        await self.start()
        if pattern:
            # Match against every topic before the first join, not an empty cache.
            await self._network.refresh_metadata()
            self._match_pattern()

    async def unsubscribe(self) -> None:
        if self._coordinator is not None and self._subscriptions.has_auto_assignment:
            await self._coordinator.on_unsubscribe()
        self._subscriptions.unsubscribe()
        self._fetcher.clear_buffer()
        self._track_topics()

    async def subscription(self) -> set[str]:
        """Subscribed topic names (for a pattern: the topics it matched so far)."""
        return set(self._subscriptions.topics)

    def _match_pattern(self) -> None:
        subs = self._subscriptions
        if subs.type is SubscriptionType.AUTO_PATTERN:
            topics = {name: t.is_internal for name, t in self._network.cluster.topics.items()}
            if subs.match_topics(topics, bool(self.config["exclude.internal.topics"])):
                self._track_topics()

    # -- positions -------------------------------------------------------------------------

    async def seek(self, partition: TP, offset: int) -> None:
        """Read ``partition`` from ``offset`` on the next poll()."""
        self._subscriptions.seek(TopicPartition(*partition), offset)

    async def seek_to_beginning(self, partitions: Iterable[TP] | None = None) -> None:
        """Move to the log start offset (of all assigned partitions by default), lazily."""
        self._reset_to(partitions, int(OffsetSpec.EARLIEST))

    async def seek_to_end(self, partitions: Iterable[TP] | None = None) -> None:
        """Move to the log end (the last stable offset under read_committed), lazily."""
        self._reset_to(partitions, int(OffsetSpec.LATEST))

    def _reset_to(self, partitions: Iterable[TP] | None, spec: int) -> None:
        tps = self._subscriptions.assignment if partitions is None else partitions
        for tp in tps:
            self._subscriptions.request_reset(TopicPartition(*tp), spec)

    async def position(self, partition: TP, timeout_ms: int | None = None) -> int:
        """The offset of the next record poll() returns for ``partition``; looks it up (reset
        policy, committed offset) when there is none yet."""
        tp = TopicPartition(*partition)
        state = self._subscriptions.state(tp)
        await self.start()
        loop = asyncio.get_running_loop()
        timeout = self._api_timeout_ms if timeout_ms is None else timeout_ms
        deadline = loop.time() + timeout / 1000
        while state.fetch_state is not FetchState.FETCHING:
            await self._update_positions(timeout_ms)
            if state.fetch_state is FetchState.FETCHING:
                break
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise KafkaError(
                    Errors.REQUEST_TIMED_OUT,
                    f"position of {tp.topic}-{tp.partition} not known within {timeout} ms",
                )
            await self._fetcher.wait(min(remaining, self._retry_backoff))
        assert state.position is not None
        return state.position

    async def _update_positions(self, timeout_ms: int | None = None) -> None:
        """Starting positions: committed offsets (with a group), else auto.offset.reset."""
        subs = self._subscriptions
        missing = subs.initializing()
        if missing and self._coordinator is not None:
            timeout = self._api_timeout_ms if timeout_ms is None else timeout_ms
            committed = await self._coordinator.committed(missing, timeout)
            for tp, om in committed.items():
                if (
                    om is not None
                    and subs.is_assigned(tp)
                    and subs.state(tp).fetch_state is FetchState.INITIALIZING
                ):
                    subs.seek(tp, om.offset, om.leader_epoch)
            missing = subs.initializing()
        if missing:
            if subs.default_reset == "none":
                raise NoOffsetForPartitionError(missing)
            for tp in missing:
                subs.request_reset(tp)
        self._offsets.maybe_reset_positions()

    # -- polling ---------------------------------------------------------------------------

    async def poll(
        self, timeout_ms: int = 0, *, max_records: int | None = None
    ) -> list[ConsumerRecord]:
        """Records from the assigned partitions, waiting up to ``timeout_ms`` for some; at
        most max.poll.records (or ``max_records``)."""
        self._check_open()
        await self.start()
        limit = self._max_poll_records if max_records is None else max_records
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max(0, timeout_ms) / 1000
        fetcher = self._fetcher
        while True:
            self._match_pattern()
            if self._coordinator is not None:
                left_ms = max(0.0, deadline - loop.time()) * 1000
                await self._coordinator.poll(loop.time() * 1000, left_ms)
            try:
                await self._update_positions(int(max(0.0, deadline - loop.time()) * 1000))
            except KafkaError as exc:
                # As Java's poll: committed offsets not fetched within the poll's timeout
                # leave the positions to the next poll(), which returns nothing meanwhile.
                if not exc.retriable or loop.time() < deadline:
                    raise
            records = fetcher.collect(limit)
            # Fetch what is not buffered now, so it arrives while these are processed.
            fetcher.send_fetches()
            if records:
                return records
            remaining = deadline - loop.time()
            if remaining <= 0:
                return records
            if fetcher.blocked or self._subscriptions.awaiting_reset():
                remaining = min(remaining, self._retry_backoff)
            await fetcher.wait(remaining)

    async def pause(self, partitions: Iterable[TP]) -> None:
        """Stop fetching these partitions (their buffered records are kept for later)."""
        self._subscriptions.pause(TopicPartition(*tp) for tp in partitions)

    async def resume(self, partitions: Iterable[TP]) -> None:
        self._subscriptions.resume(TopicPartition(*tp) for tp in partitions)

    async def paused(self) -> set[TopicPartition]:
        return set(self._subscriptions.paused)

    # -- offset lookups --------------------------------------------------------------------

    async def _lookup(
        self, specs: Mapping[TopicPartition, int], timeout_ms: int | None
    ) -> dict[TopicPartition, ListedOffset]:
        self._check_open()
        await self.start()
        timeout = self._api_timeout_ms if timeout_ms is None else timeout_ms
        return await self._offsets.lookup(specs, timeout)

    async def beginning_offsets(
        self, partitions: Iterable[TP], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The log start offset of each partition."""
        specs = {TopicPartition(*tp): int(OffsetSpec.EARLIEST) for tp in partitions}
        return {tp: r.offset for tp, r in (await self._lookup(specs, timeout_ms)).items()}

    async def end_offsets(
        self, partitions: Iterable[TP], timeout_ms: int | None = None
    ) -> dict[TopicPartition, int]:
        """The offset after the last record of each partition (the high watermark; the last
        stable offset under read_committed)."""
        specs = {TopicPartition(*tp): int(OffsetSpec.LATEST) for tp in partitions}
        return {tp: r.offset for tp, r in (await self._lookup(specs, timeout_ms)).items()}

    async def offsets_for_times(
        self, timestamps: Mapping[TP, int], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        """The earliest offset whose timestamp is >= the given ms timestamp, per partition;
        None where no record is that new."""
        specs: dict[TopicPartition, int] = {}
        for tp, ts in timestamps.items():
            if ts < 0:
                raise ValueError(f"timestamp for {tp[0]}-{tp[1]} must be >= 0, got {ts}")
            specs[TopicPartition(*tp)] = int(ts)
        found = await self._lookup(specs, timeout_ms)
        return {tp: (r if r.offset >= 0 else None) for tp, r in found.items()}

    # -- cluster metadata ------------------------------------------------------------------

    async def partitions_for_topic(self, topic: str) -> list[PartitionInfo]:
        """The topic's partitions (empty when the topic does not exist)."""
        self._check_open()
        await self.start()
        self._network.add_topics([topic])
        if topic not in self._network.cluster.topics:
            await self._network.fetch_metadata([topic], allow_auto_topic_creation=False)
        info = self._network.cluster.topics.get(topic)
        return [] if info is None else list(info.partitions.values())

    async def list_topics(self) -> dict[str, list[PartitionInfo]]:
        """Every topic of the cluster with its partitions."""
        self._check_open()
        await self.start()
        response = await self._network.fetch_metadata(None, update_cache=False)
        out: dict[str, list[PartitionInfo]] = {}
        for t in response.topics:
            if int(t.error_code) or t.name is None:
                continue
            out[t.name] = [
                PartitionInfo(
                    t.name,
                    int(p.partition_index),
                    int(p.leader_id),
                    int(getattr(p, "leader_epoch", -1)),
                    tuple(int(r) for r in p.replica_nodes),
                    tuple(int(r) for r in p.isr_nodes),
                    tuple(int(r) for r in getattr(p, "offline_replicas", ())),
                    int(p.error_code),
                )
                for p in sorted(t.partitions, key=lambda p: int(p.partition_index))
            ]
        return out

    # -- groups ----------------------------------------------------------------------------

    def _group(self) -> GroupCoordinator:
        if self._coordinator is None:
            raise GroupMembershipUnavailableError(_NO_GROUP_ID)
        return self._coordinator

    async def commit(
        self,
        offsets: Mapping[TP, OffsetAndMetadata | int] | None = None,
        *,
        asynchronous: bool = False,
        callback: CommitCallback | None = None,
    ) -> None:
        """Commit ``offsets`` (default: the current positions) to the group."""
        await self.start()
        coordinator = self._group()
        if offsets is None:
            to_commit = consumed_offsets(self._subscriptions)
        else:
            to_commit = {
                TopicPartition(*tp): v if isinstance(v, OffsetAndMetadata) else OffsetAndMetadata(v)
                for tp, v in offsets.items()
            }
        if asynchronous:
            coordinator.commit_async(to_commit, callback)
        else:
            await coordinator.commit_sync(to_commit, self._api_timeout_ms)

    async def committed(
        self, partitions: Iterable[TP], timeout_ms: int | None = None
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        await self.start()
        coordinator = self._group()
        timeout = self._api_timeout_ms if timeout_ms is None else timeout_ms
        return await coordinator.committed([TopicPartition(*tp) for tp in partitions], timeout)

    # -- metrics ---------------------------------------------------------------------------

    async def metrics(self) -> dict[MetricName, float]:
        """Current metric values keyed ``group:name:{client-id=..., ...}``: Kafka's
        consumer-fetch-manager-metrics, plus Brook's fetch-session counters."""
        return self._metrics.snapshot()

    # -- reading fixed ranges --------------------------------------------------------------

    async def read_range(
        self, partition: TP, start: int, end: int, *, timeout_ms: int | None = None
    ) -> AsyncIterator[list[ConsumerRecord]]:
        """Yield the records of ``partition`` with offsets in [start, end), in chunks as they
        were fetched (one list per fetched batch run, no per-record work beyond decoding).

        The consumer is assigned exactly ``partition`` for the duration. Raises
        OffsetOutOfRangeError when ``start`` is below the log start offset or the log moves
        past the position while reading (data lost to retention), whatever auto.offset.reset
        says; KafkaError(REQUEST_TIMED_OUT) when no record arrives for ``timeout_ms``
        (default.api.timeout.ms) before ``end`` is reached.
        """
        tp = TopicPartition(*partition)
        if end <= start:
            return
        timeout = self._api_timeout_ms if timeout_ms is None else timeout_ms
        begin = (await self._lookup({tp: int(OffsetSpec.EARLIEST)}, timeout))[tp].offset
        if start < begin:
            raise OffsetOutOfRangeError(
                {tp: start},
                log_start_offsets={tp: begin},
                reason=f"offsets [{start}, {min(begin, end)}) are no longer in the log "
                "(deleted by retention) or never existed",
            )
        await self.assign([tp])
        await self.seek(tp, start)
        fetcher = self._fetcher
        fetcher.strict_ranges.add(tp)
        loop = asyncio.get_running_loop()
        state = self._subscriptions.state(tp)
        try:
            idle_since = loop.time()
            while state.position is not None and state.position < end:
                try:
                    records = fetcher.collect(1 << 30)
                except OffsetOutOfRangeError as exc:
                    begin = (await self._lookup({tp: int(OffsetSpec.EARLIEST)}, timeout))[tp]
                    raise OffsetOutOfRangeError(
                        exc.offsets,
                        log_start_offsets={tp: begin.offset},
                        reason=f"reading [{start}, {end}) of {tp.topic}-{tp.partition}: the "
                        "log no longer holds the position (deleted by retention)",
                    ) from None
                fetcher.send_fetches()
                if records:
                    idle_since = loop.time()
                    if records[-1][2] >= end:
                        records = records[: bisect.bisect_left(records, end, key=_offset_of)]
                    if records:
                        yield records
                    continue
                if state.fetch_state is not FetchState.FETCHING:
                    raise KafkaError(
                        Errors.OFFSET_OUT_OF_RANGE,
                        f"{tp.topic}-{tp.partition}: position lost while reading a range",
                    )
                left = idle_since + timeout / 1000 - loop.time()
                if left <= 0:
                    raise KafkaError(
                        Errors.REQUEST_TIMED_OUT,
                        f"reading [{start}, {end}) of {tp.topic}-{tp.partition}: no records "
                        f"after offset {state.position} within {timeout} ms "
                        f"(high watermark {state.high_watermark})",
                    )
                await fetcher.wait(min(left, self._retry_backoff) if fetcher.blocked else left)
        finally:
            fetcher.strict_ranges.discard(tp)
