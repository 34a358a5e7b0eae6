"""The fetcher: one Fetch in flight per broker, each through that broker's KIP-227 session
(brook.client.fetch_session), responses turned into buffered PartitionRecords, and poll()
served from that buffer. Partitions with buffered records are left out of the next fetch,
so the next round is already on the wire while the application works through the current
one. Partition errors move positions (auto.offset.reset), ask for metadata, or apply
KIP-951 leader hints, as Java's AbstractFetch / FetchCollector do."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from ..cluster import TopicPartition
from ..connection import NetworkError
from ..fetch_session import (
    FINAL_EPOCH,
    INVALID_SESSION_ID,
    ZERO_UUID,
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
)
from ..list_offsets import ISOLATION_LEVELS
from ..network import NetworkClient
from .consumer_metrics import ConsumerMetrics
from .errors import OffsetOutOfRangeError
from .fetch_request import (
    FETCH_MAX_VERSION,
    FETCH_MAX_VERSION_NAMES,
    FETCH_MIN_VERSION,
    FetchResponse,
    FetchSettings,
    decode_fetch_response,
    encode_fetch_request,
)
from .partition_records import PartitionRecords
from .record import ConsumerRecord
from .subscription import FetchState, SubscriptionState

__all__ = ["FetchStats", "Fetcher"]

log = logging.getLogger(__name__)

# Errors after which the partition's leader or topic must be looked up again.
_METADATA_ERRORS = frozenset(
    {
        Errors.NOT_LEADER_OR_FOLLOWER,
        Errors.FENCED_LEADER_EPOCH,
        Errors.UNKNOWN_LEADER_EPOCH,
        Errors.UNKNOWN_TOPIC_OR_PARTITION,
        Errors.UNKNOWN_TOPIC_ID,
        Errors.INCONSISTENT_TOPIC_ID,
        Errors.LEADER_NOT_AVAILABLE,
        Errors.REPLICA_NOT_AVAILABLE,
        Errors.KAFKA_STORAGE_ERROR,
        Errors.OFFSET_NOT_AVAILABLE,
    }
)
_LEADER_HINT_ERRORS = frozenset({Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH})
_SESSION_ERRORS = frozenset(
    {
        Errors.FETCH_SESSION_ID_NOT_FOUND,
        Errors.INVALID_FETCH_SESSION_EPOCH,
        Errors.FETCH_SESSION_TOPIC_ID_ERROR,
    }
)


@dataclass
class FetchStats:
    """Counters of what the fetcher sent and received (tests and metrics() read them)."""

    full_requests: int = 0
    incremental_requests: int = 0
    sessionless_requests: int = 0
    responses: int = 0
    session_errors: int = 0
    network_errors: int = 0
    records: int = 0
    bytes: int = 0
    leader_hints_applied: int = 0


@dataclass(slots=True)
class _InFlight:
    node: int
    version: int
    request: FetchRequestData
    handler: FetchSessionHandler | None
    assignment_id: int
    sent_at: float


class Fetcher:
    """Fetches for the partitions of ``subscriptions`` through ``network``."""

    def __init__(
        self,
        config: Mapping[str, Any],
        network: NetworkClient,
        subscriptions: SubscriptionState,
        *,
        key_deserializer: Callable[[Any], Any] | None = None,
        value_deserializer: Callable[[Any], Any] | None = None,
        metrics: ConsumerMetrics | None = None,
    ) -> None:
        self._network = network
        self._metrics = metrics
        self._subscriptions = subscriptions
        self._sessions_enabled = bool(config["brook.fetch.sessions.enable"])
        self._leader_discovery = bool(config["brook.leader.discovery.enable"])
        self._check_crcs = bool(config["check.crcs"])
        self._read_committed = config["isolation.level"] == "read_committed"
        self._partition_max_bytes = int(config["max.partition.fetch.bytes"])
        self._settings = FetchSettings(
            max_wait_ms=int(config["fetch.max.wait.ms"]),
            min_bytes=int(config["fetch.min.bytes"]),
            max_bytes=int(config["fetch.max.bytes"]),
            isolation_level=ISOLATION_LEVELS[config["isolation.level"]],
            rack_id=config["client.rack"] or "",
        )
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self._sessions: dict[int, FetchSessionHandler] = {}
        self._session_ids_used: dict[int, bool] = {}  # node -> its session names topics by id
        self._in_flight: dict[int, _InFlight] = {}
        self._buffer: deque[PartitionRecords] = deque()
        self._errors: list[BaseException] = []
        self._out_of_range: dict[TopicPartition, int] = {}
        self._connecting: dict[int, asyncio.Task[None]] = {}
        self._wake: asyncio.Event | None = None
        self.blocked = False  # the last round left partitions out for want of leader or link
        # Partitions read as fixed ranges: out of range is data loss, whatever the policy.
        self.strict_ranges: set[TopicPartition] = set()
        self.stats = FetchStats()

    # -- state -----------------------------------------------------------------------------

    def session(self, node: int) -> FetchSessionHandler | None:
        return self._sessions.get(node)

    @property
    def in_flight(self) -> frozenset[int]:
        return frozenset(self._in_flight)

    def buffered_partitions(self) -> set[TopicPartition]:
        return {pr.tp for pr in self._buffer if not pr.consumed}

    def clear_buffer(self) -> None:
        """Drop every buffered record (the assignment changed)."""
        for pr in self._buffer:
            pr.drain()
        self._buffer.clear()

    def _event(self) -> asyncio.Event:
        if self._wake is None:
            self._wake = asyncio.Event()
        return self._wake

    def wake(self) -> None:
        self._event().set()

    async def wait(self, timeout: float) -> None:
        """Until a response arrives (or anything else calls wake()), at most ``timeout`` s."""
        event = self._event()
        if not event.is_set() and timeout > 0:
            try:
                async with asyncio.timeout(timeout):
                    await event.wait()
            except TimeoutError:
                pass
        event.clear()

    # -- sending ---------------------------------------------------------------------------

    def send_fetches(self) -> int:
        """Send a Fetch to every broker that leads a fetchable partition and has none in
        flight; returns how many were sent."""
        subscriptions = self._subscriptions
        cluster = self._network.cluster
        buffered = self.buffered_partitions()
        wanted: dict[int, dict[TopicPartition, PartitionData]] = {}
        blocked = False
        for tp in subscriptions.fetchable():
            if tp in buffered:
                continue
            leader = cluster.leader_for(tp)
            if leader is None:
                cluster.request_update()
                blocked = True
                continue
            if leader in self._in_flight:
                continue
            if self._network.connection_for(leader) is None:
                self._connect(leader)
                blocked = True
                continue
            state = subscriptions.states()[tp]
            assert state.position is not None
            wanted.setdefault(leader, {})[tp] = PartitionData(
                topic_id=cluster.topic_id(tp.topic) or ZERO_UUID,
                fetch_offset=state.position,
                log_start_offset=-1,
                max_bytes=self._partition_max_bytes,
                current_leader_epoch=cluster.leader_epoch(tp),
                last_fetched_epoch=-1,
            )
        self.blocked = blocked
        sent = 0
        for node, partitions in wanted.items():
            if self._send(node, partitions):
                sent += 1
        return sent

    def _send(self, node: int, partitions: dict[TopicPartition, PartitionData]) -> bool:
        conn = self._network.connection_for(node)
        if conn is None:
            return False
        ids = all(pd.topic_id != ZERO_UUID for pd in partitions.values())
        try:
            top = conn.version_for(ApiKey.FETCH, FETCH_MIN_VERSION, FETCH_MAX_VERSION)
        except KafkaError as exc:
            self._errors.append(exc)
            return False
        ids = ids and top >= 13
        handler: FetchSessionHandler | None = None
        if self._sessions_enabled:
            handler = self._sessions.get(node)
            if handler is None:
                handler = self._sessions[node] = FetchSessionHandler(node)
            if not handler.is_full and self._session_ids_used.get(node) != ids:
                # A session may not switch between topic names and ids: start a new one.
                handler.handle_error()
            request = handler.build(partitions)
            ids = ids and request.can_use_topic_ids
            if request.is_full:
                self.stats.full_requests += 1
                self._session_ids_used[node] = ids
            else:
                self.stats.incremental_requests += 1
        else:
            request = FetchRequestData(
                session_id=INVALID_SESSION_ID,
                epoch=FINAL_EPOCH,
                is_full=True,
                to_send=dict(partitions),
                to_forget=[],
                to_replace=[],
                session_partitions=dict(partitions),
                can_use_topic_ids=ids,
            )
            self.stats.sessionless_requests += 1
        version = top if ids else min(top, FETCH_MAX_VERSION_NAMES)
        body = encode_fetch_request(version, request, self._settings)
        try:
            future = conn.submit(ApiKey.FETCH, version, body)
        except NetworkError:
            if handler is not None:
                handler.handle_error()
            return False
        flight = _InFlight(
            node, version, request, handler, self._subscriptions.assignment_id, time.monotonic()
        )
        self._in_flight[node] = flight
        future.add_done_callback(lambda f: self._on_response(flight, f))
        return True

    def _connect(self, node: int) -> None:
        if node in self._connecting:
            return

        async def connect() -> None:
            try:
                await self._network.connection(node)
            except KafkaError as exc:
                log.debug("fetcher: cannot connect to node %s: %s", node, exc)
                self._network.cluster.request_update()
            finally:
                self._connecting.pop(node, None)
                self.wake()

        self._connecting[node] = asyncio.get_running_loop().create_task(connect())

    # -- receiving -------------------------------------------------------------------------

    def _on_response(self, flight: _InFlight, future: asyncio.Future[bytes]) -> None:
        self._in_flight.pop(flight.node, None)
        handler = flight.handler
        try:
            if future.cancelled():
                raise NetworkError("fetch cancelled")
            body = future.result()
            names = {
                pd.topic_id: tp[0]
                for tp, pd in flight.request.session_partitions.items()
                if pd.topic_id != ZERO_UUID
            }
            response = decode_fetch_response(flight.version, body, names)
        except Exception as exc:
            # A lost request or response leaves the session's state unknown: start over.
            self.stats.network_errors += 1
            if handler is not None:
                handler.handle_error()
            if isinstance(exc, NetworkError):
                self._network.cluster.request_update()
            log.debug("fetch from node %s failed: %s", flight.node, exc)
            self.wake()
            return
        self.stats.responses += 1
        if self._metrics is not None:
            self._metrics.record_response(
                (time.monotonic() - flight.sent_at) * 1000,
                sum(len(p.records or b"") for p in response.partitions),
                response.throttle_time_ms,
            )
        self._handle(flight, response)
        self.wake()

    def _handle(self, flight: _InFlight, response: FetchResponse) -> None:
        request = flight.request
        handler = flight.handler
        if handler is not None:
            ok = handler.handle_response(
                error_code=response.error_code,
                session_id=response.session_id,
                partitions=[p.tp for p in response.partitions],
                request=request,
                throttle_time_ms=response.throttle_time_ms,
            )
            if response.error_code in _SESSION_ERRORS:
                self.stats.session_errors += 1
            if not ok:
                if response.error_code == Errors.FETCH_SESSION_TOPIC_ID_ERROR:
                    self._network.cluster.request_update()
                log.debug(
                    "fetch session %s with node %s: response not usable (error %s)",
                    request.session_id,
                    flight.node,
                    response.error_code,
                )
                return
        elif response.error_code:
            log.debug("fetch from node %s: error %s", flight.node, response.error_code)
            return
        if response.unknown_topic_ids:
            self._network.cluster.request_update()
        subscriptions = self._subscriptions
        states = subscriptions.states()
        session = request.session_partitions
        hints: dict[tuple[str, int], tuple[int, int]] = {}
        refresh = False
        for p in response.partitions:
            tp = p.tp
            sent = session.get(tp)
            state = states.get(tp)
            if sent is None or state is None or flight.assignment_id != subscriptions.assignment_id:
                continue
            code = p.error_code
            if code == Errors.NONE:
                subscriptions.update_fetch_info(
                    tp, p.high_watermark, p.last_stable_offset, p.log_start_offset
                )
                if p.records and state.position == sent.fetch_offset:
                    self.stats.bytes += len(p.records)
                    self._buffer.append(
                        PartitionRecords(
                            tp,
                            sent.fetch_offset,
                            p.records,
                            check_crcs=self._check_crcs,
                            read_committed=self._read_committed,
                            aborted_transactions=p.aborted_transactions,
                            key_deserializer=self._key_deserializer,
                            value_deserializer=self._value_deserializer,
                            assignment_id=flight.assignment_id,
                        )
                    )
            elif code == Errors.OFFSET_OUT_OF_RANGE:
                self._out_of_range_at(tp, sent.fetch_offset)
            elif code in _METADATA_ERRORS:
                refresh = True
                if code in _LEADER_HINT_ERRORS and p.current_leader is not None:
                    hints[tp] = p.current_leader
            else:
                self._errors.append(
                    KafkaError(code, f"fetching {tp.topic}-{tp.partition} at {sent.fetch_offset}")
                )
        if refresh:
            # KIP-951 or not, the metadata is refreshed; the hint only gets there first.
            self._network.cluster.request_update()
        if hints and self._leader_discovery:
            updated = self._network.cluster.update_partition_leadership(
                hints, response.node_endpoints
            )
            self.stats.leader_hints_applied += len(updated)

    def _out_of_range_at(self, tp: TopicPartition, fetch_offset: int) -> None:
        state = self._subscriptions.states()[tp]
        if state.position != fetch_offset or state.fetch_state is not FetchState.FETCHING:
            return  # the application moved the position meanwhile
        if tp in self.strict_ranges or self._subscriptions.default_reset == "none":
            self._out_of_range[tp] = fetch_offset
        else:
            log.info(
                "fetch position %s is out of range for %s-%s; resetting (auto.offset.reset=%s)",
                fetch_offset,
                tp.topic,
                tp.partition,
                self._subscriptions.default_reset,
            )
            self._subscriptions.request_reset(tp)

    # -- handing out records ---------------------------------------------------------------

    def collect(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` buffered records, advancing the positions; raises errors the
        responses carried (out of range with no reset policy, corrupt data, ...)."""
        self._raise_errors()
        subscriptions = self._subscriptions
        states = subscriptions.states()
        assignment_id = subscriptions.assignment_id
        out: list[ConsumerRecord] = []
        buffer = self._buffer
        paused: list[PartitionRecords] = []
        try:
            while buffer and len(out) < max_records:
                pr = buffer.popleft()
                state = states.get(pr.tp)
                if (
                    pr.consumed
                    or state is None
                    or pr.assignment_id != assignment_id
                    or state.fetch_state is not FetchState.FETCHING
                    or state.position != pr.next_offset
                ):
                    pr.drain()
                    continue
                if state.paused:
                    paused.append(pr)
                    continue
                try:
                    records = pr.take(max_records - len(out))
                except Exception:
                    if not out:
                        raise
                    # Hand out what was taken; the same error comes back on the next poll,
                    # since the position stays at the bad batch or record.
                    break
                finally:
                    subscriptions.advance(pr.tp, pr.next_offset, pr.epoch)
                    if not pr.consumed:
                        buffer.appendleft(pr)
                out.extend(records)
                if self._metrics is not None:
                    self._record_consumed(pr, len(records), state.high_watermark)
        finally:
            buffer.extendleft(reversed(paused))
        self.stats.records += len(out)
        return out

    def _record_consumed(self, pr: PartitionRecords, count: int, high_watermark: int) -> None:
        assert self._metrics is not None
        # Bytes count once per fetched chunk, when its last record is handed out.
        self._metrics.record_consumed(pr.tp.topic, count, pr.size if pr.consumed else 0)
        if high_watermark >= 0:
            self._metrics.record_lag(max(0, high_watermark - pr.next_offset))

    def _raise_errors(self) -> None:
        if self._out_of_range:
            pending = {
                tp: offset
                for tp, offset in self._out_of_range.items()
                if tp in self._subscriptions.states()
                and self._subscriptions.states()[tp].position == offset
            }
            self._out_of_range.clear()
            if pending:
                raise OffsetOutOfRangeError(pending)
        if self._errors:
            error = self._errors.pop(0)
            self._errors.clear()
            raise error

    # -- closing ---------------------------------------------------------------------------

    async def close(self, timeout: float) -> None:
        """Close every open fetch session on its broker (epoch -1), waiting at most
        ``timeout`` seconds for the answers. Where a long-polling fetch is still in flight the
        close request goes out unanswered-for: waiting would mean waiting out the poll."""
        for task in list(self._connecting.values()):
            task.cancel()
        futures = []
        unwaited = []
        for node, handler in self._sessions.items():
            request = handler.close()
            conn = self._network.connection_for(node)
            if request is None or conn is None:
                continue
            try:
                top = conn.version_for(ApiKey.FETCH, FETCH_MIN_VERSION, FETCH_MAX_VERSION)
            except KafkaError:
                continue
            ids = self._session_ids_used.get(node, False)
            version = top if ids else min(top, FETCH_MAX_VERSION_NAMES)
            body = encode_fetch_request(version, request, self._settings)
            try:
                future = conn.submit(ApiKey.FETCH, version, body)
            except NetworkError:
                continue
            (unwaited if node in self._in_flight else futures).append(future)
        if futures and timeout > 0:
            await asyncio.wait(futures, timeout=timeout)
        for future in futures + unwaited:
            if future.done() and not future.cancelled():
                future.exception()
            else:
                future.cancel()
        self.clear_buffer()
