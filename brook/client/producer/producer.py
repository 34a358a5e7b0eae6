"""The public producers: ``AsyncProducer`` (asyncio) and ``Producer`` (blocking).

Both share one core. ``Producer.send`` appends from the caller's thread straight into the
record accumulator (no hop onto the event loop per record) and returns a light future; the
sender runs on Brook's shared client loop. ``AsyncProducer`` runs the same sender on the
caller's loop.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from brook.client import _sync
from brook.client.cluster import PartitionInfo
from brook.client.config import parse_producer_config, resolve_serializer
from brook.client.metrics import MetricName, Metrics
from brook.client.network import NetworkClient
from brook.client.partitioner import (
    UNKNOWN_PARTITION,
    NodeLatencyTracker,
    aborts_on_new_batch,
    load_partitioner,
    select_partition,
)
from brook.protocol.batch import HEADER_SIZE
from brook.protocol.compression import CODEC_BY_NAME
from brook.protocol.errors import Errors, KafkaError, error_info

from ..cluster import TopicPartition
from ..consumer.coordinator import ConsumerGroupMetadata, OffsetAndMetadata
from .accumulator import ABORTED, NeedMemory, RecordAccumulator
from .batch import RECORD_OVERHEAD, encode_headers, encode_record_body
from .buffer_pool import BufferPool
from .errors import (
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
    TransactionStateError,
)
from .idempotence import IdempotenceManager
from .producer_metrics import ProducerMetrics
from .record import DeliveryCallback, RecordFuture
from .sender import Sender
from .transactions import TransactionManager, TxnResult, group_offsets
from .txn_sender import TxnRequestSender

__all__ = ["EXIT_CLOSE_TIMEOUT_S", "AsyncProducer", "Producer"]

# A Producer still open when the interpreter exits gets this long to deliver what it holds
# (kafka-python's atexit close gives 1 s; librdkafka's destructor drops it), then closes.
EXIT_CLOSE_TIMEOUT_S = 5.0

HeadersArg = Sequence[tuple[str, bytes | str | None]] | Mapping[str, bytes | str | None] | None
OffsetsArg = Mapping[tuple[str, int], OffsetAndMetadata | int]
GroupArg = ConsumerGroupMetadata | str
_BYTES = (bytes, bytearray, memoryview)
# Topic errors that mean "not there yet": the producer keeps waiting for metadata.
_WAIT_TOPIC_ERRORS = {Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.LEADER_NOT_AVAILABLE}


async def _call(fn: Any) -> Any:
    """Run a plain call on the client loop (the transaction manager lives there)."""
    return fn()


def _bytes(data: Any, what: str) -> bytes:
    if isinstance(data, _BYTES):
        return bytes(data)
    raise TypeError(
        f"{what} must be bytes or None (set {what}.serializer to send {type(data).__name__}), "
        f"got {type(data).__name__}"
    )


def _headers(headers: HeadersArg) -> bytes | None:
    if not headers:
        return None
    items = headers.items() if isinstance(headers, Mapping) else headers
    pairs: list[tuple[str, bytes | None]] = []
    for name, value in items:
        if not isinstance(name, str):
            raise TypeError(f"header names must be str, got {type(name).__name__}")
        if isinstance(value, str):
            value = value.encode("utf-8")
        elif value is not None and not isinstance(value, _BYTES):
            raise TypeError(f"header {name!r} value must be bytes, str or None")
        pairs.append((name, None if value is None else bytes(value)))
    return encode_headers(pairs)


class PendingRecord:
    """A record that needs ``size`` bytes of buffer.memory before it can be appended."""

    __slots__ = ("args", "size")

    def __init__(self, size: int, args: tuple[Any, ...]) -> None:
        self.size = size
        self.args = args


class _ProducerCore:
    """Everything both producers share: config, accumulator, sender, metadata waits."""

    def __init__(self, props: Mapping[str, Any]) -> None:
        config = self.config = parse_producer_config(props)
        self.network = NetworkClient(config, kind="producer", allow_auto_topic_creation=True)
        self.client_id = self.network.client_id
        self.cluster = self.network.cluster
        self.key_serializer = resolve_serializer("key.serializer", config["key.serializer"])
        self.value_serializer = resolve_serializer("value.serializer", config["value.serializer"])
        self.custom_partitioner = load_partitioner(config["partitioner.class"], config)
        self.abort_on_new_batch = aborts_on_new_batch(self.custom_partitioner)
        self.ignore_keys = bool(config["partitioner.ignore.keys"])
        adaptive = bool(config["partitioner.adaptive.partitioning.enable"]) and (
            self.custom_partitioner is None
        )
        self.tracker = NodeLatencyTracker(
            int(config["partitioner.availability.timeout.ms"]) if adaptive else 0
        )
        self.max_block_ms = float(config["max.block.ms"])
        self.max_request_size = int(config["max.request.size"])
        self.buffer_memory = int(config["buffer.memory"])
        self.max_record_size = min(self.max_request_size, self.buffer_memory)
        self.metrics = Metrics(
            float(config["metrics.sample.window.ms"]), int(config["metrics.num.samples"])
        )
        self.pool = BufferPool(self.buffer_memory)
        self.accumulator = RecordAccumulator(
            batch_size=int(config["batch.size"]),
            linger_ms=float(config["linger.ms"]),
            delivery_timeout_ms=float(config["delivery.timeout.ms"]),
            codec=int(CODEC_BY_NAME[config["compression.type"]]),
            pool=self.pool,
            adaptive=adaptive,
            node_tracker=self.tracker,
            leader_discovery=bool(config["brook.leader.discovery.enable"]),
        )
        transactional_id = config["transactional.id"]
        self.txn: TransactionManager | None = None
        if transactional_id is not None:
            self.txn = TransactionManager(
                transactional_id,
                int(config["transaction.timeout.ms"]),
                float(config["retry.backoff.ms"]),
                on_producer_id=self._on_producer_id,
            )
        self.idempotence = IdempotenceManager(self.txn) if config["enable.idempotence"] else None
        self.sender_metrics = ProducerMetrics(
            self.metrics,
            self.client_id,
            buffer_total=self.buffer_memory,
            buffer_available=lambda: self.pool.available,
            requests_in_flight=lambda: self.sender.requests_in_flight,
        )
        self.pool.on_wait_ns = self.sender_metrics.record_buffer_wait
        self.pool.on_exhausted = self.sender_metrics.buffer_exhausted.record
        self.sender = Sender(
            config,
            self.network,
            self.accumulator,
            self.idempotence,
            self.sender_metrics,
            self.tracker,
        )
        self.accumulator.wakeup = self.sender.wakeup
        self.txn_sender: TxnRequestSender | None = None
        if self.txn is not None:
            self.txn_sender = TxnRequestSender(
                self.txn,
                self.network,
                self.accumulator,
                self.sender.wakeup,
                int(config["request.timeout.ms"]),
            )
            self.sender.on_batch_done = self.txn_sender.wakeup
        self.ready_topics: set[str] = set()
        self.started = False
        self.closed = False

    async def start(self) -> None:
        if self.started:
            return
        await self.network.start()  # concurrent first sends share one start
        if not self.started:
            self.sender.start()
            if self.txn_sender is not None:
                self.txn_sender.start()
            self.started = True

    def _on_producer_id(self, producer_id: int, epoch: int) -> None:
        assert self.idempotence is not None
        self.idempotence.reset_producer_id(producer_id, epoch)

    # -- send path -------------------------------------------------------------------------

    def check_open(self) -> None:
        if self.closed:
            raise ProducerClosedError("cannot send: the producer is closed")
        if self.txn is not None:
            self.txn.check_send()
        idem = self.idempotence
        if idem is not None and idem.fatal_error is not None:
            fatal = idem.fatal_error
            raise KafkaError(
                fatal.code,
                "cannot send: an earlier idempotent request failed for good "
                f"({fatal.message or fatal.name})",
            )

    def enqueue(
        self,
        topic: str,
        value: Any,
        key: Any,
        partition: int | None,
        headers: HeadersArg,
        timestamp_ms: int | None,
        on_delivery: DeliveryCallback | None,
    ) -> RecordFuture | PendingRecord:
        """Serialize, check and append one record whose topic metadata is known.

        Returns its future, or a :class:`PendingRecord` to :meth:`append` again once its
        buffer memory is reserved. This is the per-record path: kept flat on purpose.
        """
        serializer = self.key_serializer
        if serializer is not None:
            key = serializer(key)
        if key is not None and type(key) is not bytes:
            key = _bytes(key, "key")
        serializer = self.value_serializer
        if serializer is not None:
            value = serializer(value)
        if value is not None and type(value) is not bytes:
            value = _bytes(value, "value")
        body = encode_record_body(key, value, _headers(headers) if headers else None)
        # Java's ensureValidRecordSize on the batch-plus-record upper bound.
        size = HEADER_SIZE + RECORD_OVERHEAD + len(body)
        if size > self.max_record_size:
            self._too_large(size)
        if timestamp_ms is None:
            timestamp_ms = int(time.time() * 1000)
        elif timestamp_ms < 0:
            raise ValueError(f"invalid timestamp {timestamp_ms}: it must not be negative")
        key_size = -1 if key is None else len(key)
        value_size = -1 if value is None else len(value)
        if (
            partition is None
            and self.custom_partitioner is None
            and (key is None or self.ignore_keys)
        ):
            result = self.accumulator.append(
                topic,
                UNKNOWN_PARTITION,
                timestamp_ms,
                body,
                key_size,
                value_size,
                on_delivery,
                self.cluster,
            )
        else:
            result = self.append(
                topic,
                partition,
                key,
                value,
                body,
                key_size,
                value_size,
                timestamp_ms,
                on_delivery,
            )
        if type(result) is RecordFuture:
            if self.txn is not None:
                self.add_to_transaction(result)
            return result
        assert isinstance(result, NeedMemory)
        return PendingRecord(
            result.size,
            (topic, partition, key, value, body, key_size, value_size, timestamp_ms, on_delivery),
        )

    def add_to_transaction(self, future: RecordFuture) -> None:
        """Java's maybeAddPartition: the record's partition joins the transaction before its
        batch leaves."""
        txn = self.txn
        assert txn is not None and self.txn_sender is not None
        where = future._result
        tp = TopicPartition(where.topic, where.partition)
        if tp not in txn.partitions_in_transaction:
            txn.maybe_add_partition(tp)
            self.txn_sender.wakeup()

    def _too_large(self, size: int) -> None:
        if size > self.max_request_size:
            raise RecordTooLargeError(
                f"The message is {size} bytes when serialized which is larger than "
                f"{self.max_request_size}, which is the value of the max.request.size "
                "configuration."
            )
        raise RecordTooLargeError(
            f"The message is {size} bytes when serialized which is larger than the total "
            "memory buffer you have configured with the buffer.memory configuration "
            f"({self.buffer_memory})."
        )

    def metadata_ready(self, topic: str, partition: int | None) -> bool:
        if topic not in self.ready_topics:
            return False
        if partition is None:
            return True
        return 0 <= partition < len(self.cluster.partitions_for(topic))

    async def wait_on_metadata(
        self, topic: str, partition: int | None, max_block_ms: float
    ) -> None:
        """Wait (up to ``max_block_ms``) until the topic's partitions are known."""
        if type(topic) is not str or not topic:
            raise ValueError(f"topic must be a non-empty str, got {topic!r}")
        if partition is not None and partition < 0:
            raise ValueError(f"Invalid partition given with record: {partition} is negative")
        network = self.network
        network.add_topics([topic])
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_block_ms / 1000
        while True:
            count = len(self.cluster.partitions_for(topic))
            if count and (partition is None or partition < count):
                self.ready_topics.add(topic)
                return
            code = self.cluster.topic_errors.get(topic, 0)
            if code and code not in _WAIT_TOPIC_ERRORS and not error_info(code).retriable:
                raise KafkaError(code, f"metadata for topic {topic!r}")
            left = deadline - loop.time()
            if left <= 0:
                if count and partition is not None:
                    raise KafkaTimeoutError(
                        f"Partition {partition} of topic {topic} with partition count {count} "
                        f"is not present in metadata after {int(max_block_ms)} ms."
                    )
                raise KafkaTimeoutError(
                    f"Topic {topic} not present in metadata after {int(max_block_ms)} ms."
                )
            try:
                await network.await_update(left * 1000)
            except TimeoutError:
                pass

    def append(
        self,
        topic: str,
        partition: int | None,
        key: bytes | None,
        value: bytes | None,
        body: bytes,
        key_size: int,
        value_size: int,
        timestamp: int,
        on_delivery: DeliveryCallback | None,
        reserved: int = 0,
    ) -> RecordFuture | NeedMemory:
        """Choose the partition and append (keyed, explicit or custom-partitioned records,
        and retries after waiting for memory)."""
        cluster = self.cluster
        custom = self.custom_partitioner
        if partition is None and custom is None and (key is None or self.ignore_keys):
            chosen = UNKNOWN_PARTITION
        else:
            chosen = select_partition(
                topic,
                key,
                value,
                cluster,
                partition=partition,
                partitioner=custom,
                ignore_keys=self.ignore_keys,
            )
        acc = self.accumulator
        abort = self.abort_on_new_batch and partition is None
        result = acc.append(
            topic,
            chosen,
            timestamp,
            body,
            key_size,
            value_size,
            on_delivery,
            cluster,
            abort,
            reserved,
        )
        if result is ABORTED:
            # The deprecated onNewBatch hook: let the partitioner move on, then append anyway.
            assert custom is not None
            custom.on_new_batch(topic, cluster, chosen)  # type: ignore[attr-defined]
            chosen = select_partition(
                topic,
                key,
                value,
                cluster,
                partition=partition,
                partitioner=custom,
                ignore_keys=self.ignore_keys,
            )
            result = acc.append(
                topic,
                chosen,
                timestamp,
                body,
                key_size,
                value_size,
                on_delivery,
                cluster,
                False,
                reserved,
            )
        return result  # type: ignore[return-value]

    # -- flush, close, introspection -------------------------------------------------------

    def begin_flush(self) -> list[Any]:
        self.accumulator.begin_flush()
        self.sender.wakeup()
        return [b.result for b in list(self.accumulator.incomplete)]

    def end_flush(self) -> None:
        self.accumulator.end_flush()

    async def close(self, timeout: float | None) -> None:
        if self.closed:
            return
        self.closed = True
        # Queued batches go out without lingering; appends still in progress fail.
        self.accumulator.closed = True
        if not self.started:
            return
        sender = self.sender
        if timeout is not None and timeout <= 0:
            sender.force_close()
        else:
            sender.initiate_close()
        try:
            await asyncio.wait_for(sender.wait_closed(), timeout)
        except TimeoutError:
            sender.force_close()
            await sender.wait_closed()
        if self.txn_sender is not None:
            await self.txn_sender.close()
        self.pool.close()
        await self.network.close()
        if self.custom_partitioner is not None:
            self.custom_partitioner.close()

    def metrics_snapshot(self) -> dict[MetricName, float]:
        return self.metrics.snapshot()

    # -- transactions (on the producer's loop) ---------------------------------------------

    def require_txn(self) -> TransactionManager:
        if self.txn is None:
            raise TransactionStateError(
                "Transactional method invoked on a non-transactional producer: set "
                "transactional.id to use transactions"
            )
        if self.closed:
            raise ProducerClosedError("the producer is closed")
        return self.txn

    async def await_txn(self, result: TxnResult, timeout: float | None, what: str) -> None:
        """Wait for a transactional call's requests; ``timeout`` None = max.block.ms. A call
        that times out may be made again: it picks up the same requests."""
        assert self.txn_sender is not None
        self.txn_sender.wakeup()
        if not result.done:
            loop = asyncio.get_running_loop()
            done: asyncio.Future[None] = loop.create_future()

            def wake(_: TxnResult) -> None:
                if not done.done():
                    done.set_result(None)

            result.add_callback(wake)
            seconds = self.max_block_ms / 1000 if timeout is None else timeout
            try:
                await asyncio.wait_for(done, seconds)
            except TimeoutError:
                raise KafkaTimeoutError(
                    f"Timeout expired after {int(seconds * 1000)} ms while awaiting {what}"
                ) from None
        if result.error is not None:
            raise result.error

    async def init_transactions(self, timeout: float | None) -> None:
        if not self.started:
            await self.start()
        txn = self.require_txn()
        await self.await_txn(txn.init_transactions(), timeout, "InitProducerId")

    def begin_transaction(self) -> None:
        self.require_txn().begin_transaction()

    async def send_offsets_to_transaction(
        self, offsets: OffsetsArg, group_metadata: GroupArg, timeout: float | None
    ) -> None:
        txn = self.require_txn()
        group = (
            ConsumerGroupMetadata(group_metadata)
            if isinstance(group_metadata, str)
            else group_metadata
        )
        result = txn.send_offsets(group_offsets(offsets), group)
        await self.await_txn(result, timeout, "AddOffsetsToTxn and TxnOffsetCommit")

    async def commit_transaction(self, timeout: float | None) -> None:
        """Send what is queued without lingering, then EndTxn(commit) once every batch is
        acknowledged."""
        txn = self.require_txn()
        result = txn.begin_commit()
        self.accumulator.begin_flush()
        try:
            self.sender.wakeup()
            await self.await_txn(result, timeout, "EndTxn(commit)")
        finally:
            self.accumulator.end_flush()

    async def abort_transaction(self, timeout: float | None) -> None:
        """Records not yet sent fail with TransactionAbortedError; EndTxn(abort) once those in
        flight are answered."""
        txn = self.require_txn()
        result = txn.begin_abort()
        self.sender.wakeup()
        await self.await_txn(result, timeout, "EndTxn(abort)")

    def partitions(self, topic: str) -> list[PartitionInfo]:
        info = self.cluster.topics.get(topic)
        return [] if info is None else list(info.partitions.values())


# ---------------------------------------------------------------------------------------------
# asyncio
# ---------------------------------------------------------------------------------------------


class AsyncProducer:
    """The asyncio producer.

    ``await producer.send(...)`` returns once the record is queued, with a :class:`RecordFuture`
    to await for its acknowledgement; ``send_and_wait`` does both. Use ``async with`` (or
    ``await start()`` / ``await close()``); callbacks run on this loop.
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._core = _ProducerCore(config)

    @property
    def client_id(self) -> str:
        return self._core.client_id

    @property
    def config(self) -> Mapping[str, Any]:
        return self._core.config

    async def start(self) -> None:
        """Connect (raises NetworkError naming each bootstrap address that failed and why)."""
        await self._core.start()

    async def __aenter__(self) -> AsyncProducer:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: HeadersArg = None,
        timestamp_ms: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> RecordFuture:
        """Queue one record; returns its future once it is in a batch.

        Waits up to max.block.ms for the topic's metadata or for buffer memory.
        ``on_delivery(metadata, error)`` runs when the batch completes.
        """
        core = self._core
        core.check_open()
        if not core.started:
            await core.start()
        start = time.monotonic()
        if not core.metadata_ready(topic, partition):
            await core.wait_on_metadata(topic, partition, core.max_block_ms)
        result = core.enqueue(topic, value, key, partition, headers, timestamp_ms, on_delivery)
        while type(result) is PendingRecord:
            left = core.max_block_ms - (time.monotonic() - start) * 1000
            await core.pool.allocate_async(result.size, max(0.0, left), core.max_block_ms)
            appended = core.append(*result.args, reserved=result.size)
            result = (
                PendingRecord(appended.size, result.args)
                if isinstance(appended, NeedMemory)
                else appended
            )
        if core.txn is not None:
            core.add_to_transaction(result)  # type: ignore[arg-type]
        return result  # type: ignore[return-value]

    async def send_and_wait(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: HeadersArg = None,
        timestamp_ms: int | None = None,
    ) -> Any:
        """Send one record and wait for its acknowledgement; returns its RecordMetadata."""
        future = await self.send(topic, value, key, partition, headers, timestamp_ms)
        return await future

    async def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now (no lingering) and wait for it to be acknowledged."""
        core = self._core
        results = core.begin_flush()
        try:
            waits = [r.wait_async() for r in results if not r.done]
            if waits:
                await asyncio.wait_for(asyncio.gather(*waits), timeout)
        except TimeoutError:
            left = sum(1 for r in results if not r.done)
            raise KafkaTimeoutError(
                f"flush did not complete within {timeout} s: {left} batch(es) unacknowledged"
            ) from None
        finally:
            core.end_flush()

    async def close(self, timeout: float | None = None) -> None:
        """Deliver what is queued (within ``timeout`` seconds, None = as long as it takes),
        then close; records still held when the time is up fail with ProducerClosedError."""
        await self._core.close(timeout)

    def metrics(self) -> dict[MetricName, float]:
        """Current metric values keyed ``group:name:{client-id=..., ...}`` (see docs)."""
        return self._core.metrics_snapshot()

    # -- transactions (Java's KafkaProducer API; a transactional.id is required) -----------

    async def init_transactions(self, timeout: float | None = None) -> None:
        """Get this transactional.id's producer id and a new epoch: fences every earlier
        producer with the id and ends its open transaction. Call once, before the first
        transaction; ``timeout`` in seconds (None = max.block.ms). On KafkaTimeoutError it
        may be called again. ProducerFencedError / FatalTransactionError: close the
        producer."""
        await self._core.init_transactions(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction (no request: the coordinator hears of it with its first
        partition or offsets). Plain, not a coroutine, as aiokafka's."""
        self._core.begin_transaction()

    async def send_offsets_to_transaction(
        self,
        offsets: OffsetsArg,
        group_metadata: GroupArg,
        timeout: float | None = None,
    ) -> None:
        """Commit a consumer group's offsets (``{(topic, partition): next offset to read}``)
        as part of the transaction: the group sees them only if it commits.
        ``group_metadata`` is ``consumer.group_metadata()`` (or a group id alone)."""
        await self._core.send_offsets_to_transaction(offsets, group_metadata, timeout)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush, then commit. AbortableTransactionError when a record or offset could not
        be written: call abort_transaction(). On KafkaTimeoutError call it again."""
        await self._core.commit_transaction(timeout)

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Abort: records not yet sent fail with TransactionAbortedError and nothing of the
        transaction is visible to read_committed consumers."""
        await self._core.abort_transaction(timeout)

    async def partitions_for(self, topic: str) -> list[PartitionInfo]:
        core = self._core
        if not core.started:
            await core.start()
        if not core.metadata_ready(topic, None):
            await core.wait_on_metadata(topic, None, core.max_block_ms)
        return core.partitions(topic)


# ---------------------------------------------------------------------------------------------
# blocking
# ---------------------------------------------------------------------------------------------


class Producer:
    """The blocking producer: ``send`` returns a future at once, from any thread.

    Connects in the constructor (raises NetworkError naming each bootstrap address that
    failed and why). Callbacks run on Brook's client loop thread: keep them short.
    """

    def __init__(self, config: Mapping[str, Any]) -> None:
        core = self._core = _ProducerCore(config)
        try:
            _sync.run(core.start())
        except BaseException:
            _sync.run(core.close(0))
            raise
        # Left open at interpreter exit: closed as close() would, within EXIT_CLOSE_TIMEOUT_S.
        self._exit_key = _sync.on_exit(functools.partial(core.close, EXIT_CLOSE_TIMEOUT_S))

    @property
    def client_id(self) -> str:
        return self._core.client_id

    @property
    def config(self) -> Mapping[str, Any]:
        return self._core.config

    def __enter__(self) -> Producer:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def send(
        self,
        topic: str,
        value: Any = None,
        key: Any = None,
        partition: int | None = None,
        headers: HeadersArg = None,
        timestamp_ms: int | None = None,
        on_delivery: DeliveryCallback | None = None,
    ) -> RecordFuture:
        """Queue one record; returns its future (``result(timeout)`` gives RecordMetadata).

        Blocks only to wait for the topic's metadata or buffer memory, up to max.block.ms.
        ``on_delivery(metadata, error)`` runs when the record's batch completes.
        """
        core = self._core
        if (
            core.closed
            or core.txn is not None
            or (core.idempotence is not None and core.idempotence.fatal_error)
        ):
            core.check_open()
        start = 0.0
        if topic not in core.ready_topics or (
            partition is not None and not core.metadata_ready(topic, partition)
        ):
            start = time.monotonic()
            _sync.run(core.wait_on_metadata(topic, partition, core.max_block_ms))
        result = core.enqueue(topic, value, key, partition, headers, timestamp_ms, on_delivery)
        if type(result) is RecordFuture:
            return result
        return self._wait_for_memory(result, start or time.monotonic())  # type: ignore[arg-type]

    def _wait_for_memory(self, pending: PendingRecord, start: float) -> RecordFuture:
        core = self._core
        result: Any = pending
        while type(result) is PendingRecord:
            left = core.max_block_ms - (time.monotonic() - start) * 1000
            core.pool.allocate(result.size, max(0.0, left), core.max_block_ms)
            appended = core.append(*result.args, reserved=result.size)
            result = (
                PendingRecord(appended.size, result.args)
                if isinstance(appended, NeedMemory)
                else appended
            )
        if core.txn is not None:
            core.add_to_transaction(result)
        return result

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now (no lingering) and block until it is acknowledged."""
        core = self._core
        results = core.begin_flush()
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            for result in results:
                left = None if deadline is None else max(0.0, deadline - time.monotonic())
                if not result.done and not result.wait(left):
                    pending = sum(1 for r in results if not r.done)
                    raise KafkaTimeoutError(
                        f"flush did not complete within {timeout} s: {pending} batch(es) "
                        "unacknowledged"
                    )
        finally:
            core.end_flush()

    def close(self, timeout: float | None = None) -> None:
        """Deliver what is queued (within ``timeout`` seconds), then close."""
        _sync.forget_on_exit(self._exit_key)
        _sync.run(self._core.close(timeout))

    def metrics(self) -> dict[MetricName, float]:
        """Current metric values keyed ``group:name:{client-id=..., ...}`` (see docs)."""
        return self._core.metrics_snapshot()

    # -- transactions (Java's KafkaProducer API; a transactional.id is required) -----------

    def init_transactions(self, timeout: float | None = None) -> None:
        """See :meth:`AsyncProducer.init_transactions`."""
        _sync.run(self._core.init_transactions(timeout))

    def begin_transaction(self) -> None:
        """See :meth:`AsyncProducer.begin_transaction`."""
        _sync.run(_call(self._core.begin_transaction))

    def send_offsets_to_transaction(
        self,
        offsets: OffsetsArg,
        group_metadata: GroupArg,
        timeout: float | None = None,
    ) -> None:
        """See :meth:`AsyncProducer.send_offsets_to_transaction`."""
        _sync.run(self._core.send_offsets_to_transaction(offsets, group_metadata, timeout))

    def commit_transaction(self, timeout: float | None = None) -> None:
        """See :meth:`AsyncProducer.commit_transaction`."""
        _sync.run(self._core.commit_transaction(timeout))

    def abort_transaction(self, timeout: float | None = None) -> None:
        """See :meth:`AsyncProducer.abort_transaction`."""
        _sync.run(self._core.abort_transaction(timeout))

    def partitions_for(self, topic: str) -> list[PartitionInfo]:
        core = self._core
        if not core.metadata_ready(topic, None):
            _sync.run(core.wait_on_metadata(topic, None, core.max_block_ms))
        return core.partitions(topic)
