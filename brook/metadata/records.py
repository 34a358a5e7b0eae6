"""The records of the cluster metadata log, and their encoding as record values.

The metadata log is an ordinary partition (``__cluster_metadata-0``) of RecordBatch v2 batches;
each record's value is one metadata record as UTF-8 JSON ``{"type": ..., "data": {...}}``.
JSON keeps the log readable with ``brook dump-log`` style tools and the volume is small; the
record set mirrors KRaft's (TopicRecord, PartitionRecord, PartitionChangeRecord, ConfigRecord,
RegisterBrokerRecord, ...), so replicating the log later changes nothing here.
"""

from __future__ import annotations

import dataclasses
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, ClassVar

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's fixed id for the metadata topic


class ConfigResourceType:
    TOPIC = 2
    BROKER = 4


@dataclass(frozen=True)
class MetadataRecord:
    TYPE: ClassVar[str] = ""


@dataclass(frozen=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True)
class RegisterBrokerRecord(MetadataRecord):
    TYPE: ClassVar[str] = "RegisterBroker"
    broker_id: int
    incarnation_id: str
    broker_epoch: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    fenced: bool = False


@dataclass(frozen=True)
class BrokerRegistrationChangeRecord(MetadataRecord):
    TYPE: ClassVar[str] = "BrokerRegistrationChange"
    broker_id: int
    broker_epoch: int
    fenced: bool | None = None


@dataclass(frozen=True)
class UnregisterBrokerRecord(MetadataRecord):
    TYPE: ClassVar[str] = "UnregisterBroker"
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class TopicRecord(MetadataRecord):
    TYPE: ClassVar[str] = "Topic"
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True)
class PartitionRecord(MetadataRecord):
    TYPE: ClassVar[str] = "Partition"
    topic_id: uuid.UUID
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()


@dataclass(frozen=True)
class PartitionChangeRecord(MetadataRecord):
    """A change to one partition; None fields are unchanged. A new leader bumps the leader
    epoch; every change bumps the partition epoch (as KRaft does)."""

    TYPE: ClassVar[str] = "PartitionChange"
    topic_id: uuid.UUID
    partition_id: int
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    bump_leader_epoch: bool = False


@dataclass(frozen=True)
class RemoveTopicRecord(MetadataRecord):
    TYPE: ClassVar[str] = "RemoveTopic"
    topic_id: uuid.UUID


@dataclass(frozen=True)
class ConfigRecord(MetadataRecord):
    """Set (value) or delete (value None) one config of a topic or broker resource."""

    TYPE: ClassVar[str] = "Config"
    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True)
class ProducerIdsRecord(MetadataRecord):
    """The next producer id block start after an allocation."""

    TYPE: ClassVar[str] = "ProducerIds"
    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True)
class ClusterIdRecord(MetadataRecord):
    """Brook-specific: the cluster id, written once when the metadata log is created."""

    TYPE: ClassVar[str] = "ClusterId"
    cluster_id: str


@dataclass(frozen=True)
class NoOpRecord(MetadataRecord):
    TYPE: ClassVar[str] = "NoOp"
    note: str = field(default="")


RECORD_TYPES: dict[str, type[MetadataRecord]] = {
    cls.TYPE: cls
    for cls in (
        RegisterBrokerRecord,
        BrokerRegistrationChangeRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        PartitionChangeRecord,
        RemoveTopicRecord,
        ConfigRecord,
        ProducerIdsRecord,
        ClusterIdRecord,
        NoOpRecord,
    )
}


def _to_json(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, tuple):
        return [_to_json(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _to_json(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def encode(record: MetadataRecord) -> bytes:
    payload = {"type": record.TYPE, "data": _to_json(record)}
    return json.dumps(payload, separators=(",", ":")).encode()


def _field_value(tp: Any, raw: Any) -> Any:
    if raw is None:
        return None
    text = str(tp)
    if "UUID" in text:
        return uuid.UUID(raw)
    if "Endpoint" in text:
        return tuple(Endpoint(**e) for e in raw)
    if text.startswith("tuple") or "tuple[" in text:
        return tuple(raw)
    return raw


def decode(data: bytes) -> MetadataRecord:
    payload = json.loads(data)
    cls = RECORD_TYPES[payload["type"]]
    raw = payload["data"]
    kwargs = {
        f.name: _field_value(f.type, raw[f.name]) for f in dataclasses.fields(cls) if f.name in raw
    }
    return cls(**kwargs)
