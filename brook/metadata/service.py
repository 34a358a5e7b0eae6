"""The controller shell: serialises controller decisions, writes their records to the metadata
quorum, applies them to the image once committed, and tells listeners what changed.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence
from typing import TypeVar

from . import records as rec
from .controller import Controller, Decision
from .image import Change, MetadataImage
from .quorum import LocalQuorum

log = logging.getLogger(__name__)
T = TypeVar("T")
Listener = Callable[[list[Change]], None]


class MetadataService:
    def __init__(self, quorum: LocalQuorum, controller: Controller) -> None:
        self.quorum = quorum
        self.controller = controller
        self.image: MetadataImage = controller.image
        self._lock = asyncio.Lock()
        self._listeners: list[Listener] = []

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def replay(self) -> list[Change]:
        """Rebuild the image from the committed metadata log (at startup)."""
        changes: list[Change] = []
        count = 0
        for offset, value in self.quorum.read_committed(self.image.offset + 1):
            changes.extend(self.image.apply(rec.decode(value), offset))
            count += 1
        log.info("replayed %d metadata records up to offset %d", count, self.image.offset)
        return changes

    async def submit(self, decide: Callable[[Controller], Decision]) -> Decision:
        """Run one controller decision and commit its records before returning."""
        async with self._lock:
            decision = decide(self.controller)
            await self._commit(decision.records)
            return decision

    async def submit_with(self, decide: Callable[[Controller], tuple[Decision, T]]) -> T:
        async with self._lock:
            decision, value = decide(self.controller)
            await self._commit(decision.records)
            return value

    async def _commit(self, records: Sequence[rec.MetadataRecord]) -> None:
        if not records:
            return
        last = await self.quorum.append([rec.encode(r) for r in records])
        first = last - len(records) + 1
        changes = self.image.apply_all(zip(range(first, last + 1), records, strict=True))
        for listener in self._listeners:
            listener(changes)

    async def bootstrap(self, cluster_id: str | None) -> str:
        """Give a new metadata log its cluster id; returns the cluster id in force."""
        if self.image.cluster_id is None:
            cid = cluster_id or _new_cluster_id()
            await self._commit([rec.ClusterIdRecord(cid)])
        assert self.image.cluster_id is not None
        return self.image.cluster_id

    async def register_broker(
        self, broker_id: int, endpoints: Sequence[rec.Endpoint], rack: str | None
    ) -> int:
        """Register (or re-register after a restart) this broker; returns its broker epoch."""
        async with self._lock:
            epoch = self.quorum.end_offset
            record = rec.RegisterBrokerRecord(
                broker_id, uuid.uuid4().hex, epoch, tuple(endpoints), rack, fenced=False
            )
            await self._commit([record])
            return epoch


def _new_cluster_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
