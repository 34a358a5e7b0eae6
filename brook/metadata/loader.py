"""The node's view of the cluster metadata: committed records in, the node's image out.

Every node (broker, controller, or both) has one ``MetadataLoader`` listening to the quorum.
It decodes each committed record, applies it to the node's ``MetadataImage`` and hands the
changes to the publishers (the replica manager, the group coordinator, ...). Request handlers
wait on it when they must answer only once this node's image holds a result
(``wait_for_offset``).

A committed record this node cannot apply (a format it does not read, or one that contradicts
the image) is logged and skipped: the node keeps starting and serving; nothing a client asked
for may stop it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Callable, Sequence

from .image import Change, ImageError, MetadataImage
from .quorum import CommittedBatch, LeaderAndEpoch
from .records import (
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    RecordFormatError,
    TopicRecord,
    decode,
)
from .topics import RESERVED_TOPICS

log = logging.getLogger(__name__)

Publisher = Callable[[list[Change]], None]


class MetadataLoader:
    def __init__(self, image: MetadataImage | None = None) -> None:
        self.image = image if image is not None else MetadataImage()
        self.leader = LeaderAndEpoch(None, 0)
        self.skipped = 0  # committed records that could not be applied
        self._skipped_topics: set[uuid.UUID] = set()
        self._publishers: list[Publisher] = []
        self._leader_listeners: list[Callable[[LeaderAndEpoch], None]] = []
        self._waiters: list[tuple[int, asyncio.Future[None]]] = []

    @property
    def applied_offset(self) -> int:
        """The last committed offset this node's image has applied (-1: none)."""
        return self.image.offset

    def add_publisher(self, publisher: Publisher) -> None:
        self._publishers.append(publisher)

    def add_leader_listener(self, listener: Callable[[LeaderAndEpoch], None]) -> None:
        self._leader_listeners.append(listener)

    # ------------------------------------------------------------------ QuorumListener
    def handle_commit(self, batch: CommittedBatch) -> None:
        changes: list[Change] = []
        for offset, value in batch.records:
            changes.extend(self._apply(offset, value))
        self.image.offset = max(self.image.offset, batch.last_offset)
        self._publish(changes)

    def handle_load_snapshot(self, end_offset: int, records: Sequence[bytes]) -> None:
        """Replace the image with a snapshot's (records that rebuild it, up to
        ``end_offset`` exclusive)."""
        old = self.image
        self.image = MetadataImage()
        for value in records:
            self._apply(end_offset - 1, value)
        self.image.offset = end_offset - 1
        self._publish(self._differences(old, self.image))

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None:
        self.leader = leader
        for listener in self._leader_listeners:
            listener(leader)

    # ------------------------------------------------------------------ waiting
    async def wait_for_offset(self, offset: int) -> None:
        """Return once the image has applied ``offset``."""
        if self.image.offset >= offset:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append((offset, future))
        try:
            await future
        finally:
            if not future.done():
                future.cancel()
            self._waiters = [(o, f) for o, f in self._waiters if f is not future]

    # ------------------------------------------------------------------ internals
    def _apply(self, offset: int, value: bytes) -> list[Change]:
        try:
            record = decode(value)
            why = self._unappliable(record)
            if why is None:
                return self.image.apply(record, offset)
        except (RecordFormatError, ImageError) as exc:
            why = str(exc)
        self.skipped += 1
        self.image.offset = max(self.image.offset, offset)
        log.error("skipping metadata record at offset %d: %s", offset, why)
        return []

    def _unappliable(self, record: MetadataRecord) -> str | None:
        """Why a committed record that the image would take must still be skipped: a topic
        under a reserved name (older versions let a client commit one) goes, with everything
        that names it."""
        if isinstance(record, TopicRecord) and record.name in RESERVED_TOPICS:
            self._skipped_topics.add(record.topic_id)
            return f"the topic name {record.name} is reserved for the metadata log"
        topic_id = getattr(record, "topic_id", None)
        if topic_id is not None and topic_id in self._skipped_topics:
            return f"it belongs to the skipped topic id {topic_id}"
        if (
            isinstance(record, ConfigRecord)
            and record.resource_type == ConfigResourceType.TOPIC
            and record.resource_name in RESERVED_TOPICS
        ):
            return f"the topic name {record.resource_name} is reserved for the metadata log"
        return None

    def _publish(self, changes: list[Change]) -> None:
        if changes:
            for publisher in self._publishers:
                publisher(changes)
        if self._waiters:
            done = self.image.offset
            for target, future in self._waiters:
                if target <= done and not future.done():
                    future.set_result(None)

    @staticmethod
    def _differences(old: MetadataImage, new: MetadataImage) -> list[Change]:
        from .image import BrokerChanged, ConfigChanged, PartitionChanged, TopicRemoved

        changes: list[Change] = []
        for topic_id, topic in old.topics_by_id.items():
            if topic_id not in new.topics_by_id:
                changes.append(TopicRemoved(topic))
        for topic in new.topics.values():
            before = old.topics_by_id.get(topic.topic_id)
            for p, info in topic.partitions.items():
                if before is None or before.partitions.get(p) != info:
                    changes.append(PartitionChanged(topic.name, info))
        for key in old.configs.keys() | new.configs.keys():
            if old.configs.get(key) != new.configs.get(key):
                changes.append(ConfigChanged(*key))
        for broker_id in old.brokers.keys() | new.brokers.keys():
            if old.brokers.get(broker_id) != new.brokers.get(broker_id):
                changes.append(BrokerChanged(broker_id))
        return changes
