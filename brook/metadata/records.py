"""The records of the cluster metadata log and their encoding.

The metadata log is an ordinary partition (``__cluster_metadata-0``) of RecordBatch v2 batches.
Each record's value is one metadata record framed as Kafka frames it: frame version 1, the
record's api key and version (unsigned varints), then its fields (``codec.py``). The record set
and api keys are KRaft's (RegisterBrokerRecord 0, TopicRecord 2, PartitionRecord 3,
ConfigRecord 4, PartitionChangeRecord 5, ...); each class declares its wire schema, so a field
added in a later version is read from old logs with its default.

Metadata logs written by Brook before this framing hold JSON values (``{"type":..,"data":..}``);
``decode`` still reads them (a value starting with ``{``), so an old data directory starts.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from brook.protocol.primitives import read_uvarint, uvarint

from .codec import (
    BOOL,
    BYTES,
    INT8,
    INT16,
    INT32,
    INT64,
    NULLABLE_STRING,
    STRING,
    UINT16,
    UUID,
    Field,
    RecordFormatError,
    array,
    decode_fields,
    encode_fields,
    mapped,
    nullable_array,
    struct_of,
)

METADATA_TOPIC = "__cluster_metadata"
METADATA_TOPIC_ID = uuid.UUID(int=1)  # Kafka's fixed id for the metadata topic
FRAME_VERSION = 1
NO_LEADER = -1
NO_LEADER_CHANGE = -2

__all__ = [
    "METADATA_TOPIC",
    "METADATA_TOPIC_ID",
    "NO_LEADER",
    "RECORD_TYPES",
    "AccessControlEntryRecord",
    "BrokerFeature",
    "BrokerRegistrationChangeRecord",
    "ClusterIdRecord",
    "ConfigRecord",
    "ConfigResourceType",
    "Endpoint",
    "FeatureLevelRecord",
    "LegacyPartitionChangeRecord",
    "MetadataRecord",
    "NoOpRecord",
    "PartitionChangeRecord",
    "PartitionRecord",
    "ProducerIdsRecord",
    "RecordFormatError",
    "RegisterBrokerRecord",
    "RemoveAccessControlEntryRecord",
    "RemoveTopicRecord",
    "RemoveUserScramCredentialRecord",
    "TopicRecord",
    "UnregisterBrokerRecord",
    "UserScramCredentialRecord",
    "decode",
    "encode",
]


class ConfigResourceType:
    TOPIC = 2
    BROKER = 4


SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
_PROTOCOL_NAMES = {v: k for k, v in SECURITY_PROTOCOLS.items()}


@dataclass(frozen=True)
class MetadataRecord:
    API_KEY: ClassVar[int] = -1
    VERSION: ClassVar[int] = 0
    SCHEMA: ClassVar[tuple[Field, ...]] = ()


@dataclass(frozen=True)
class Endpoint:
    name: str
    host: str
    port: int
    security_protocol: str = "PLAINTEXT"


@dataclass(frozen=True)
class BrokerFeature:
    name: str
    min_version: int
    max_version: int


_ENDPOINT = struct_of(
    Endpoint,
    (
        Field("name", STRING),
        Field("host", STRING),
        Field("port", UINT16),
        Field(
            "security_protocol",
            mapped(INT16, SECURITY_PROTOCOLS.__getitem__, _PROTOCOL_NAMES.__getitem__),
        ),
    ),
)
_FEATURE = struct_of(
    BrokerFeature,
    (Field("name", STRING), Field("min_version", INT16), Field("max_version", INT16)),
)
_INT32S = array(INT32)
_NULLABLE_INT32S = nullable_array(INT32)

# A tri-state change flag as KRaft stores it in an int8: 0 no change, 1 set, -1 cleared.
_FLAG = mapped(
    INT8,
    lambda v: 0 if v is None else (1 if v else -1),
    lambda raw: None if raw == 0 else raw > 0,
)
# PartitionChangeRecord.Leader: -2 (NO_LEADER_CHANGE) is None in memory.
_LEADER_CHANGE = mapped(
    INT32,
    lambda v: NO_LEADER_CHANGE if v is None else v,
    lambda raw: None if raw == NO_LEADER_CHANGE else raw,
)


@dataclass(frozen=True)
class RegisterBrokerRecord(MetadataRecord):
    """A broker's registration; its broker epoch is the offset of this record."""

    API_KEY: ClassVar[int] = 0
    VERSION: ClassVar[int] = 1
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("broker_id", INT32),
        Field("incarnation_id", UUID),
        Field("broker_epoch", INT64),
        Field("endpoints", array(_ENDPOINT)),
        Field("features", array(_FEATURE)),
        Field("rack", NULLABLE_STRING),
        Field("fenced", BOOL),
        Field("in_controlled_shutdown", BOOL, since=1, default=False),
    )
    broker_id: int
    incarnation_id: uuid.UUID
    broker_epoch: int
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    fenced: bool = True
    in_controlled_shutdown: bool = False
    features: tuple[BrokerFeature, ...] = ()


@dataclass(frozen=True)
class UnregisterBrokerRecord(MetadataRecord):
    API_KEY: ClassVar[int] = 1
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("broker_id", INT32), Field("broker_epoch", INT64))
    broker_id: int
    broker_epoch: int


@dataclass(frozen=True)
class TopicRecord(MetadataRecord):
    API_KEY: ClassVar[int] = 2
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("name", STRING), Field("topic_id", UUID))
    name: str
    topic_id: uuid.UUID


@dataclass(frozen=True)
class PartitionRecord(MetadataRecord):
    API_KEY: ClassVar[int] = 3
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_id", INT32),
        Field("topic_id", UUID),
        Field("replicas", _INT32S),
        Field("isr", _INT32S),
        Field("removing_replicas", _INT32S),
        Field("adding_replicas", _INT32S),
        Field("leader", INT32),
        Field("leader_epoch", INT32),
        Field("partition_epoch", INT32),
        Field("leader_recovery_state", INT8, tag=0, default=0),
    )
    topic_id: uuid.UUID
    partition_id: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    leader_epoch: int = 0
    partition_epoch: int = 0
    removing_replicas: tuple[int, ...] = ()
    adding_replicas: tuple[int, ...] = ()
    leader_recovery_state: int = 0  # 0 RECOVERED, 1 RECOVERING (after an unclean election)


@dataclass(frozen=True)
class ConfigRecord(MetadataRecord):
    """Set (value) or delete (value None) one config of a topic or broker resource."""

    API_KEY: ClassVar[int] = 4
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("name", STRING),
        Field("value", NULLABLE_STRING),
    )
    resource_type: int
    resource_name: str
    name: str
    value: str | None


@dataclass(frozen=True)
class PartitionChangeRecord(MetadataRecord):
    """A change to one partition; None fields are unchanged. As in KRaft, a record that names
    a leader (even the same one) bumps the leader epoch; every change bumps the partition
    epoch."""

    API_KEY: ClassVar[int] = 5
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("partition_id", INT32),
        Field("topic_id", UUID),
        Field("isr", _NULLABLE_INT32S, tag=0),
        Field("leader", _LEADER_CHANGE, tag=1),
        Field("replicas", _NULLABLE_INT32S, tag=2),
        Field("removing_replicas", _NULLABLE_INT32S, tag=3),
        Field("adding_replicas", _NULLABLE_INT32S, tag=4),
        Field("leader_recovery_state", INT8, tag=5, default=-1),
    )
    topic_id: uuid.UUID
    partition_id: int
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    replicas: tuple[int, ...] | None = None
    removing_replicas: tuple[int, ...] | None = None
    adding_replicas: tuple[int, ...] | None = None
    leader_recovery_state: int = -1  # -1: unchanged


@dataclass(frozen=True)
class LegacyPartitionChangeRecord(PartitionChangeRecord):
    """A PartitionChangeRecord from a JSON metadata log: there the leader epoch moved only
    when the leader changed or ``bump_leader_epoch`` was set."""

    bump_leader_epoch: bool = False


@dataclass(frozen=True)
class AccessControlEntryRecord(MetadataRecord):
    """One ACL (``brook.security.acl`` codes), named by a random uuid so that DeleteAcls can
    remove exactly it."""

    API_KEY: ClassVar[int] = 6
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("id", UUID),
        Field("resource_type", INT8),
        Field("resource_name", STRING),
        Field("pattern_type", INT8),
        Field("principal", STRING),
        Field("host", STRING),
        Field("operation", INT8),
        Field("permission_type", INT8),
    )
    id: uuid.UUID
    resource_type: int
    resource_name: str
    pattern_type: int
    principal: str
    host: str
    operation: int
    permission_type: int


@dataclass(frozen=True)
class RemoveAccessControlEntryRecord(MetadataRecord):
    API_KEY: ClassVar[int] = 7
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("id", UUID),)
    id: uuid.UUID


@dataclass(frozen=True)
class FeatureLevelRecord(MetadataRecord):
    API_KEY: ClassVar[int] = 12
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("name", STRING), Field("feature_level", INT16))
    name: str
    feature_level: int


@dataclass(frozen=True)
class RemoveTopicRecord(MetadataRecord):
    API_KEY: ClassVar[int] = 9
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("topic_id", UUID),)
    topic_id: uuid.UUID


@dataclass(frozen=True)
class ProducerIdsRecord(MetadataRecord):
    """The next producer id block start after an allocation."""

    API_KEY: ClassVar[int] = 15
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("broker_id", INT32),
        Field("broker_epoch", INT64),
        Field("next_producer_id", INT64),
    )
    broker_id: int
    broker_epoch: int
    next_producer_id: int


@dataclass(frozen=True)
class BrokerRegistrationChangeRecord(MetadataRecord):
    """Fence (fenced True), unfence (False) or mark a broker in controlled shutdown; None
    leaves a flag unchanged."""

    API_KEY: ClassVar[int] = 17
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("broker_id", INT32),
        Field("broker_epoch", INT64),
        Field("fenced", _FLAG, tag=0),
        Field("in_controlled_shutdown", _FLAG, tag=1),
    )
    broker_id: int
    broker_epoch: int
    fenced: bool | None = None
    in_controlled_shutdown: bool | None = None


@dataclass(frozen=True)
class UserScramCredentialRecord(MetadataRecord):
    """A user's SCRAM credential for one mechanism (1 SCRAM-SHA-256, 2 SCRAM-SHA-512): the
    salt, the stored and server keys, and the iterations; never the password."""

    API_KEY: ClassVar[int] = 11
    SCHEMA: ClassVar[tuple[Field, ...]] = (
        Field("name", STRING),
        Field("mechanism", INT8),
        Field("salt", BYTES),
        Field("stored_key", BYTES),
        Field("server_key", BYTES),
        Field("iterations", INT32),
    )
    name: str
    mechanism: int
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


@dataclass(frozen=True)
class RemoveUserScramCredentialRecord(MetadataRecord):
    API_KEY: ClassVar[int] = 22
    SCHEMA: ClassVar[tuple[Field, ...]] = (Field("name", STRING), Field("mechanism", INT8))
    name: str
    mechanism: int


@dataclass(frozen=True)
class NoOpRecord(MetadataRecord):
    """Written by an idle active controller so that followers see the high watermark move."""

    API_KEY: ClassVar[int] = 20


@dataclass(frozen=True)
class ClusterIdRecord(MetadataRecord):
    """The cluster id, as metadata logs written before ``brook storage format`` carried it.
    Read from old logs only; the cluster id now lives in ``meta.properties``."""

    cluster_id: str


RECORD_TYPES: dict[int, type[MetadataRecord]] = {
    cls.API_KEY: cls
    for cls in (
        RegisterBrokerRecord,
        UnregisterBrokerRecord,
        TopicRecord,
        PartitionRecord,
        ConfigRecord,
        PartitionChangeRecord,
        AccessControlEntryRecord,
        RemoveAccessControlEntryRecord,
        RemoveTopicRecord,
        FeatureLevelRecord,
        ProducerIdsRecord,
        BrokerRegistrationChangeRecord,
        NoOpRecord,
        UserScramCredentialRecord,
        RemoveUserScramCredentialRecord,
    )
}


def encode(record: MetadataRecord) -> bytes:
    cls = type(record)
    if cls.API_KEY < 0 or RECORD_TYPES.get(cls.API_KEY) is not cls:
        raise TypeError(f"{cls.__name__} is not written to the metadata log")
    out = bytearray(uvarint(FRAME_VERSION))
    out += uvarint(cls.API_KEY)
    out += uvarint(cls.VERSION)
    encode_fields(out, record, cls.SCHEMA, cls.VERSION)
    return bytes(out)


def decode(data: bytes | memoryview) -> MetadataRecord:
    """One record value; RecordFormatError if it is not one this node can read."""
    view = memoryview(data)
    if view[:1] == b"{":
        return _decode_legacy(bytes(view))
    try:
        frame, pos = read_uvarint(view, 0)
        api_key, pos = read_uvarint(view, pos)
        version, pos = read_uvarint(view, pos)
    except ValueError as exc:
        raise RecordFormatError(str(exc)) from None
    if frame != FRAME_VERSION:
        raise RecordFormatError(f"unknown metadata record frame version {frame}")
    cls = RECORD_TYPES.get(api_key)
    if cls is None:
        raise RecordFormatError(f"unknown metadata record api key {api_key}")
    if version > cls.VERSION:
        raise RecordFormatError(
            f"{cls.__name__} version {version} is newer than this node reads ({cls.VERSION})"
        )
    values, end = decode_fields(view, pos, cls.SCHEMA, version)
    if end != len(view):
        raise RecordFormatError(f"{len(view) - end} bytes after a {cls.__name__}")
    return cls(**values)


# ---------------------------------------------------------------------- the JSON of old logs


def _uuid(raw: Any) -> uuid.UUID:
    return uuid.UUID(raw)


def _ints(raw: Any) -> tuple[int, ...] | None:
    return None if raw is None else tuple(int(v) for v in raw)


def _legacy_register(d: Mapping[str, Any]) -> MetadataRecord:
    incarnation = d["incarnation_id"]
    return RegisterBrokerRecord(
        int(d["broker_id"]),
        uuid.UUID(hex=incarnation)
        if len(incarnation) == 32
        else uuid.uuid5(uuid.NAMESPACE_OID, incarnation),
        int(d["broker_epoch"]),
        tuple(Endpoint(**e) for e in d["endpoints"]),
        d.get("rack"),
        bool(d.get("fenced", False)),
    )


def _legacy_partition(d: Mapping[str, Any]) -> MetadataRecord:
    return PartitionRecord(
        _uuid(d["topic_id"]),
        int(d["partition_id"]),
        _ints(d["replicas"]) or (),
        _ints(d["isr"]) or (),
        int(d["leader"]),
        int(d.get("leader_epoch", 0)),
        int(d.get("partition_epoch", 0)),
        _ints(d.get("removing_replicas")) or (),
        _ints(d.get("adding_replicas")) or (),
    )


def _legacy_partition_change(d: Mapping[str, Any]) -> MetadataRecord:
    return LegacyPartitionChangeRecord(
        _uuid(d["topic_id"]),
        int(d["partition_id"]),
        leader=d.get("leader"),
        isr=_ints(d.get("isr")),
        replicas=_ints(d.get("replicas")),
        removing_replicas=_ints(d.get("removing_replicas")),
        adding_replicas=_ints(d.get("adding_replicas")),
        bump_leader_epoch=bool(d.get("bump_leader_epoch", False)),
    )


_LEGACY = {
    "RegisterBroker": _legacy_register,
    "BrokerRegistrationChange": lambda d: BrokerRegistrationChangeRecord(
        int(d["broker_id"]), int(d["broker_epoch"]), d.get("fenced")
    ),
    "UnregisterBroker": lambda d: UnregisterBrokerRecord(
        int(d["broker_id"]), int(d["broker_epoch"])
    ),
    "Topic": lambda d: TopicRecord(d["name"], _uuid(d["topic_id"])),
    "Partition": _legacy_partition,
    "PartitionChange": _legacy_partition_change,
    "RemoveTopic": lambda d: RemoveTopicRecord(_uuid(d["topic_id"])),
    "Config": lambda d: ConfigRecord(
        int(d["resource_type"]), d["resource_name"], d["name"], d["value"]
    ),
    "ProducerIds": lambda d: ProducerIdsRecord(
        int(d["broker_id"]), int(d["broker_epoch"]), int(d["next_producer_id"])
    ),
    "ClusterId": lambda d: ClusterIdRecord(d["cluster_id"]),
    "NoOp": lambda d: NoOpRecord(),
}


def _decode_legacy(data: bytes) -> MetadataRecord:
    try:
        payload = json.loads(data)
        return _LEGACY[payload["type"]](payload["data"])
    except (ValueError, KeyError, TypeError) as exc:
        raise RecordFormatError(f"unreadable JSON metadata record: {exc!r}") from None
