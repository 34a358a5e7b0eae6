"""Producer ids for idempotent producers, handed out from blocks the controller allocates
(Kafka's ProducerIdManager): ids are unique across the cluster and never reused."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from brook.metadata.controller_api import ControllerApi


class ProducerIdManager:
    def __init__(
        self, controller: ControllerApi, broker_id: int, broker_epoch: Callable[[], int]
    ) -> None:
        self.controller = controller
        self.broker_id = broker_id
        self.broker_epoch = broker_epoch
        self._next = 0
        self._end = 0
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        if self._next >= self._end:
            async with self._lock:
                if self._next >= self._end:
                    block = await self.controller.allocate_producer_ids(
                        self.broker_id, self.broker_epoch()
                    )
                    start = block.value.first_producer_id
                    self._next, self._end = start, start + block.value.size
        value = self._next
        self._next += 1
        return value
