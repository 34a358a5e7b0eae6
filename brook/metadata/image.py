"""The in-memory metadata image: the state the metadata log's records add up to.

``apply`` folds one record into the image and reports what changed, so the broker can react
(become leader of a new partition, delete the logs of a removed topic, reload a config).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from brook.security.acl import AclBinding, binding_of

from .records import (
    AccessControlEntryRecord,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ClusterIdRecord,
    ConfigRecord,
    ConfigResourceType,
    Endpoint,
    FeatureLevelRecord,
    LegacyPartitionChangeRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
)


@dataclass(frozen=True)
class BrokerInfo:
    broker_id: int
    broker_epoch: int
    incarnation_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]
    rack: str | None
    fenced: bool
    in_controlled_shutdown: bool = False
    features: tuple[BrokerFeature, ...] = ()

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
    leader_recovery_state: int = 0


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


@dataclass(frozen=True)
class AclsChanged:
    pass


Change = PartitionChanged | TopicRemoved | ConfigChanged | BrokerChanged | AclsChanged


class ImageError(ValueError):
    """A record that cannot be applied to the image as it stands."""


class MetadataImage:
    def __init__(self) -> None:
        self.cluster_id: str | None = None
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.topics_by_id: dict[uuid.UUID, TopicInfo] = {}
        self.configs: dict[tuple[int, str], dict[str, str]] = {}
        self.features: dict[str, int] = {}
        self.next_producer_id = 0
        # ACLs by their record id; ``acls_version`` moves on every change (authorizer caches)
        self.acls: dict[uuid.UUID, AclBinding] = {}
        self.acls_version = 0
        # (user, mechanism id) -> SCRAM credential (salt and keys, never a password)
        self.scram: dict[tuple[str, int], UserScramCredentialRecord] = {}
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

    # ------------------------------------------------------------------ copies and snapshots
    def copy(self) -> MetadataImage:
        """An independent image with the same content (partition infos are immutable and
        shared; the containers are not)."""
        other = MetadataImage()
        other.cluster_id = self.cluster_id
        other.brokers = dict(self.brokers)
        for topic in self.topics.values():
            clone = TopicInfo(topic.name, topic.topic_id, dict(topic.partitions))
            other.topics[clone.name] = clone
            other.topics_by_id[clone.topic_id] = clone
        other.configs = {key: dict(entries) for key, entries in self.configs.items()}
        other.features = dict(self.features)
        other.next_producer_id = self.next_producer_id
        other.acls = dict(self.acls)
        other.acls_version = self.acls_version
        other.scram = dict(self.scram)
        other.offset = self.offset
        return other

    def snapshot_records(self) -> list[MetadataRecord]:
        """Records that rebuild this image from an empty one (a metadata snapshot's content)."""
        out: list[MetadataRecord] = [
            FeatureLevelRecord(name, level) for name, level in sorted(self.features.items())
        ]
        for b in sorted(self.brokers.values(), key=lambda b: b.broker_id):
            out.append(
                RegisterBrokerRecord(
                    b.broker_id,
                    b.incarnation_id,
                    b.broker_epoch,
                    b.endpoints,
                    b.rack,
                    b.fenced,
                    b.in_controlled_shutdown,
                    b.features,
                )
            )
        for topic in sorted(self.topics.values(), key=lambda t: t.name):
            out.append(TopicRecord(topic.name, topic.topic_id))
            for p in sorted(topic.partitions.values(), key=lambda p: p.partition):
                out.append(
                    PartitionRecord(
                        p.topic_id,
                        p.partition,
                        p.replicas,
                        p.isr,
                        p.leader,
                        p.leader_epoch,
                        p.partition_epoch,
                        p.removing_replicas,
                        p.adding_replicas,
                        p.leader_recovery_state,
                    )
                )
        for (rtype, rname), entries in sorted(self.configs.items()):
            out.extend(ConfigRecord(rtype, rname, k, v) for k, v in sorted(entries.items()))
        if self.next_producer_id:
            out.append(ProducerIdsRecord(-1, -1, self.next_producer_id))
        out.extend(
            entry_record(acl_id, acl)
            for acl_id, acl in sorted(self.acls.items(), key=lambda item: item[0].bytes)
        )
        out.extend(self.scram[key] for key in sorted(self.scram))
        return out

    def digest(self) -> str:
        """A hash of the image's content (its snapshot records), equal on every node that
        has applied the same committed records."""
        from .records import encode

        h = hashlib.sha256()
        for record in self.snapshot_records():
            h.update(encode(record))
        return h.hexdigest()

    # ------------------------------------------------------------------ writes
    def apply_all(self, records: Iterable[tuple[int, MetadataRecord]]) -> list[Change]:
        changes: list[Change] = []
        for offset, record in records:
            changes.extend(self.apply(record, offset))
        return changes

    def apply(self, record: MetadataRecord, offset: int) -> list[Change]:
        """Fold one record in. A record that does not fit the image (a partition of an
        unknown topic, say) raises ``ImageError`` and leaves the image as it was."""
        self.offset = max(self.offset, offset)
        if isinstance(record, TopicRecord):
            if record.name in self.topics or record.topic_id in self.topics_by_id:
                raise ImageError(f"topic {record.name} ({record.topic_id}) already exists")
            topic = TopicInfo(record.name, record.topic_id)
            self.topics[record.name] = topic
            self.topics_by_id[record.topic_id] = topic
            return []
        if isinstance(record, PartitionRecord):
            topic = self.topics_by_id.get(record.topic_id)
            if topic is None:
                raise ImageError(f"partition {record.partition_id} of unknown topic id")
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
                record.leader_recovery_state,
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
                record.in_controlled_shutdown,
                tuple(record.features),
            )
            return [BrokerChanged(record.broker_id)]
        if isinstance(record, BrokerRegistrationChangeRecord):
            broker = self.brokers.get(record.broker_id)
            if broker is None:
                return []
            if record.fenced is not None:
                broker = replace(broker, fenced=record.fenced)
            if record.in_controlled_shutdown is not None:
                broker = replace(broker, in_controlled_shutdown=record.in_controlled_shutdown)
            self.brokers[record.broker_id] = broker
            return [BrokerChanged(record.broker_id)]
        if isinstance(record, UnregisterBrokerRecord):
            self.brokers.pop(record.broker_id, None)
            return [BrokerChanged(record.broker_id)]
        if isinstance(record, ProducerIdsRecord):
            self.next_producer_id = max(self.next_producer_id, record.next_producer_id)
            return []
        if isinstance(record, FeatureLevelRecord):
            self.features[record.name] = record.feature_level
            return []
        if isinstance(record, ClusterIdRecord):
            self.cluster_id = record.cluster_id
            return []
        if isinstance(record, AccessControlEntryRecord):
            self.acls[record.id] = binding_of(
                record.resource_type,
                record.resource_name,
                record.pattern_type,
                record.principal,
                record.host,
                record.operation,
                record.permission_type,
            )
            self.acls_version += 1
            return [AclsChanged()]
        if isinstance(record, RemoveAccessControlEntryRecord):
            if self.acls.pop(record.id, None) is None:
                return []
            self.acls_version += 1
            return [AclsChanged()]
        if isinstance(record, NoOpRecord):
            return []
        if isinstance(record, UserScramCredentialRecord):
            self.scram[(record.name, record.mechanism)] = record
            return []
        if isinstance(record, RemoveUserScramCredentialRecord):
            self.scram.pop((record.name, record.mechanism), None)
            return []
        raise ImageError(f"unknown metadata record {type(record).__name__}")

    def _apply_partition_change(self, record: PartitionChangeRecord) -> list[Change]:
        topic = self.topics_by_id.get(record.topic_id)
        if topic is None or record.partition_id not in topic.partitions:
            return []
        old = topic.partitions[record.partition_id]
        if isinstance(record, LegacyPartitionChangeRecord):
            bump = record.bump_leader_epoch or (
                record.leader is not None and record.leader != old.leader
            )
        else:
            bump = record.leader is not None
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
            leader_epoch=old.leader_epoch + 1 if bump else old.leader_epoch,
            partition_epoch=old.partition_epoch + 1,
            leader_recovery_state=old.leader_recovery_state
            if record.leader_recovery_state < 0
            else record.leader_recovery_state,
        )
        topic.partitions[record.partition_id] = new
        return [PartitionChanged(topic.name, new)]


def entry_record(acl_id: uuid.UUID, acl: AclBinding) -> AccessControlEntryRecord:
    return AccessControlEntryRecord(
        acl_id,
        int(acl.resource_type),
        acl.resource_name,
        int(acl.pattern_type),
        acl.principal,
        acl.host,
        int(acl.operation),
        int(acl.permission),
    )
