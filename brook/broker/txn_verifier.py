"""The partition leader's asyncio shell around ``txn_verify``: asks the transaction
coordinator of a transactional id whether partitions are in its ongoing transaction
(AddPartitionsToTxn v5, verify-only) before their first transactional batch is written.

Transactions waiting for the same coordinator node go in one request, one request in flight
per node (Kafka's AddPartitionsToTxnManager). A coordinator on this node is asked directly,
as the AddPartitionsToTxn handler would answer (no request to itself).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from brook.net.connection import NodeChannels
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from .handlers.add_partitions_to_txn import answer_transaction
from .txn_verify import (
    PartitionErrors,
    TopicPartition,
    Verification,
    VerificationQueue,
    coordinator_node,
    response_errors,
)

if TYPE_CHECKING:
    from .server import Broker

log = logging.getLogger(__name__)

REQUEST_VERSION = 5


class TxnVerifier:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.queue = VerificationQueue()
        self.request_timeout_ms = int(broker.config["request.timeout.ms"])
        self.channels = NodeChannels(
            f"brook-txn-verifier-{broker.node_id}", broker.inter_broker_security
        )
        self._tasks: set[asyncio.Task[None]] = set()

    async def verify(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
    ) -> PartitionErrors:
        """The partitions its coordinator did not verify, with why (coordinator errors, not
        yet turned into a produce's: ``txn_verify.produce_error``)."""
        node = coordinator_node(self.broker.image, transactional_id)
        if node is None:
            return dict.fromkeys(partitions, Errors.COORDINATOR_NOT_AVAILABLE)
        if node == self.broker.node_id:
            answers = await answer_transaction(
                self.broker,
                transactional_id,
                producer_id,
                producer_epoch,
                partitions,
                verify_only=True,
            )
            return {
                tp: Errors.INVALID_PRODUCER_EPOCH if e == Errors.PRODUCER_FENCED else e
                for tp, e in answers.items()
                if e != Errors.NONE
            }
        done: asyncio.Future[PartitionErrors] = asyncio.get_running_loop().create_future()

        def resolve(errors: PartitionErrors) -> None:
            if not done.done():
                done.set_result(errors)

        item = Verification(transactional_id, producer_id, producer_epoch, partitions, resolve)
        if self.queue.add(node, item):
            self._spawn(node)
        return await done

    def _spawn(self, node: int) -> None:
        task = asyncio.get_running_loop().create_task(self._send(node))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, node: int) -> None:
        await asyncio.sleep(0)  # let the verifications of the same moment join the request
        items = self.queue.take(node)
        if not items:
            return
        errors: dict[str, PartitionErrors] | int
        listener = self.broker.config["inter.broker.listener.name"]
        endpoint = self.broker.image.alive_endpoint(node, listener)
        if endpoint is None:
            errors = Errors.COORDINATOR_NOT_AVAILABLE
        else:
            try:
                conn = self.channels.get(node, endpoint.host, endpoint.port)
                response = await conn.send(
                    ApiKey.ADD_PARTITIONS_TO_TXN,
                    REQUEST_VERSION,
                    self.queue.request(items),
                    self.request_timeout_ms / 1000,
                )
            except Exception as exc:  # down, slow or disconnected: the producer retries
                log.debug("AddPartitionsToTxn to node %d failed: %s", node, exc)
                errors = Errors.NETWORK_EXCEPTION
            except asyncio.CancelledError:
                self.queue.answered(node, items, Errors.NETWORK_EXCEPTION)
                raise
            else:
                errors = response_errors(response)
        if self.queue.answered(node, items, errors):
            self._spawn(node)

    async def stop(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
        for node_items in self.queue.waiting.values():
            for item in node_items.values():
                item.fail(Errors.NETWORK_EXCEPTION)
        self.queue.waiting.clear()
        self.channels.close()
