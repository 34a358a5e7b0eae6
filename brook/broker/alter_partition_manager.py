"""The broker's AlterPartition sender (Kafka's AlterPartitionManager): the ISR updates its
partitions ask for, sent to the active controller one request at a time.

Updates queue by partition (a newer one replaces a queued one); while a request is in flight
the next ones wait and all go together in the next request, stamped with this broker's
current epoch. A request that fails as a whole (no controller, STALE_BROKER_EPOCH, a timeout)
is retried after a backoff with whatever is still queued; each partition's answer goes to the
partition, which commits, rolls back, waits for the metadata or asks to send it again
(``leader_state.Reaction``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable

from brook.metadata.controller_api import ControllerApi, ControllerError, IsrChange

from .leader_state import IsrUpdate, Reaction
from .partition import Partition

log = logging.getLogger(__name__)

Key = tuple[uuid.UUID, int]


class AlterPartitionManager:
    def __init__(
        self,
        controller: ControllerApi,
        broker_id: int,
        broker_epoch: Callable[[], int],
        retry_backoff_ms: int = 100,
    ) -> None:
        self.controller = controller
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self.backoff_s = retry_backoff_ms / 1000
        self._queue: dict[Key, tuple[Partition, IsrUpdate]] = {}
        self._task: asyncio.Task[None] | None = None
        self._closed = False
        self.requests_sent = 0

    @property
    def in_flight(self) -> bool:
        return self._task is not None and not self._task.done()

    def submit(self, partition: Partition, update: IsrUpdate) -> None:
        self._queue[(partition.topic_id, partition.partition)] = (partition, update)
        self._kick()

    def close(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()

    def _kick(self) -> None:
        if self._closed or self.in_flight or not self._queue:
            return
        with contextlib.suppress(RuntimeError):  # no running loop: left queued
            self._task = asyncio.get_running_loop().create_task(self._send_queued())

    async def _send_queued(self) -> None:
        while self._queue and not self._closed:
            batch, self._queue = self._queue, {}
            # an update its partition has left (new metadata, a new epoch) is not sent
            batch = {
                k: (p, u)
                for k, (p, u) in batch.items()
                if p.leader_state is not None and p.leader_state.pending is u
            }
            if not batch:
                break
            changes = [
                IsrChange(
                    p.topic_id,
                    p.partition,
                    u.leader_epoch,
                    u.new_isr_with_epochs,
                    u.partition_epoch,
                )
                for p, u in batch.values()
            ]
            self.requests_sent += 1
            try:
                result = await self.controller.alter_partition(
                    self.broker_id, self.broker_epoch(), changes
                )
            except (ControllerError, OSError) as exc:
                log.info("AlterPartition for %d partition(s) failed: %s", len(changes), exc)
                self._requeue(batch)
                await asyncio.sleep(self.backoff_s)
                continue
            except Exception:
                # never lose the updates: their partitions could not change their ISR again
                log.exception("AlterPartition for %d partition(s) failed", len(changes))
                self._requeue(batch)
                await asyncio.sleep(self.backoff_s)
                continue
            answers = {(r.topic_id, r.partition): r for r in result.value}
            retry: dict[Key, tuple[Partition, IsrUpdate]] = {}
            for key, (partition, update) in batch.items():
                answer = answers.get(key)
                if answer is None:
                    retry[key] = (partition, update)
                    continue
                reaction = partition.on_isr_reply(
                    update,
                    answer.error_code,
                    leader_epoch=answer.leader_epoch,
                    partition_epoch=answer.partition_epoch,
                    isr=answer.isr,
                )
                if reaction is Reaction.RETRY:
                    retry[key] = (partition, update)
            if retry:
                self._requeue(retry)
                await asyncio.sleep(self.backoff_s)

    def _requeue(self, batch: dict[Key, tuple[Partition, IsrUpdate]]) -> None:
        for key, item in batch.items():
            self._queue.setdefault(key, item)  # a newer update queued meanwhile wins
