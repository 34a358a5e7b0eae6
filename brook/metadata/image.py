"""The in-memory metadata image: the state the metadata log's records add up to.

``apply`` folds one record into the image and reports what changed, so the broker can react
(become leader of a new partition, delete the logs of a removed topic, reload a config).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from .records import (
    BrokerRegistrationChangeRecord,
    ClusterIdRecord,
    ConfigRecord,
    ConfigResourceType,
    Endpoint,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    broker_epoch: int
    incarnation_id: str
    endpoints: tuple[Endpoint, ...]
    rack: str | None
    fenced: bool

    def endpoint(self, listener: str) -> Endpoint | None:
        for ep in self.endpoints:
            if ep.name == listener:
                return ep
        return None


@dataclass(frozen=True)
class PartitionInfo:
    topic_id: uuid.UUID
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int
    partition_epoch: int
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()


@dataclass
class TopicInfo:
    name: str
    topic_id: uuid.UUID
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)


@dataclass(frozen=True)
class PartitionChanged:
    topic: str
    info: PartitionInfo


@dataclass(frozen=True)
class TopicRemoved:
    topic: TopicInfo


@dataclass(frozen=True)
class ConfigChanged:
    resource_type: int
    resource_name: str


@dataclass(frozen=True)
class BrokerChanged:
    broker_id: int


Change = PartitionChanged | TopicRemoved | ConfigChanged | BrokerChanged


class MetadataImage:
    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.topics_by_id: dict[uuid.UUID, TopicInfo] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.next_producer_id = 0
        self.offset = -1  # last applied metadata log offset

    # ------------------------------------------------------------------ reads
    def topic_configs(self, topic: str) -> dict[str, str]:
        return dict(self.configs.get((ConfigResourceType.TOPIC, topic), {}))

    def broker_configs(self, broker_id: int | str) -> dict[str, str]:
        return dict(self.configs.get((ConfigResourceType.BROKER, str(broker_id)), {}))

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        info = self.topics.get(topic)
        return None if info is None else info.partitions.get(partition)

    def live_brokers(self) -> list[BrokerInfo]:
        return [b for b in sorted(self.brokers.values(), key=lambda b: b.broker_id) if not b.fenced]

    def alive_endpoint(self, broker_id: int, listener: str) -> Endpoint | None:
        broker = self.brokers.get(broker_id)
        if broker is None or broker.fenced:
            return None
        return broker.endpoint(listener)

    # ------------------------------------------------------------------ writes
    def apply_all(self, records: Iterable[tuple[int, MetadataRecord]]) -> list[Change]:
        changes: list[Change] = []
        for offset, record in records:
            changes.extend(self.apply(record, offset))
        return changes

    def apply(self, record: MetadataRecord, offset: int) -> list[Change]:
        self.offset = max(self.offset, offset)
        if isinstance(record, TopicRecord):
            topic = TopicInfo(record.name, record.topic_id)
            self.topics[record.name] = topic
            self.topics_by_id[record.topic_id] = topic
            return []
        if isinstance(record, PartitionRecord):
            topic = self.topics_by_id[record.topic_id]
            part = PartitionInfo(
                record.topic_id,
                record.partition_id,
                tuple(record.replicas),
                tuple(record.isr),
                record.leader,
                record.leader_epoch,
                record.partition_epoch,
                tuple(record.removing_replicas),
                tuple(record.adding_replicas),
            )
            topic.partitions[record.partition_id] = part
            return [PartitionChanged(topic.name, part)]
        if isinstance(record, PartitionChangeRecord):
            return self._apply_partition_change(record)
        if isinstance(record, RemoveTopicRecord):
            removed = self.topics_by_id.pop(record.topic_id, None)
            if removed is None:
                return []
            self.topics.pop(removed.name, None)
            self.configs.pop((ConfigResourceType.TOPIC, removed.name), None)
            return [TopicRemoved(removed)]
        if isinstance(record, ConfigRecord):
            key = (record.resource_type, record.resource_name)
            entries = self.configs.setdefault(key, {})
            if record.value is None:
                entries.pop(record.name, None)
            else:
                entries[record.name] = record.value
            if not entries:
                self.configs.pop(key, None)
            return [ConfigChanged(record.resource_type, record.resource_name)]
        if isinstance(record, RegisterBrokerRecord):
            self.brokers[record.broker_id] = BrokerInfo(
                record.broker_id,
                record.broker_epoch,
                record.incarnation_id,
                tuple(record.endpoints),
                record.rack,
                record.fenced,
            )
            return [BrokerChanged(record.broker_id)]
        if isinstance(record, BrokerRegistrationChangeRecord):
            broker = self.brokers.get(record.broker_id)
            if broker is not None and record.fenced is not None:
                self.brokers[record.broker_id] = replace(broker, fenced=record.fenced)
            return [BrokerChanged(record.broker_id)]
        if isinstance(record, UnregisterBrokerRecord):
            self.brokers.pop(record.broker_id, None)
            return [BrokerChanged(record.broker_id)]
        if isinstance(record, ProducerIdsRecord):
            self.next_producer_id = max(self.next_producer_id, record.next_producer_id)
            return []
        if isinstance(record, ClusterIdRecord):
            self.cluster_id = record.cluster_id
            return []
        if isinstance(record, NoOpRecord):
            return []
        raise TypeError(f"unknown metadata record {type(record).__name__}")

    def _apply_partition_change(self, record: PartitionChangeRecord) -> list[Change]:
        topic = self.topics_by_id.get(record.topic_id)
        if topic is None or record.partition_id not in topic.partitions:
            return []
        old = topic.partitions[record.partition_id]
        leader_changed = record.leader is not None and record.leader != old.leader
        new = replace(
            old,
            leader=old.leader if record.leader is None else record.leader,
            isr=old.isr if record.isr is None else tuple(record.isr),
            replicas=old.replicas if record.replicas is None else tuple(record.replicas),
            removing_replicas=old.removing_replicas
            if record.removing_replicas is None
            else tuple(record.removing_replicas),
            adding_replicas=old.adding_replicas
            if record.adding_replicas is None
            else tuple(record.adding_replicas),
            leader_epoch=old.leader_epoch + 1
            if leader_changed or record.bump_leader_epoch
            else old.leader_epoch,
            partition_epoch=old.partition_epoch + 1,
        )
        topic.partitions[record.partition_id] = new
        return [PartitionChanged(topic.name, new)]
