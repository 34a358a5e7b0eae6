"""The transaction coordinator's asyncio shell around ``TxnStateManager``: loads the
``__transaction_state`` partitions this node leads, appends each decided change there with
acks=all before it takes effect, sends the markers of decided transactions to the partition
leaders (WriteTxnMarkers; its own partitions directly) until every partition has them, then
writes the Complete state; aborts transactions past their timeout and removes expired ids.

Every decision is the pure modules' (state.py, manager.py, markers.py, loading.py); this
module only moves bytes and time.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from brook.net.connection import NodeChannels
from brook.protocol.api import ApiKey
from brook.protocol.batch import CONTROL_BIT, iter_whole_batches
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import Record, batch_records, build_batch, encode_record
from brook.protocol.txn_marker import TxnMarker

from ..handlers.write_txn_markers import write_local
from ..internal_topic import InternalTopicCreator
from .loading import Completion, load_partition
from .log_records import TRANSACTION_STATE_TOPIC, encode_key, encode_value
from .manager import Routed, TxnStateManager
from .markers import MarkerError, PendingMarkers, Progress, markers_for
from .state import TopicPartition, TxnConfig, TxnMetadata, TxnState
from .state_topic import TRANSACTION_STATE

if TYPE_CHECKING:
    from ..partition import Partition
    from ..server import Broker

log = logging.getLogger(__name__)

LOAD_BUFFER_BYTES = 5 * 1024 * 1024
WRITE_TIMEOUT_MS = 5000
MARKER_RETRY_S = 0.1

# Kafka's TransactionStateManager.appendTransactionToLog: what a failed append answers.
_PREPARED = (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT)

_APPEND_ERRORS = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
}


def now_ms() -> int:
    return int(time.time() * 1000)


class TransactionCoordinator:
    def __init__(self, broker: Broker) -> None:
        cfg = broker.config
        self.broker = broker
        self.config = TxnConfig(
            max_timeout_ms=int(cfg["transaction.max.timeout.ms"]),
            id_expiration_ms=int(cfg["transactional.id.expiration.ms"]),
        )
        self.manager = TxnStateManager(
            int(cfg["transaction.state.log.num.partitions"]), self.config
        )
        self.abort_interval_ms = int(
            cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"]
        )
        self.expire_interval_ms = int(
            cfg["transaction.remove.expired.transaction.cleanup.interval.ms"]
        )
        self.request_timeout_ms = int(cfg["request.timeout.ms"])
        self._loading: dict[int, asyncio.Task[None]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self.state_topic = InternalTopicCreator(broker, TRANSACTION_STATE)
        self._active = False
        # markers go to the other leaders' inter-broker listeners, logged in as the fetchers
        self.channels = NodeChannels(
            f"brook-txn-coordinator-{broker.node_id}", broker.inter_broker_security
        )

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._active = True
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._every(self.abort_interval_ms, self._abort_timed_out)),
            loop.create_task(self._every(self.expire_interval_ms, self._expire_ids)),
        ]

    async def stop(self) -> None:
        self._active = False
        tasks = [*self._tasks, *self._loading.values(), *self._background]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        self.channels.close()

    @property
    def loading(self) -> bool:
        """Whether a ``__transaction_state`` partition of this node is still loading."""
        return bool(self._loading)

    def on_leadership(self, partition: Partition, is_leader: bool) -> None:
        """Replica manager hook: load a ``__transaction_state`` partition this node now leads
        (under its leader epoch as the coordinator epoch), or drop it."""
        if partition.topic != TRANSACTION_STATE_TOPIC:
            return
        index = partition.partition
        task = self._loading.pop(index, None)
        if task is not None:
            task.cancel()
        self.manager.unload(index)
        if is_leader:
            self.manager.begin_loading(index, partition.leader_epoch)
            self._loading[index] = asyncio.get_running_loop().create_task(self._load(partition))

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Run ``coro`` in a task of its own, which stopping the coordinator cancels and a
        request's cancellation does not."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    # ------------------------------------------------------------------ placement
    @property
    def num_partitions(self) -> int:
        topic = self.broker.image.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is not None and topic.partitions:
            return len(topic.partitions)
        return self.manager.num_partitions

    async def find_coordinator(self, transactional_id: str) -> tuple[int, int]:
        """(error, node id) of the coordinator of ``transactional_id``; creates
        ``__transaction_state`` on first use, as Kafka does."""
        if not self._active or not await self.state_topic.ensure():
            return Errors.COORDINATOR_NOT_AVAILABLE, -1
        self.manager.num_partitions = self.num_partitions
        info = self.broker.image.partition(
            TRANSACTION_STATE_TOPIC, self.manager.partition_for(transactional_id)
        )
        if info is None or info.leader < 0:
            return Errors.COORDINATOR_NOT_AVAILABLE, -1
        return Errors.NONE, info.leader

    # ------------------------------------------------------------------ requests
    async def init_producer_id(
        self, transactional_id: str, timeout_ms: int, expected: tuple[int, int] | None
    ) -> tuple[int, int, int]:
        """(error, producer id, epoch) for InitProducerId with a transactional id."""
        self.manager.num_partitions = self.num_partitions
        try:
            spare = await self.broker.producer_ids.next_id()
        except KafkaError:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS, -1, -1
        routed = self.manager.init_producer_id(
            transactional_id, timeout_ms, expected, now_ms(), lambda: spare
        )
        write = routed.decision.write
        if write is None:
            return routed.decision.error, -1, -1
        error = await self._carry_out(transactional_id, routed)
        if error:
            return error, -1, -1
        if routed.decision.markers is not None:
            # a fencing abort, finished in the background: the client retries
            return Errors.CONCURRENT_TRANSACTIONS, -1, -1
        return Errors.NONE, write.producer_id, write.producer_epoch

    async def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
    ) -> int:
        self.manager.num_partitions = self.num_partitions
        routed = self.manager.add_partitions(
            transactional_id, producer_id, producer_epoch, partitions, now_ms()
        )
        if routed.decision.write is None:
            return routed.decision.error
        return await self._carry_out(transactional_id, routed)

    async def end_txn(
        self, transactional_id: str, producer_id: int, producer_epoch: int, commit: bool
    ) -> int:
        self.manager.num_partitions = self.num_partitions
        routed = self.manager.end_txn(
            transactional_id, producer_id, producer_epoch, commit, now_ms()
        )
        if routed.decision.write is None:
            return routed.decision.error
        return await self._carry_out(transactional_id, routed)

    # ------------------------------------------------------------------ writing
    async def _carry_out(self, transactional_id: str, routed: Routed) -> int:
        """Write a request's decided change and act on its outcome (the markers of a Prepare
        state) in a task of its own; the client's error. A client that disconnects cancels
        its request's handler, and the outcome must still reach the state machine: an entry
        left pending answers CONCURRENT_TRANSACTIONS to every later request for the id, and a
        Prepare state left without its markers holds the LSO of its partitions for good."""
        return await asyncio.shield(self._spawn(self._write_and_finish(transactional_id, routed)))

    async def _write_and_finish(self, transactional_id: str, routed: Routed) -> int:
        error = await self._write(transactional_id, routed)
        if not error and routed.decision.markers is not None:
            self._finish(transactional_id, routed)
        return error

    async def _write(self, transactional_id: str, routed: Routed) -> int:
        """Append the routed change and report it to the manager; the client's error."""
        target = routed.decision.write
        assert target is not None
        error = await self._append(routed.partition, transactional_id, target)
        done = self.manager.write_done(
            transactional_id, routed.coordinator_epoch, target, ok=error == Errors.NONE
        )
        return error or done

    async def _append(self, index: int, transactional_id: str, target: TxnMetadata) -> int:
        rm = self.broker.replica_manager
        partition, error = rm.leader_partition(TRANSACTION_STATE_TOPIC, index)
        if partition is None:
            return _APPEND_ERRORS.get(error, error)
        now = now_ms()
        value = None if target.state == TxnState.DEAD else encode_value(target)
        batch = build_batch(
            [encode_record(0, 0, encode_key(transactional_id), value)],
            base_timestamp=now,
            max_timestamp=now,
        )
        try:
            result = partition.append_as_leader(batch, -1, now)
        except KafkaError as exc:
            return _APPEND_ERRORS.get(exc.code, exc.code)
        plog = partition.log
        if plog.unflushed_messages() >= plog.config.flush_messages:
            try:
                await asyncio.to_thread(plog.flush)
            except KafkaError as exc:
                return _APPEND_ERRORS.get(exc.code, exc.code)
        waiter = partition.wait_for_acks(result.last_offset + 1)
        if waiter is not None:
            try:
                await asyncio.wait_for(waiter, WRITE_TIMEOUT_MS / 1000)
            except TimeoutError:
                return Errors.COORDINATOR_NOT_AVAILABLE
            except KafkaError as exc:
                return _APPEND_ERRORS.get(exc.code, exc.code)
        return Errors.NONE

    # ------------------------------------------------------------------ markers
    def _finish(self, transactional_id: str, routed: Routed) -> None:
        """A PrepareCommit / PrepareAbort is written: markers, then the Complete state."""
        entry = self.manager.entry(transactional_id)
        write = routed.decision.write
        if entry is None or write is None or entry.meta != write:
            return
        markers = markers_for(write, routed.coordinator_epoch)
        target = entry.prepare_complete(now_ms())
        self._spawn(self._complete(Completion(entry, markers, target), routed.partition))

    async def _complete(self, completion: Completion, index: int) -> None:
        markers = completion.markers
        tid = markers.transactional_id
        try:
            while self._active:
                if self.manager.coordinator_epoch(index) != markers.coordinator_epoch:
                    return  # the partition moved: its new coordinator finishes this
                if await self._send_round(markers) != Progress.PENDING:
                    break
                await asyncio.sleep(MARKER_RETRY_S)
        except MarkerError:
            log.exception("transaction %s: markers cannot be written", tid)
            return
        if markers.progress != Progress.DONE:
            return
        # Kafka retries the Complete write until it lands or the partition moves.
        target = completion.target
        while self._active:
            error = await self._append(index, tid, target)
            done = self.manager.write_done(tid, markers.coordinator_epoch, target, ok=not error)
            if done == Errors.NOT_COORDINATOR or not error:
                return
            log.info(
                "transaction %s: writing %s failed (%d); retrying", tid, target.state.name, error
            )
            await asyncio.sleep(MARKER_RETRY_S)
            entry = self.manager.entry(tid)
            if entry is None or entry.pending is not None or entry.state not in _PREPARED:
                return
            target = entry.prepare_complete(now_ms())

    async def _send_round(self, markers: PendingMarkers) -> Progress:
        image = self.broker.image

        def leader_of(tp: TopicPartition) -> int | None:
            info = image.partition(tp[0], tp[1])
            return None if info is None else info.leader

        routes, _unknown = markers.by_leader(leader_of)
        marker = TxnMarker(
            markers.producer_id,
            markers.producer_epoch,
            markers.result.value == 1,
            markers.coordinator_epoch,
        )
        answers = await asyncio.gather(
            *(self._send_to(node, marker, tps) for node, tps in routes.items())
        )
        for errors in answers:
            if errors:
                markers.on_response(errors)
        return markers.progress

    async def _send_to(
        self, node: int, marker: TxnMarker, partitions: list[TopicPartition]
    ) -> dict[TopicPartition, int]:
        if node == self.broker.node_id:
            return await write_local(self.broker, marker, partitions, self.request_timeout_ms)
        listener = self.broker.config["inter.broker.listener.name"]
        endpoint = self.broker.image.alive_endpoint(node, listener)
        if endpoint is None:
            return {}
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        request = {
            "markers": [
                {
                    "producer_id": marker.producer_id,
                    "producer_epoch": marker.producer_epoch,
                    "transaction_result": marker.commit,
                    "topics": [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
                    "coordinator_epoch": marker.coordinator_epoch,
                }
            ]
        }
        try:
            conn = self.channels.get(node, endpoint.host, endpoint.port)
            response = await conn.send(
                ApiKey.WRITE_TXN_MARKERS, 1, request, self.request_timeout_ms / 1000 + 5
            )
        except Exception as exc:  # a broker down or slow: next round
            log.debug("WriteTxnMarkers to node %d failed: %s", node, exc)
            return {}
        return {
            (t.name, int(p.partition_index)): int(p.error_code)
            for m in response.markers
            for t in m.topics
            for p in t.partitions
        }

    # ------------------------------------------------------------------ loading
    async def _load(self, partition: Partition) -> None:
        index = partition.partition
        epoch = partition.leader_epoch
        try:
            records: list[tuple[bytes | None, bytes | None]] = []
            plog = partition.log
            offset = plog.log_start_offset
            while offset < plog.log_end_offset:
                data = plog.read(offset, LOAD_BUFFER_BYTES, None, True).records
                advanced = offset
                for last, batch in _batches(bytes(data)):
                    records.extend((r.key, r.value) for r in batch)
                    advanced = last + 1
                if advanced == offset:
                    break
                offset = advanced
                await asyncio.sleep(0)
            loaded = load_partition(records, epoch, now_ms())
            completions = self.manager.finish_loading(index, loaded)
            log.info(
                "loaded %d transactional id(s) of %s-%d, %d to complete",
                len(loaded.entries),
                TRANSACTION_STATE_TOPIC,
                index,
                len(completions),
            )
            for completion in completions:
                self._spawn(self._complete(completion, index))
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("loading %s-%d failed", TRANSACTION_STATE_TOPIC, index)
        finally:
            if self._loading.get(index) is asyncio.current_task():
                del self._loading[index]

    # ------------------------------------------------------------------ timers
    async def _every(self, interval_ms: int, job: Any) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await job()
            except Exception:
                log.exception("transaction coordinator timer failed")

    async def _abort_timed_out(self) -> None:
        for tid, routed in self.manager.abort_timed_out(now_ms()):
            if not await self._write(tid, routed):
                self._finish(tid, routed)

    async def _expire_ids(self) -> None:
        for tid, routed in self.manager.expire_ids(now_ms()):
            await self._write(tid, routed)


def _batches(buf: bytes) -> Iterator[tuple[int, list[Record]]]:
    """(last offset, records) of each whole batch; control batches have none."""
    for pos, header in iter_whole_batches(buf, _corrupt):
        records = [] if header.attributes & CONTROL_BIT else batch_records(buf, pos, header)
        yield header.last_offset, records


def _corrupt(exc: Exception) -> None:
    log.warning("skipping a corrupt batch in %s: %s", TRANSACTION_STATE_TOPIC, exc)
