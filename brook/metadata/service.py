"""The controller shell: serialises controller decisions, writes their records to the metadata
quorum, applies them to the image once committed, and tells listeners what changed.

A decision is all or nothing: the logs its new partitions need are created first (the
``LogPreparer``), then its records are committed; if either fails on a storage error, nothing
of it is committed and its results carry KAFKA_STORAGE_ERROR. At startup, a record that cannot
be applied (one naming a reserved topic, which older versions let a client commit, or one the
image refuses) is logged and skipped rather than stopping the node.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from brook.protocol.errors import Errors, KafkaError

from . import records as rec
from .controller import Controller, Decision, Outcome
from .image import Change, MetadataImage
from .quorum import LocalQuorum
from .topics import RESERVED_TOPICS

log = logging.getLogger(__name__)
T = TypeVar("T")
Listener = Callable[[list[Change]], None]
# Creates what the records need on this node before they commit (raising KafkaError when it
# cannot); returns the undo for a commit that then fails.
LogPreparer = Callable[[Sequence[rec.MetadataRecord]], Callable[[], None]]


class MetadataService:
    def __init__(self, quorum: LocalQuorum, controller: Controller) -> None:
        self.quorum = quorum
        self.controller = controller
        self.image: MetadataImage = controller.image
        self._lock = asyncio.Lock()
        self._listeners: list[Listener] = []
        self._preparer: LogPreparer | None = None

    def add_listener(self, listener: Listener) -> None:
        self._listeners.append(listener)

    def set_preparer(self, preparer: LogPreparer) -> None:
        self._preparer = preparer

    def replay(self) -> list[Change]:
        """Rebuild the image from the committed metadata log (at startup)."""
        changes: list[Change] = []
        count = 0
        skipped_ids: set[uuid.UUID] = set()
        for offset, value in self.quorum.read_committed(self.image.offset + 1):
            count += 1
            try:
                record = rec.decode(value)
                why = _unappliable(record, skipped_ids)
                if why is None:
                    changes.extend(self.image.apply(record, offset))
                    continue
            except Exception as exc:  # a committed record must never stop the node
                why = f"it cannot be applied ({exc!r})"
            self.image.offset = max(self.image.offset, offset)
            log.warning("skipping metadata record at offset %d: %s", offset, why)
        log.info("replayed %d metadata records up to offset %d", count, self.image.offset)
        return changes

    async def submit(self, decide: Callable[[Controller], Decision]) -> Decision:
        """Run one controller decision and commit its records before returning. A storage
        error fails the decision's results rather than raising."""

        async def run() -> Decision:
            decision = decide(self.controller)
            try:
                await self._commit_decision(decision)
            except KafkaError as exc:
                if exc.code != Errors.KAFKA_STORAGE_ERROR:
                    raise
                decision.records = []
                _fail_results(decision.results, exc)
            return decision

        return await self._serialised(run)

    async def submit_with(self, decide: Callable[[Controller], tuple[Decision, T]]) -> T:
        """As ``submit`` for a decision that returns a value; a storage error raises."""

        async def run() -> T:
            decision, value = decide(self.controller)
            await self._commit_decision(decision)
            return value

        return await self._serialised(run)

    async def _serialised(self, work: Callable[[], Awaitable[T]]) -> T:
        """Run ``work`` under the lock, to the end even if the caller is cancelled (a client
        that disconnects): once records are appended they must be applied, or the image
        would miss records the log holds, and the next decision would be made without them."""

        async def locked() -> T:
            async with self._lock:
                return await work()

        task = asyncio.ensure_future(locked())
        try:
            return await asyncio.shield(task)
        except asyncio.CancelledError:
            task.add_done_callback(_log_orphan_failure)
            raise

    async def _commit_decision(self, decision: Decision) -> None:
        records = decision.records
        if not records:
            return
        undo = self._preparer(records) if self._preparer is not None else None
        try:
            await self._commit(records)
        except BaseException:
            if undo is not None:
                undo()
            raise

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


def _unappliable(record: rec.MetadataRecord, skipped_ids: set[uuid.UUID]) -> str | None:
    """Why a committed record must be skipped at replay, or None. A topic under a reserved
    name (the metadata log's own) is dropped with everything that names its id."""
    if isinstance(record, rec.TopicRecord) and record.name in RESERVED_TOPICS:
        skipped_ids.add(record.topic_id)
        return f"the topic name {record.name} is reserved for the metadata log"
    topic_id = getattr(record, "topic_id", None)
    if topic_id is not None and topic_id in skipped_ids:
        return f"it belongs to the skipped topic id {topic_id}"
    if (
        isinstance(record, rec.ConfigRecord)
        and record.resource_type == rec.ConfigResourceType.TOPIC
        and record.resource_name in RESERVED_TOPICS
    ):
        return f"the topic name {record.resource_name} is reserved for the metadata log"
    return None


def _fail_results(results: Sequence[Any], error: KafkaError) -> None:
    """Give every successful per-item result (an Outcome, or a tuple holding one) ``error``."""
    for item in results:
        outcomes = item if isinstance(item, tuple) else (item,)
        for outcome in outcomes:
            if isinstance(outcome, Outcome) and outcome.ok:
                outcome.error_code, outcome.error_message = error.code, error.message


def _log_orphan_failure(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a metadata change whose requester left failed: %s", task.exception())


def _new_cluster_id() -> str:
    import base64

    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
