"""Producer ids for idempotent producers, handed out from blocks the controller allocates
(Kafka's ProducerIdManager): ids are unique across the cluster and never reused."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from brook.metadata.controller import PRODUCER_ID_BLOCK

if TYPE_CHECKING:
    from brook.metadata.service import MetadataService


class ProducerIdManager:
    def __init__(self, metadata: MetadataService, broker_id: int, broker_epoch: int) -> None:
        self.metadata = metadata
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._next = 0
        self._end = 0
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        if self._next >= self._end:
            async with self._lock:
                if self._next >= self._end:
                    start = await self.metadata.submit_with(
                        lambda c: c.allocate_producer_ids(self.broker_id, self.broker_epoch)
                    )
                    self._next, self._end = start, start + PRODUCER_ID_BLOCK
        value = self._next
        self._next += 1
        return value
