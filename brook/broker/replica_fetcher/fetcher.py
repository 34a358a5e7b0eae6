"""The asyncio shell of one replica fetcher: the partitions this broker follows on one leader
(one fetcher per (source broker, fetcher id)), fetched in rounds over one node connection.

Each round (Kafka's AbstractFetcherThread.doWork): truncate the Truncating partitions, let
back-offs that ran out put their partitions back, wait the injected fault delay, send one
incremental Fetch, append what comes back with ``append_as_follower`` and give each
partition's result to its state machine (state.py); partitions that ran out of range ask the
leader for its offsets (ListOffsets) before fetching again. Only partitions whose position
changed are touched by a round: the session (session.py) sends what changed, the leader
answers what changed, and the loop visits the partitions of the response.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brook.net.connection import NodeConnection, NodeUnavailable
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError, error_info

from .codec import (
    FETCH_VERSION,
    FetchedPartition,
    FetchSettings,
    decode_fetch_response,
    encode_fetch_request,
)
from .session import FetchPosition, FollowerSession, TopicPartition
from .state import FollowerState, Phase, Reaction, Truncation

if TYPE_CHECKING:
    from ..partition import Partition

log = logging.getLogger(__name__)

LIST_OFFSETS_VERSION = 7
LATEST, EARLIEST = -1, -2


@dataclass(frozen=True, slots=True)
class FetcherConfig:
    """What a fetcher runs with (the replica.fetch.* settings, in milliseconds and bytes)."""

    settings: FetchSettings
    backoff_ms: int = 1000
    request_timeout_ms: int = 30000
    # TLS / SASL of the inter-broker listener (security/node_auth.py); None: plain text
    security: Any = None


@dataclass(eq=False)
class Followed:
    """A followed partition: the hosted partition (its log) and its fetch state."""

    partition: Partition
    state: FollowerState

    @property
    def tp(self) -> TopicPartition:
        return (self.partition.topic, self.partition.partition)


class ReplicaFetcher:
    def __init__(
        self,
        source_id: int,
        fetcher_id: int,
        config: FetcherConfig,
        *,
        endpoint: Callable[[], tuple[str, int] | None],
        broker_epoch: Callable[[], int],
        delay_ms: Callable[[], int] = lambda: 0,
        clock: Callable[[], int],
        replicated: Callable[[str, int], None] = lambda _topic, _size: None,
    ) -> None:
        self.source_id = source_id
        self.fetcher_id = fetcher_id
        self.config = config
        self._endpoint = endpoint
        self._broker_epoch = broker_epoch
        self._delay_ms = delay_ms
        self._clock = clock
        # told of the bytes of each appended fetch (ReplicationBytesInPerSec)
        self._replicated = replicated
        self.partitions: dict[TopicPartition, Followed] = {}
        self._by_id: dict[tuple[uuid.UUID, int], TopicPartition] = {}
        self.session = FollowerSession()
        self._truncating: set[TopicPartition] = set()
        self._out_of_range: set[TopicPartition] = set()
        self._delayed: list[tuple[int, TopicPartition]] = []  # (until ms, tp), a heap
        self._wake = asyncio.Event()
        self._conn: NodeConnection | None = None
        self._task: asyncio.Task[None] | None = None
        self.rounds = 0  # fetches sent (tests and logs)
        self._delay_seen = 0  # the injected delay last logged

    # ------------------------------------------------------------------ partitions
    def add(self, partition: Partition) -> None:
        """Follow ``partition`` under its current leader epoch. Already followed under that
        epoch: kept as it is (Kafka keeps the fetch state when the epoch is unchanged)."""
        tp = (partition.topic, partition.partition)
        current = self.partitions.get(tp)
        if (
            current is not None
            and current.partition is partition
            and current.state.leader_epoch == partition.leader_epoch
            and current.state.phase is not Phase.FAILED
        ):
            return
        plog = partition.log
        state = FollowerState.start(
            partition.leader_id,
            partition.leader_epoch,
            log_end=plog.log_end_offset,
            latest_epoch=plog.latest_epoch(),
            high_watermark=partition.high_watermark,
        )
        self._forget(tp)
        self.partitions[tp] = Followed(partition, state)
        self._by_id[(partition.topic_id, partition.partition)] = tp
        self._schedule(tp)
        log.info(
            "following %s-%d on broker %d (leader epoch %d) from offset %d (%s)",
            *tp,
            self.source_id,
            partition.leader_epoch,
            state.fetch_offset,
            state.phase.value,
        )

    def remove(self, tp: TopicPartition) -> Followed | None:
        followed = self._forget(tp)
        if followed is not None:
            self.session.drop(tp)
            self._wake.set()
        return followed

    def _forget(self, tp: TopicPartition) -> Followed | None:
        followed = self.partitions.pop(tp, None)
        if followed is not None:
            self._by_id.pop((followed.partition.topic_id, followed.partition.partition), None)
        self._truncating.discard(tp)
        self._out_of_range.discard(tp)
        return followed

    def _schedule(self, tp: TopicPartition) -> None:
        """Put the partition where its phase says: the session, the truncation list, the
        back-off heap, or nowhere (failed)."""
        followed = self.partitions[tp]
        state = followed.state
        now = self._clock()
        if state.ready(now):
            self.session.put(tp, self._position(followed))
        else:
            self.session.drop(tp)
            if state.phase is Phase.TRUNCATING:
                self._truncating.add(tp)
            elif state.awaiting_leader_offsets:
                self._out_of_range.add(tp)
            elif state.phase is Phase.FETCHING:
                heapq.heappush(self._delayed, (state.delayed_until_ms, tp))
        self._wake.set()

    def _position(self, followed: Followed) -> FetchPosition:
        state = followed.state
        return FetchPosition(
            followed.partition.topic_id,
            state.fetch_offset,
            followed.partition.log.log_start_offset,
            self.config.settings.partition_max_bytes,
            state.leader_epoch,
            state.last_fetched_epoch,
        )

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        """End the fetch loop and wait for it. Python 3.11's ``asyncio.wait_for`` swallows a
        cancellation that lands as what it waits for completes (the idle wait woken by
        ``remove``, a response arriving), and the loop would run on for good, holding the
        node's shutdown: it is cancelled again until it has ended."""
        task, self._task = self._task, None
        if task is not None:
            while not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=1.0)
            if not task.cancelled():
                task.exception()  # retrieved: the loop ends only by cancellation
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    async def _run(self) -> None:
        while True:
            try:
                await self.run_round()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("replica fetcher for broker %d failed a round", self.source_id)
                await asyncio.sleep(self.config.backoff_ms / 1000)

    # ------------------------------------------------------------------ one round
    async def run_round(self) -> None:
        """Truncate, wait until there is something to fetch, fetch once and process it."""
        self._truncate()
        await self._resolve_out_of_range()
        self._readmit(self._clock())
        if not self.session.has_work():
            await self._idle()
            return
        delay = self._delay_ms()
        if delay != self._delay_seen:
            self._delay_seen = delay
            log.info(
                "fetches from broker %d now wait %d ms each (brook.fault.follower.fetch.delay.ms)",
                self.source_id,
                delay,
            )
        if delay > 0:
            await asyncio.sleep(delay / 1000)
        await self._fetch()

    async def _idle(self) -> None:
        """Nothing to fetch: wait for a partition, or for the first back-off to run out."""
        self._wake.clear()
        timeout = None
        if self._delayed:
            timeout = max(0, self._delayed[0][0] - self._clock()) / 1000
        if self._truncating or self._out_of_range:
            timeout = 0
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._wake.wait(), timeout)

    def _readmit(self, now: int) -> None:
        while self._delayed and self._delayed[0][0] <= now:
            _, tp = heapq.heappop(self._delayed)
            followed = self.partitions.get(tp)
            if followed is not None and followed.state.ready(now):
                self.session.put(tp, self._position(followed))

    def _truncate(self) -> None:
        for tp in list(self._truncating):
            self._truncating.discard(tp)
            followed = self.partitions.get(tp)
            if followed is None:
                continue
            truncation = followed.state.truncation()
            if truncation is not None:
                self._apply_truncation(followed, truncation)

    def _apply_truncation(self, followed: Followed, truncation: Truncation) -> None:
        """Truncate the log as the state machine decided (whole batches: an offset inside a
        batch cuts before it) and fetch from its new end; the follower's HW stays within
        the log."""
        partition, plog = followed.partition, followed.partition.log
        try:
            if truncation.fully:
                log.info(
                    "truncating %s-%d fully and starting at %d", *followed.tp, truncation.offset
                )
                plog.truncate_fully_and_start_at(truncation.offset)
            elif truncation.offset < plog.log_end_offset:
                log.info(
                    "truncating %s-%d from %d to %d",
                    *followed.tp,
                    plog.log_end_offset,
                    truncation.offset,
                )
                plog.truncate_to(truncation.offset)
        except (KafkaError, OSError) as exc:
            followed.state.fail(f"truncation failed: {exc}")
            self._schedule(followed.tp)
            return
        partition.high_watermark = max(
            plog.log_start_offset, min(partition.high_watermark, plog.log_end_offset)
        )
        followed.state.truncated(plog.log_end_offset, plog.latest_epoch())
        self._schedule(followed.tp)

    async def _fetch(self) -> None:
        conn = self._connection()
        if conn is None:
            log.debug("no endpoint for broker %d; backing off", self.source_id)
            await asyncio.sleep(self.config.backoff_ms / 1000)
            return
        request = self.session.build()
        body = encode_fetch_request(request, self.config.settings, self._broker_epoch())
        timeout_s = (self.config.settings.max_wait_ms + self.config.request_timeout_ms) / 1000
        self.rounds += 1
        try:
            raw = await conn.send_raw(ApiKey.FETCH, FETCH_VERSION, body, timeout_s)
            response = decode_fetch_response(raw)
        except Exception as exc:  # unreachable, timed out, or an unreadable response
            # Kafka backs every partition off after a failed fetch; here the fetcher waits.
            log.info("fetch from broker %d failed: %r; backing off", self.source_id, exc)
            self.session.on_send_failure()
            if not isinstance(exc, NodeUnavailable):
                conn.close()
            await asyncio.sleep(self.config.backoff_ms / 1000)
            return
        if not self.session.on_response(request, response.error_code, response.session_id):
            log.info(
                "fetch session with broker %d ended (%s); the next fetch is full",
                self.source_id,
                error_info(response.error_code).name,
            )
            return
        now = self._clock()
        for fetched in response.partitions:
            self._process(fetched, now)

    def _connection(self) -> NodeConnection | None:
        address = self._endpoint()
        if address is None:
            return None
        conn = self._conn
        if conn is None or (conn.host, conn.port) != address:
            if conn is not None:
                conn.close()
            conn = self._conn = NodeConnection(
                address[0],
                address[1],
                f"replica-fetcher-{self.source_id}-{self.fetcher_id}",
                self.config.security,
            )
        return conn

    # ------------------------------------------------------------------ responses
    def _process(self, fetched: FetchedPartition, now: int) -> None:
        tp = self._by_id.get((fetched.topic_id, fetched.partition))
        followed = self.partitions.get(tp) if tp is not None else None
        if tp is None or followed is None:
            return
        sent = self.session.held_position(tp)
        state = followed.state
        if sent is None or not state.is_current(sent.fetch_offset, sent.current_leader_epoch):
            return  # answers a position this partition has left
        plog = followed.partition.log
        if fetched.diverging_epoch is not None:
            epoch, end = fetched.diverging_epoch
            truncation = state.on_diverging(
                epoch, end, plog.end_offset_for_epoch(epoch), plog.log_end_offset
            )
            log.info(
                "%s-%d diverged from the leader at epoch %d (leader's end %d)", *tp, epoch, end
            )
            self._apply_truncation(followed, truncation)
            return
        if fetched.error_code != Errors.NONE:
            reaction = state.on_error(fetched.error_code, now, self.config.backoff_ms)
            if reaction is Reaction.FAILED:
                log.warning("%s-%d stops fetching until new metadata: %s", *tp, state.failure)
            self._schedule(tp)
            return
        if fetched.records:
            try:
                plog.append_as_follower(fetched.records)
                self._replicated(tp[0], len(fetched.records))
            except KafkaError as exc:
                if exc.code == Errors.CORRUPT_MESSAGE:
                    state.back_off(now, self.config.backoff_ms)
                else:
                    state.fail(f"append failed: {exc}")
                log.warning("%s-%d: appending fetched records failed: %s", *tp, exc)
                self._schedule(tp)
                return
        marks = state.on_records(
            log_end=plog.log_end_offset,
            latest_epoch=plog.latest_epoch(),
            log_start=plog.log_start_offset,
            leader_high_watermark=fetched.high_watermark,
            leader_log_start=fetched.log_start_offset,
        )
        if marks.log_start_offset > plog.log_start_offset:
            with contextlib.suppress(KafkaError):
                plog.maybe_increment_log_start_offset(marks.log_start_offset)
        followed.partition.high_watermark = marks.high_watermark
        self.session.put(tp, self._position(followed))

    async def _resolve_out_of_range(self) -> None:
        """OFFSET_OUT_OF_RANGE: ask the leader for its log start and end, then truncate as
        the state machine says."""
        for tp in list(self._out_of_range):
            self._out_of_range.discard(tp)
            followed = self.partitions.get(tp)
            if followed is None or not followed.state.awaiting_leader_offsets:
                continue
            try:
                start = await self._leader_offset(followed, EARLIEST)
                end = await self._leader_offset(followed, LATEST)
            except (NodeUnavailable, TimeoutError, KafkaError) as exc:
                log.info("%s-%d: the leader's offsets could not be had: %s", *tp, exc)
                if self.partitions.get(tp) is followed:
                    followed.state.leader_offsets_failed(self._clock(), self.config.backoff_ms)
                    self._schedule(tp)
                continue
            if (
                self.partitions.get(tp) is not followed
                or not followed.state.awaiting_leader_offsets
            ):
                continue  # removed or replaced while asking
            plog = followed.partition.log
            truncation = followed.state.on_leader_offsets(start, end, plog.log_end_offset)
            log.info(
                "%s-%d was out of range on the leader (log %d..%d, own end %d)",
                *tp,
                start,
                end,
                plog.log_end_offset,
            )
            self._apply_truncation(followed, truncation)

    async def _leader_offset(self, followed: Followed, timestamp: int) -> int:
        conn = self._connection()
        if conn is None:
            raise NodeUnavailable(f"no endpoint for broker {self.source_id}")
        partition = followed.partition
        request: dict[str, Any] = {
            "replica_id": self.config.settings.replica_id,
            "isolation_level": 0,
            "topics": [
                {
                    "name": partition.topic,
                    "partitions": [
                        {
                            "partition_index": partition.partition,
                            "current_leader_epoch": followed.state.leader_epoch,
                            "timestamp": timestamp,
                        }
                    ],
                }
            ],
        }
        timeout_s = self.config.request_timeout_ms / 1000
        resp = await conn.send(ApiKey.LIST_OFFSETS, LIST_OFFSETS_VERSION, request, timeout_s)
        for topic in resp.topics:
            for p in topic.partitions:
                if int(p.error_code) != Errors.NONE:
                    raise KafkaError(int(p.error_code))
                return int(p.offset)
        raise KafkaError(Errors.UNKNOWN_SERVER_ERROR, "ListOffsets answered no partition")
