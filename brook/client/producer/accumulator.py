"""The record accumulator: per-partition deques of batches that send() appends to from any
thread, and the sender's view of them (ready, drain, expire, re-enqueue).

Appends run in the caller's thread under the partition deque's lock and encode the record into
the open batch right there (Java's RecordAccumulator). Unkeyed records follow KIP-794 through
:class:`~brook.client.partitioner.BuiltInPartitioner` with exactly the append protocol its
module docstring lays down; the sender's ready() pass feeds it the deque lengths.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from brook.client.cluster import ClusterMetadata
from brook.client.partitioner import (
    UNKNOWN_PARTITION,
    BuiltInPartitioner,
    LoadStatsCollector,
    NodeLatencyTracker,
)
from brook.protocol.batch import HEADER_SIZE

from .batch import RECORD_OVERHEAD, CompressionRatioEstimator, ProducerBatch
from .buffer_pool import BufferPool
from .errors import ProducerClosedError
from .idempotence import IdempotenceManager
from .record import RecordFuture

__all__ = ["ABORTED", "NeedMemory", "PartitionDeque", "ReadyCheck", "RecordAccumulator"]

TopicPartition = tuple[str, int]


class _Aborted:
    def __repr__(self) -> str:
        return "ABORTED"


ABORTED = _Aborted()  # a custom partitioner's on_new_batch must run, then append again


class NeedMemory:
    """No buffer.memory for a new batch: reserve ``size`` bytes, then append again with it."""

    __slots__ = ("size",)

    def __init__(self, size: int) -> None:
        self.size = size


class PartitionDeque:
    __slots__ = ("batches", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.batches: deque[ProducerBatch] = deque()


class _Topic:
    __slots__ = ("deques", "partitioner")

    def __init__(self, partitioner: BuiltInPartitioner) -> None:
        self.partitioner = partitioner
        self.deques: dict[int, PartitionDeque] = {}


class ReadyCheck:
    __slots__ = ("next_delay_ms", "nodes", "unknown_leader_topics")

    def __init__(self, nodes: set[int], next_delay_ms: float, unknown: set[str]) -> None:
        self.nodes = nodes
        self.next_delay_ms = next_delay_ms
        self.unknown_leader_topics = unknown


def now_ms() -> float:
    return time.monotonic() * 1000


def _yield_gil() -> None:
    """Let the sender's thread run now: a sending thread that never blocks would otherwise
    keep the GIL for the whole switch interval (5 ms) while the sender waits to send a full
    batch or to read responses. Called once per filled batch, not per record."""
    time.sleep(0)


class RecordAccumulator:
    def __init__(
        self,
        *,
        batch_size: int,
        linger_ms: float,
        delivery_timeout_ms: float,
        codec: int,
        pool: BufferPool,
        adaptive: bool,
        node_tracker: NodeLatencyTracker,
        leader_discovery: bool = True,
        partitioner_factory: Callable[[str], BuiltInPartitioner] | None = None,
    ) -> None:
        self.batch_size = batch_size
        self.linger_ms = linger_ms
        self.delivery_timeout_ms = delivery_timeout_ms
        self.codec = codec
        self.pool = pool
        self.adaptive = adaptive
        self.node_tracker = node_tracker
        self.leader_discovery = leader_discovery
        sticky = max(1, batch_size)
        self._partitioner_factory = partitioner_factory or (
            lambda topic: BuiltInPartitioner(topic, sticky)
        )
        self.estimator = CompressionRatioEstimator()
        self._topics: dict[str, _Topic] = {}
        self._lock = threading.Lock()
        self.incomplete: set[ProducerBatch] = set()
        self.muted: set[TopicPartition] = set()
        self.flushes_in_progress = 0
        self.closed = False
        self._drain_index: dict[int, int] = {}
        # Called when a batch becomes sendable or a new one needs its linger timer: the sender.
        self.wakeup: Callable[[], None] = lambda: None

    # -- append (caller's thread) ----------------------------------------------------------

    def _topic(self, topic: str) -> _Topic:
        state = self._topics.get(topic)
        if state is None:
            with self._lock:
                state = self._topics.get(topic)
                if state is None:
                    state = _Topic(self._partitioner_factory(topic))
                    topics = dict(self._topics)
                    topics[topic] = state
                    self._topics = topics  # copy-on-write: the sender iterates without a lock
        return state

    def _deque(self, state: _Topic, partition: int) -> PartitionDeque:
        dq = state.deques.get(partition)
        if dq is None:
            with self._lock:
                dq = state.deques.get(partition)
                if dq is None:
                    dq = PartitionDeque()
                    deques = dict(state.deques)
                    deques[partition] = dq
                    state.deques = deques
        return dq

    def partitioner(self, topic: str) -> BuiltInPartitioner:
        return self._topic(topic).partitioner

    def append(
        self,
        topic: str,
        partition: int,
        timestamp: int,
        body: bytes,
        key_size: int,
        value_size: int,
        callback: Callable[..., Any] | None,
        cluster: ClusterMetadata,
        abort_on_new_batch: bool = False,
        reserved: int = 0,
    ) -> RecordFuture | NeedMemory | _Aborted:
        """Append one record (``body`` from :func:`encode_record_body`); ``partition`` is
        UNKNOWN_PARTITION for KIP-794's choice.

        Returns the record's future, :class:`NeedMemory` (reserve and call again with
        ``reserved``), or :data:`ABORTED` when ``abort_on_new_batch`` stopped a new batch.
        """
        state = self._topics.get(topic) or self._topic(topic)
        bip = state.partitioner
        sticky = bip.sticky_batch_size
        while True:
            if partition == UNKNOWN_PARTITION:
                info = bip.current or bip.peek_current_partition(cluster)
                effective = info.partition
            else:
                info = None
                effective = partition
            dq = state.deques.get(effective) or self._deque(state, effective)
            filled = None
            with dq.lock:
                if self.closed:
                    self.pool.deallocate(reserved)
                    raise ProducerClosedError("the producer was closed while send() was running")
                batches = dq.batches
                last = batches[-1] if batches else None
                if info is not None:
                    if last is None or last.closed or last.estimated >= last.write_limit:
                        if bip.partition_changed(info, True, cluster):
                            continue
                    elif bip.current is not info:
                        continue
                if last is not None and not last.closed:
                    before = last.estimated
                    future = last.try_append(timestamp, body, key_size, value_size, callback)
                    if future is not None:
                        full = last.estimated >= last.write_limit
                        if info is not None:
                            # bip.update_partition_info, made only when a switch is due:
                            # below the sticky batch size (or, while this batch is not full,
                            # below twice that) it would only add the bytes.
                            produced = info.produced_bytes + last.estimated - before
                            if produced < sticky or (not full and produced < 2 * sticky):
                                info.produced_bytes = produced
                            else:
                                bip.update_partition_info(
                                    info, last.estimated - before, cluster, full
                                )
                        if reserved:
                            self.pool.deallocate(reserved)
                        if not full:
                            return future
                        filled = future
            if filled is not None:
                # This append filled the batch: it is ready to go. The sender is woken and
                # given the interpreter lock once the deque's lock is free: yielding while
                # holding it would stall the sender's drain on it.
                self.wakeup()
                _yield_gil()
                return filled
            if abort_on_new_batch:
                if reserved:
                    self.pool.deallocate(reserved)
                return ABORTED
            if not reserved:
                size = max(self.batch_size, HEADER_SIZE + len(body) + RECORD_OVERHEAD)
                if not self.pool.try_allocate(size):
                    return NeedMemory(size)
                reserved = size
            with dq.lock:
                if self.closed:
                    self.pool.deallocate(reserved)
                    raise ProducerClosedError("the producer was closed while send() was running")
                batches = dq.batches
                last = batches[-1] if batches else None
                if info is not None:
                    all_full = last is None or last.closed or last.estimated >= last.write_limit
                    if bip.partition_changed(info, all_full, cluster):
                        continue
                if last is not None and not last.closed:
                    # Another thread opened a batch meanwhile: use it rather than a second one.
                    before = last.estimated
                    future = last.try_append(timestamp, body, key_size, value_size, callback)
                    if future is not None:
                        if info is not None:
                            full = last.estimated >= last.write_limit
                            bip.update_partition_info(info, last.estimated - before, cluster, full)
                        self.pool.deallocate(reserved)
                        return future
                codec = self.codec
                batch = ProducerBatch(
                    (topic, effective),
                    now_ms(),
                    reserved,
                    codec,
                    self.estimator.estimate(topic, codec) if codec else 1.0,
                    reserved,
                )
                future = batch.try_append(timestamp, body, key_size, value_size, callback)
                assert future is not None
                batches.append(batch)
                self.incomplete.add(batch)
                if info is not None:
                    bip.update_partition_info(info, batch.estimated, cluster, batch.is_full())
            self.wakeup()
            return future

    # -- the sender's side (event loop thread) ---------------------------------------------

    def ready(self, cluster: ClusterMetadata, now: float) -> ReadyCheck:
        """Nodes with a sendable batch, the delay until another may be, leaderless topics.

        Also collects each topic's deque lengths for the adaptive partitioner (KIP-794).
        """
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_delay = float("inf")
        exhausted = self.pool.queued > 0
        flushing = self.flushes_in_progress > 0 or self.closed
        linger = self.linger_ms
        tracker = self.node_tracker
        discovery = self.leader_discovery
        muted = self.muted
        for topic, state in self._topics.items():
            deques = state.deques
            collector = (
                LoadStatsCollector(len(deques), len(cluster.partitions_for(topic)))
                if self.adaptive
                else None
            )
            for partition, dq in deques.items():
                tp = (topic, partition)
                leader = cluster.leader_for(tp)
                # No lock: only this thread removes batches from a deque's head, appends only
                # add at its tail, so the head read here stays valid; a batch that fills just
                # after this look wakes the sender again.
                batches = dq.batches
                queued = len(batches)
                batch = batches[0] if queued else None
                full = queued > 1 or (batch is not None and batch.is_full())
                if collector is not None:
                    collector.add(
                        partition,
                        leader is not None,
                        queued,
                        node_excluded=leader is not None and tracker.excludes(leader),
                    )
                if batch is None:
                    continue
                if leader is None:
                    unknown.add(topic)
                    continue
                if leader in nodes or tp in muted:
                    continue
                batch.maybe_update_leader_epoch(cluster.leader_epoch(tp))
                waited = now - batch.last_attempt_ms
                backing_off = (
                    batch.attempts > 0
                    and waited < batch.retry_backoff_ms
                    and not (discovery and batch.leader_changed_for_ongoing_retry())
                )
                time_to_wait = batch.retry_backoff_ms if backing_off else linger
                if not backing_off and (full or waited >= time_to_wait or exhausted or flushing):
                    nodes.add(leader)
                else:
                    next_delay = min(next_delay, max(time_to_wait - waited, 0.0))
            if collector is not None:
                collector.publish(state.partitioner)
        return ReadyCheck(nodes, next_delay, unknown)

    def drain(
        self,
        cluster: ClusterMetadata,
        nodes: Iterable[int],
        max_size: int,
        now: float,
        idempotence: IdempotenceManager | None,
    ) -> dict[int, list[ProducerBatch]]:
        """Take at most one batch per partition for each node, up to ``max_size`` bytes."""
        wanted = set(nodes)
        if not wanted:
            return {}
        by_node: dict[int, list[tuple[TopicPartition, PartitionDeque]]] = {n: [] for n in wanted}
        for topic, state in self._topics.items():
            for partition, dq in state.deques.items():
                if not dq.batches:
                    continue
                tp = (topic, partition)
                leader = cluster.leader_for(tp)
                if leader in wanted:
                    by_node[leader].append((tp, dq))
        discovery = self.leader_discovery
        out: dict[int, list[ProducerBatch]] = {}
        for node, parts in by_node.items():
            if not parts:
                continue
            ready: list[ProducerBatch] = []
            size = 0
            start = self._drain_index.get(node, 0) % len(parts)
            index = start
            for step in range(len(parts)):
                index = (start + step) % len(parts)
                tp, dq = parts[index]
                if tp in self.muted:
                    continue
                with dq.lock:
                    if not dq.batches:
                        continue
                    first = dq.batches[0]
                    first.maybe_update_leader_epoch(cluster.leader_epoch(tp))
                    if (
                        first.attempts > 0
                        and now - first.last_attempt_ms < first.retry_backoff_ms
                        and not (discovery and first.leader_changed_for_ongoing_retry())
                    ):
                        continue
                    if ready and size + first.estimated_size() > max_size:
                        break
                    if idempotence is not None:
                        if not idempotence.send_allowed(tp):
                            # Its partition is not in the transaction yet: others may go.
                            continue
                        if idempotence.should_stop_drain(first):
                            break
                    batch = dq.batches.popleft()
                    batch.closed = True
                if idempotence is not None:
                    idempotence.stamp(batch)
                batch.close()
                size += batch.wire_size()
                ready.append(batch)
            self._drain_index[node] = index + 1
            if ready:
                out[node] = ready
        return out

    def reenqueue(self, batch: ProducerBatch, now: float, backoff_ms: float) -> None:
        """Put a batch to retry back at the head of its deque (in sequence order)."""
        batch.reenqueued(now, backoff_ms)
        state = self._topic(batch.tp[0])
        dq = self._deque(state, batch.tp[1])
        with dq.lock:
            batches = dq.batches
            if batch.has_sequence and batches and batches[0].has_sequence:
                ahead: list[ProducerBatch] = []
                while (
                    batches
                    and batches[0].has_sequence
                    and batches[0].base_sequence < batch.base_sequence
                ):
                    ahead.append(batches.popleft())
                batches.appendleft(batch)
                for earlier in reversed(ahead):
                    batches.appendleft(earlier)
            else:
                batches.appendleft(batch)

    def expired_batches(self, now: float) -> list[ProducerBatch]:
        """Batches still queued whose delivery.timeout.ms has passed, removed from their deques."""
        timeout = self.delivery_timeout_ms
        expired: list[ProducerBatch] = []
        for _topic, state in self._topics.items():
            for dq in state.deques.values():
                if not dq.batches:
                    continue
                with dq.lock:
                    batches = dq.batches
                    while batches and now - batches[0].created_ms >= timeout:
                        batch = batches.popleft()
                        batch.closed = True
                        expired.append(batch)
        return expired

    def next_expiry_delay(self, now: float) -> float:
        earliest = float("inf")
        for _topic, state in self._topics.items():
            for dq in state.deques.values():
                batches = dq.batches
                if batches:
                    try:
                        earliest = min(earliest, batches[0].created_ms)
                    except IndexError:
                        pass
        return max(0.0, earliest + self.delivery_timeout_ms - now)

    def remove_all_queued(self) -> list[ProducerBatch]:
        """Every batch not yet drained, taken out of the deques (close, fatal errors)."""
        out: list[ProducerBatch] = []
        for _topic, state in self._topics.items():
            for dq in state.deques.values():
                with dq.lock:
                    while dq.batches:
                        batch = dq.batches.popleft()
                        batch.closed = True
                        out.append(batch)
        return out

    def begin_flush(self) -> None:
        with self._lock:
            self.flushes_in_progress += 1

    def end_flush(self) -> None:
        with self._lock:
            self.flushes_in_progress -= 1

    def has_undrained(self) -> bool:
        return any(dq.batches for _, s in self._topics.items() for dq in s.deques.values())

    def deallocate(self, batch: ProducerBatch) -> None:
        self.incomplete.discard(batch)
        if batch.alloc_size:
            self.pool.deallocate(batch.alloc_size)
            batch.alloc_size = 0
        if batch.codec and batch.compressed_size:
            self.estimator.update(batch.tp[0], batch.codec, batch.compression_ratio())

    def queue_lengths(self, topic: str) -> dict[int, int]:
        """Batches waiting per partition of ``topic`` (for tests and metrics)."""
        state = self._topics.get(topic)
        if state is None:
            return {}
        return {p: len(dq.batches) for p, dq in state.deques.items()}
