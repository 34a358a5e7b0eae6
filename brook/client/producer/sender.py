"""The sender: one asyncio task that drains ready batches into Produce requests, completes
them from the responses, and retries what can be retried (Java's Sender).

It sleeps until woken (a batch filled, a new batch needs its linger timer, flush, a response)
or until the next linger / backoff / expiry deadline. Produce requests are hand-encoded with
the batches as buffers and written with ``BrokerConnection.submit`` (``send_no_response`` for
acks=0). KIP-951: leader hints in NOT_LEADER_OR_FOLLOWER responses update the metadata cache,
and the first retry toward a newer leader epoch skips the backoff.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable, Mapping
from typing import Any

from brook.client.config import acks_value
from brook.client.connection import (
    BrokerConnection,
    NetworkError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from brook.client.network import NetworkClient, backoff_ms
from brook.client.partitioner import NodeLatencyTracker
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError, error_info
from brook.protocol.produce_codec import (
    PartitionProduceResult,
    decode_produce_response,
    encode_produce_request,
)

from .accumulator import RecordAccumulator, now_ms
from .batch import ProducerBatch
from .errors import (
    KafkaTimeoutError,
    ProducerClosedError,
    RecordNotAppendedError,
    TransactionAbortedError,
)
from .idempotence import IdempotenceManager
from .producer_metrics import ProducerMetrics

__all__ = ["Sender"]

log = logging.getLogger(__name__)

PRODUCE_MIN_VERSION = 3  # RecordBatch v2
PRODUCE_MAX_VERSION = 12  # v13 names topics by id
_LEADER_HINT_ERRORS = (Errors.NOT_LEADER_OR_FOLLOWER, Errors.FENCED_LEADER_EPOCH)
_FRAME_OVERHEAD = 4 + 8 + 2  # size, api key/version/correlation, client id length


class _InFlight:
    __slots__ = ("batches", "node", "sent_ms", "size", "version")

    def __init__(
        self,
        node: int,
        batches: dict[tuple[str, int], ProducerBatch],
        version: int,
        sent_ms: float,
        size: int,
    ) -> None:
        self.node = node
        self.batches = batches
        self.version = version
        self.sent_ms = sent_ms
        self.size = size


class Sender:
    def __init__(
        self,
        config: Mapping[str, Any],
        network: NetworkClient,
        accumulator: RecordAccumulator,
        idempotence: IdempotenceManager | None,
        metrics: ProducerMetrics,
        tracker: NodeLatencyTracker,
    ) -> None:
        self.network = network
        self.accumulator = accumulator
        self.idempotence = idempotence
        self.metrics = metrics
        self.tracker = tracker
        self.acks = acks_value(config["acks"])
        self.retries = int(config["retries"])
        self.retry_backoff_ms = float(config["retry.backoff.ms"])
        self.retry_backoff_max_ms = float(config["retry.backoff.max.ms"])
        self.request_timeout_ms = int(config["request.timeout.ms"])
        self.delivery_timeout_ms = float(config["delivery.timeout.ms"])
        self.max_request_size = int(config["max.request.size"])
        self.max_in_flight = int(config["max.in.flight.requests.per.connection"])
        self.leader_discovery = bool(config["brook.leader.discovery.enable"])
        # max.in.flight=1 keeps order without idempotence by muting a partition while its
        # batch is in flight (Java's guaranteeMessageOrder).
        self.guarantee_order = self.max_in_flight == 1
        self._in_flight_batches: dict[tuple[str, int], list[ProducerBatch]] = {}
        self._requests_in_flight = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0
        self._waiter: asyncio.Future[None] | None = None
        self._woken = False
        self._wake_scheduled = False
        self._running = True
        self._force_close = False
        self._task: asyncio.Task[None] | None = None
        self._helpers: set[asyncio.Task[Any]] = set()
        self._connecting: set[int] = set()
        self._init_in_progress = False
        self._init_attempts = 0
        self._init_next_ms = 0.0
        # Told when a batch completes (the transactional requests wait for the last one).
        self.on_batch_done: Callable[[], None] | None = None

    # -- lifecycle and wakeups -------------------------------------------------------------

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._task = self._loop.create_task(self._run(), name="brook-producer-sender")

    @property
    def requests_in_flight(self) -> int:
        return self._requests_in_flight

    def wakeup(self) -> None:
        """Make the sender look at the accumulator now; safe from any thread."""
        if self._woken:
            return
        self._woken = True
        if threading.get_ident() == self._thread:
            self._wake()
        elif not self._wake_scheduled and self._loop is not None:
            self._wake_scheduled = True
            try:
                self._loop.call_soon_threadsafe(self._wake_from_thread)
            except RuntimeError:
                pass  # loop closed: the producer is gone

    def _wake_from_thread(self) -> None:
        self._wake_scheduled = False
        self._wake()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def initiate_close(self) -> None:
        self._running = False
        self.wakeup()

    def force_close(self) -> None:
        self._force_close = True
        self._running = False
        self.wakeup()

    async def wait_closed(self) -> None:
        if self._task is not None:
            await asyncio.shield(self._task)

    async def _wait(self, delay_ms: float) -> None:
        if self._woken:
            self._woken = False
            await asyncio.sleep(0)
            return
        loop = self._loop
        assert loop is not None
        waiter = self._waiter = loop.create_future()
        handle = None
        if delay_ms != float("inf"):
            handle = loop.call_at(loop.time() + delay_ms / 1000, _set_result, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            self._woken = False
            if handle is not None:
                handle.cancel()

    async def _run(self) -> None:
        while self._running:
            await self._wait(self._run_once_safely())
        # Closing: send what is left unless forced, then fail whatever remains.
        acc = self.accumulator
        while not self._force_close and (
            acc.has_undrained() or self._requests_in_flight or self._has_incomplete()
        ):
            await self._wait(self._run_once_safely())
        if acc.incomplete:
            error = ProducerClosedError("the producer was closed forcefully before delivery")
            for batch in acc.remove_all_queued():
                self._fail(batch, error, adjust=False)
            for batch in list(acc.incomplete):
                self._fail(batch, error, adjust=False)
        for task in list(self._helpers):
            task.cancel()

    def _has_incomplete(self) -> bool:
        return any(not b.is_done for b in list(self.accumulator.incomplete))

    def _run_once_safely(self) -> float:
        try:
            return self._run_once()
        except Exception:
            log.exception("producer sender loop failed; retrying")
            return self.retry_backoff_ms

    # -- one pass --------------------------------------------------------------------------

    def _run_once(self) -> float:
        now = now_ms()
        acc = self.accumulator
        idem = self.idempotence
        network = self.network
        if idem is not None:
            idem.maybe_resolve_sequences()
            if idem.has_fatal_error:
                self._abort_all(idem.fatal_error)
                return float("inf")
            txn = idem.txn
            if txn is not None:
                if txn.has_fatal_error:
                    self._abort_all(txn.last_error)
                    return float("inf")
                if txn.has_abortable_error or txn.is_aborting:
                    # Java's abortUndrainedBatches: what was not sent never will be.
                    self._abort_undrained(txn.last_error)
            idem.bump_epoch_and_reset_id_if_needed()
            if idem.needs_producer_id():
                if now >= self._init_next_ms:
                    self._start_init_producer_id()
                else:
                    return self._init_next_ms - now
        cluster = network.cluster
        check = acc.ready(cluster, now)
        nodes = check.nodes
        delay = check.next_delay_ms
        if check.unknown_leader_topics:
            # As Java's Sender: ask for metadata on every pass while a leader is unknown, and
            # look again soon, so a batch leaves as soon as its leader is known.
            cluster.request_update()
            delay = min(delay, self.retry_backoff_ms)
        for node in list(nodes):
            conn = network.connection_for(node)
            if conn is None or conn.in_flight >= self.max_in_flight or not conn.writable:
                nodes.discard(node)
                self.tracker.record(node, int(now), False)
                if conn is None:
                    self._connect(node)
                elif not conn.writable:
                    self._await_drain(conn)
            else:
                self.tracker.record(node, int(now), True)
        batches = acc.drain(cluster, nodes, self.max_request_size, now, idem)
        # Expiring may leave sequences to resolve or an epoch to bump: look again at once.
        again = self._expire(now)
        for node, node_batches in batches.items():
            self._send_produce(node, node_batches, now)
            again = True
        if again:
            return 0.0
        if acc.incomplete:
            delay = min(delay, acc.next_expiry_delay(now), self._next_in_flight_expiry(now))
        return delay

    # -- connections -----------------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        assert self._loop is not None
        task = self._loop.create_task(coro)
        self._helpers.add(task)
        task.add_done_callback(self._helpers.discard)

    def _connect(self, node: int) -> None:
        if node in self._connecting:
            return
        self._connecting.add(node)
        self._spawn(self._connect_task(node))

    async def _connect_task(self, node: int) -> None:
        try:
            await self.network.connection(node)
        except KafkaError as exc:
            log.debug("cannot connect to node %d: %s", node, exc)
            self.network.cluster.request_update()
        except asyncio.CancelledError:
            raise
        finally:
            self._connecting.discard(node)
            self.wakeup()

    def _await_drain(self, conn: BrokerConnection) -> None:
        async def drain() -> None:
            try:
                await conn.drain()
            except KafkaError:
                pass
            finally:
                self.wakeup()

        self._spawn(drain())

    def _transactional_id(self) -> str | None:
        """Produce carries the transactional id, as Java's: the partition leader verifies a
        transaction's first batch with its coordinator (KIP-890) and authorizes the id."""
        idem = self.idempotence
        txn = None if idem is None else idem.txn
        return None if txn is None else txn.transactional_id

    # -- InitProducerId --------------------------------------------------------------------

    def _start_init_producer_id(self) -> None:
        idem = self.idempotence
        assert idem is not None
        if self._init_in_progress:
            return
        idem.initializing()
        self._init_in_progress = True
        self._spawn(self._init_producer_id())

    async def _init_producer_id(self) -> None:
        idem = self.idempotence
        assert idem is not None
        request = {
            "transactional_id": None,
            "transaction_timeout": 2147483647,
            "producer_id": -1,
            "producer_epoch": -1,
        }
        try:
            response = await self.network.send_any(
                ApiKey.INIT_PRODUCER_ID, request, timeout_ms=self.request_timeout_ms
            )
            code = int(response.error_code)
            if code:
                idem.init_failed(KafkaError(code, "InitProducerId for the idempotent producer"))
            else:
                idem.set_producer_id(int(response.producer_id), int(response.producer_epoch))
                self._init_attempts = 0
        except UnsupportedVersionError as exc:
            idem.transition_to_fatal(
                KafkaError(
                    Errors.UNSUPPORTED_VERSION,
                    f"the broker cannot give this idempotent producer an id ({exc.message}); "
                    "set enable.idempotence=false to produce to it",
                )
            )
        except KafkaError as exc:
            log.debug("InitProducerId failed: %s", exc)
            idem.init_failed(exc if exc.retriable else KafkaError(exc.code, exc.message))
        finally:
            self._init_in_progress = False
            if idem.needs_producer_id():
                wait = backoff_ms(
                    self.retry_backoff_ms, self.retry_backoff_max_ms, self._init_attempts
                )
                self._init_attempts += 1
                self._init_next_ms = now_ms() + wait
            self.wakeup()

    # -- Produce requests ------------------------------------------------------------------

    def _send_produce(self, node: int, batches: list[ProducerBatch], now: float) -> None:
        conn = self.network.connection_for(node)
        if conn is None:
            for batch in batches:
                self._track(batch)
            self._complete_all(batches, NetworkError(f"node {node} is not connected"), now)
            return
        version = conn.version_for(ApiKey.PRODUCE, PRODUCE_MIN_VERSION, PRODUCE_MAX_VERSION)
        by_topic: dict[str, list[tuple[int, tuple[bytes, bytes | bytearray]]]] = {}
        by_tp: dict[tuple[str, int], ProducerBatch] = {}
        for batch in batches:
            topic, partition = batch.tp
            by_topic.setdefault(topic, []).append((partition, batch.wire()))
            by_tp[batch.tp] = batch
            self._track(batch)
            batch.in_flight_node = node
            if self.guarantee_order:
                self.accumulator.muted.add(batch.tp)
        timeout = self.request_timeout_ms
        parts = encode_produce_request(
            version, self.acks, timeout, list(by_topic.items()), self._transactional_id()
        )
        size = sum(len(p) for p in parts) + _FRAME_OVERHEAD + len(self.network.client_id)
        self.metrics.record_request(node, batches, size, now)
        if self.acks == 0:
            try:
                conn.send_no_response(ApiKey.PRODUCE, version, parts)
            except NetworkError as exc:
                self._complete_all(batches, exc, now)
                return
            for batch in batches:
                self._complete(batch, PartitionProduceResult(batch.tp[1]), now, {})
            return
        request = _InFlight(node, by_tp, version, now, size)
        try:
            future = conn.submit(ApiKey.PRODUCE, version, parts, timeout)
        except NetworkError as exc:
            self._complete_all(batches, exc, now)
            return
        self._requests_in_flight += 1
        future.add_done_callback(functools.partial(self._on_response, request, conn))

    def _track(self, batch: ProducerBatch) -> None:
        self._in_flight_batches.setdefault(batch.tp, []).append(batch)

    def _untrack(self, batch: ProducerBatch) -> None:
        batches = self._in_flight_batches.get(batch.tp)
        if batches is not None:
            try:
                batches.remove(batch)
            except ValueError:
                pass
            if not batches:
                del self._in_flight_batches[batch.tp]

    def _on_response(
        self, request: _InFlight, conn: BrokerConnection, future: asyncio.Future[bytes]
    ) -> None:
        self._requests_in_flight -= 1
        now = now_ms()
        try:
            if future.cancelled():
                error: KafkaError | None = NetworkError(f"request to node {request.node} cancelled")
            else:
                error = future.exception()  # type: ignore[assignment]
            if error is not None:
                if isinstance(error, RequestTimeoutError):
                    # As Java's NetworkClient: a timed-out request closes the connection, so
                    # nothing sent after it can land before it.
                    conn.close()
                self.network.cluster.request_update()
                self._complete_all(list(request.batches.values()), error, now)
                return
            body = future.result()
            self.metrics.record_response(request.node, len(body) + 8, now - request.sent_ms)
            try:
                response = decode_produce_response(request.version, body)
            except ValueError as exc:
                conn.close()
                self._complete_all(list(request.batches.values()), NetworkError(str(exc)), now)
                return
            if response.throttle_ms:
                self.metrics.record_throttle(response.throttle_ms)
            hints: dict[tuple[str, int], tuple[int, int]] = {}
            seen: set[tuple[str, int]] = set()
            for topic, results in response.topics:
                for result in results:
                    tp = (topic, result.index)
                    batch = request.batches.get(tp)
                    if batch is None:
                        continue
                    seen.add(tp)
                    self._complete(batch, result, now, hints)
            missing = [b for tp, b in request.batches.items() if tp not in seen]
            if missing:
                self._complete_all(
                    missing,
                    KafkaError(Errors.UNKNOWN_SERVER_ERROR, "partition missing from response"),
                    now,
                )
            if hints and self.leader_discovery:
                endpoints = {
                    node_id: (host, port, rack)
                    for node_id, host, port, rack in (response.node_endpoints or ())
                }
                updated = self.network.cluster.update_partition_leadership(hints, endpoints)
                if updated:
                    log.debug("leader hints applied for %s", sorted(updated))
        finally:
            self.wakeup()

    def _complete_all(self, batches: list[ProducerBatch], error: BaseException, now: float) -> None:
        """Every batch of a request that got no usable response, with one error."""
        code = Errors.NETWORK_EXCEPTION
        message = str(error)
        if isinstance(error, KafkaError):
            code = error.code
            message = error.message or error.name
        for batch in batches:
            result = PartitionProduceResult(batch.tp[1], code)
            result.error_message = message
            self._complete(batch, result, now, {})

    def _complete(
        self,
        batch: ProducerBatch,
        result: PartitionProduceResult,
        now: float,
        hints: dict[tuple[str, int], tuple[int, int]],
    ) -> None:
        """Java's Sender.completeBatch: success, retry, duplicate, or failure."""
        self._untrack(batch)
        if self.guarantee_order:
            self.accumulator.muted.discard(batch.tp)
        idem = self.idempotence
        code = result.error_code
        if code == Errors.NONE:
            self._succeed(batch, result.base_offset, result.log_append_time_ms)
            return
        error = KafkaError(code, _describe(batch, result))
        if idem is not None:
            retriable = idem.can_retry(code, result.log_start_offset, batch)
        else:
            retriable = error.retriable
        if (
            retriable
            and not batch.is_done
            and batch.attempts < self.retries
            and now - batch.created_ms < self.delivery_timeout_ms
        ):
            log.debug("retrying %r after %s", batch, error)
            wait = backoff_ms(self.retry_backoff_ms, self.retry_backoff_max_ms, batch.attempts)
            self.accumulator.reenqueue(batch, now, wait)
            self.metrics.record_retries(batch.tp[0], batch.count)
        elif code == Errors.DUPLICATE_SEQUENCE_NUMBER:
            # The broker has the batch but no longer knows its offset: success without one.
            self._succeed(batch, -1, -1)
        elif batch.is_done:
            # Expired while in flight; its outcome still settles the sequence bookkeeping.
            if idem is not None:
                idem.remove_in_flight(batch)
        else:
            self._fail(
                batch,
                error,
                adjust=batch.attempts < self.retries,
                record_errors=_record_errors(batch, result),
            )
        if error.invalid_metadata:
            self.network.cluster.request_update()
            leader = result.current_leader
            if code in _LEADER_HINT_ERRORS and leader is not None and min(leader) >= 0:
                hints[batch.tp] = leader

    def _succeed(self, batch: ProducerBatch, base_offset: int, log_append_time: int) -> None:
        if self.idempotence is not None:
            self.idempotence.handle_completed(batch, base_offset)
        if batch.done(base_offset, log_append_time, None):
            self.accumulator.deallocate(batch)
        if self.on_batch_done is not None:
            self.on_batch_done()

    def _fail(
        self,
        batch: ProducerBatch,
        error: BaseException,
        adjust: bool,
        record_errors: Callable[[int], BaseException] | None = None,
    ) -> None:
        self._untrack(batch)
        self.metrics.record_errors(batch.tp[0], batch.count)
        if batch.done(-1, -1, error, record_errors):
            if self.idempotence is not None and isinstance(error, KafkaError):
                self.idempotence.handle_failed(batch, error, adjust)
            self.accumulator.deallocate(batch)
        if self.on_batch_done is not None:
            self.on_batch_done()

    # -- expiry ----------------------------------------------------------------------------

    def _expire(self, now: float) -> bool:
        """Fail batches past delivery.timeout.ms; True if there were any."""
        idem = self.idempotence
        timeout = self.delivery_timeout_ms
        expired = self.accumulator.expired_batches(now)
        for batches in list(self._in_flight_batches.values()):
            for batch in list(batches):
                if now - batch.created_ms >= timeout and not batch.is_done:
                    expired.append(batch)
        for batch in expired:
            message = (
                f"Expiring {batch.count} record(s) for {batch.tp[0]}-{batch.tp[1]}: "
                f"{int(now - batch.created_ms)} ms has passed since batch creation "
                f"(delivery.timeout.ms={int(timeout)})"
            )
            in_flight = batch.in_flight_node >= 0
            self.metrics.record_errors(batch.tp[0], batch.count)
            error = KafkaTimeoutError(message)
            if batch.done(-1, -1, error):
                self.accumulator.deallocate(batch)
                if idem is not None:
                    idem.handle_failed(batch, error, adjust=False)
                if self.on_batch_done is not None:
                    self.on_batch_done()
            if not in_flight:
                self._untrack(batch)
            if idem is not None and batch.has_sequence and batch.attempts > 0:
                # It may have reached the broker: its sequence is unknown until the rest settle.
                idem.mark_sequence_unresolved(batch)
        return bool(expired)

    def _next_in_flight_expiry(self, now: float) -> float:
        earliest = float("inf")
        for batches in self._in_flight_batches.values():
            for batch in batches:
                if not batch.is_done:
                    earliest = min(earliest, batch.created_ms)
        return max(0.0, earliest + self.delivery_timeout_ms - now)

    def _abort_undrained(self, error: KafkaError | None) -> None:
        failure: BaseException = error or TransactionAbortedError()
        for batch in self.accumulator.remove_all_queued():
            self._fail(batch, failure, adjust=False)

    def _abort_all(self, error: KafkaError | None) -> None:
        error = error or KafkaError(Errors.UNKNOWN_SERVER_ERROR, "producer failed")
        for batch in self.accumulator.remove_all_queued():
            self._fail(batch, error, adjust=False)
        for batch in list(self.accumulator.incomplete):
            self._fail(batch, error, adjust=False)


def _set_result(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


def _record_errors(
    batch: ProducerBatch, result: PartitionProduceResult
) -> Callable[[int], BaseException] | None:
    """Java's Sender.failBatch for a response naming bad records (KIP-467): each named record
    fails with its own message (the partition's error for a single one, INVALID_RECORD for
    several, since one code cannot tell them apart), the others with RecordNotAppendedError."""
    if not result.record_errors:
        return None
    single = len(result.record_errors) == 1
    code = result.error_code if single else Errors.INVALID_RECORD
    named: dict[int, BaseException] = {}
    for index, message in result.record_errors:
        text = message or result.error_message or error_info(result.error_code).name
        named[index] = KafkaError(code, f"{_describe(batch, None)}: {text}")

    def error_of(index: int) -> BaseException:
        return named.get(index) or RecordNotAppendedError()

    return error_of


def _describe(batch: ProducerBatch, result: PartitionProduceResult | None) -> str:
    text = f"Produce to {batch.tp[0]}-{batch.tp[1]}"
    if result is not None and result.error_message:
        text += f": {result.error_message}"
    return text
