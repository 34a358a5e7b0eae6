"""The asyncio shell around :class:`~.transactions.TransactionManager`: one task on the
producer's loop that sends the manager's requests one at a time (FindCoordinator to any
broker, the others to the coordinator it names) and hands back the answers.

It wakes when a transactional call queues work, when a record goes to a partition not yet in
the transaction, when a batch completes (EndTxn waits for the last one), and at the retry
time the manager names; the record sender is woken after each answer, since an added
partition may release batches.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from typing import Any

from brook.client.cluster import BrokerNode, TopicPartition
from brook.client.connection import UnsupportedVersionError
from brook.client.network import NetworkClient
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from .accumulator import RecordAccumulator, now_ms
from .errors import FatalTransactionError
from .transactions import (
    Answer,
    CoordinatorAnswer,
    ErrorAnswer,
    Outgoing,
    PartitionsAnswer,
    ProducerIdAnswer,
    TransactionManager,
)

__all__ = ["TxnRequestSender"]

log = logging.getLogger(__name__)

# api name -> (key, the newest version this client speaks: transaction version 1, before
# KIP-890's batched AddPartitionsToTxn v4 and EndTxn v5).
_APIS: dict[str, tuple[int, int]] = {
    "FIND_COORDINATOR": (ApiKey.FIND_COORDINATOR, 6),
    "INIT_PRODUCER_ID": (ApiKey.INIT_PRODUCER_ID, 5),
    "EPOCH_BUMP": (ApiKey.INIT_PRODUCER_ID, 5),
    "ADD_PARTITIONS": (ApiKey.ADD_PARTITIONS_TO_TXN, 3),
    "ADD_OFFSETS": (ApiKey.ADD_OFFSETS_TO_TXN, 3),
    "TXN_OFFSET_COMMIT": (ApiKey.TXN_OFFSET_COMMIT, 3),
    "END_TXN": (ApiKey.END_TXN, 4),
}
# KIP-360's bump of an epoch by InitProducerId with the current one needs v3.
_MIN_VERSION = {"EPOCH_BUMP": 3}


def parse_answer(api: str, response: Any) -> Answer:
    """A response as the manager reads it."""
    if api == "FIND_COORDINATOR":
        answer = response.coordinators[0] if hasattr(response, "coordinators") else response
        code = int(answer.error_code)
        node = None
        if code == Errors.NONE:
            node = BrokerNode(int(answer.node_id), str(answer.host), int(answer.port))
        return CoordinatorAnswer(code, node, getattr(answer, "error_message", None))
    if api in ("INIT_PRODUCER_ID", "EPOCH_BUMP"):
        return ProducerIdAnswer(
            int(response.error_code), int(response.producer_id), int(response.producer_epoch)
        )
    if api == "ADD_PARTITIONS":
        return PartitionsAnswer(
            {
                TopicPartition(str(t.name), int(p.partition_index)): int(p.partition_error_code)
                for t in response.results_by_topic_v3_and_below
                for p in t.results_by_partition
            }
        )
    if api == "TXN_OFFSET_COMMIT":
        return PartitionsAnswer(
            {
                TopicPartition(str(t.name), int(p.partition_index)): int(p.error_code)
                for t in response.topics
                for p in t.partitions
            }
        )
    return ErrorAnswer(int(response.error_code))


class TxnRequestSender:
    def __init__(
        self,
        manager: TransactionManager,
        network: NetworkClient,
        accumulator: RecordAccumulator,
        wake_sender: Callable[[], None],
        request_timeout_ms: int,
    ) -> None:
        self.manager = manager
        self.network = network
        self.accumulator = accumulator
        self.wake_sender = wake_sender
        self.request_timeout_ms = request_timeout_ms
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread = 0
        self._event: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._running = True

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._event = asyncio.Event()
        self._task = self._loop.create_task(self._run(), name="brook-producer-transactions")

    def wakeup(self) -> None:
        """Look at the manager again; safe from any thread."""
        loop, event = self._loop, self._event
        if loop is None or event is None:
            return
        if threading.get_ident() == self._thread:
            event.set()
        else:
            try:
                loop.call_soon_threadsafe(event.set)
            except RuntimeError:
                pass  # the loop is closed: the producer is gone

    async def close(self) -> None:
        self._running = False
        task = self._task
        if task is not None:
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass

    async def _run(self) -> None:
        event = self._event
        assert event is not None
        while self._running:
            event.clear()
            try:
                out = self.manager.next_request(now_ms(), bool(self.accumulator.incomplete))
            except Exception:
                log.exception("transactional request selection failed")
                out = None
            if isinstance(out, Outgoing):
                await self._send(out)
                self.wake_sender()
                continue
            timeout = None if out is None else max(out, 1.0) / 1000
            try:
                await asyncio.wait_for(event.wait(), timeout)
            except TimeoutError:
                pass

    async def _send(self, out: Outgoing) -> None:
        key, newest = _APIS[out.api]
        oldest = _MIN_VERSION.get(out.api, 0)
        try:
            if out.node is None:
                response = await self.network.send_any(
                    key,
                    out.body,
                    timeout_ms=self.request_timeout_ms,
                    client_min=oldest,
                    client_max=newest,
                )
            else:
                response = await self.network.send_to(
                    out.node.node_id,
                    key,
                    out.body,
                    timeout_ms=self.request_timeout_ms,
                    client_min=oldest,
                    client_max=newest,
                )
        except UnsupportedVersionError as exc:
            self.manager.fatal(
                FatalTransactionError(
                    Errors.UNSUPPORTED_VERSION,
                    f"the broker cannot serve this transactional producer: {exc.message}",
                )
            )
            return
        except (KafkaError, OSError) as exc:
            self.manager.on_send_failed(out, exc, now_ms())
            return
        self.manager.on_response(out, parse_answer(out.api, response), now_ms())
