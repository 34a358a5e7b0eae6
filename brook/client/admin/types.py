"""Arguments and results of the admin client: small frozen dataclasses and Kafka's enums.

The bottom of the admin package: it imports nothing of the client but the metadata cache's
types, so tools, tests and the consumer (offset specs) use them without the admin client.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from brook.protocol.errors import KafkaError

from ..cluster import BrokerNode, PartitionInfo


class ConfigResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16


class ConfigSource(enum.IntEnum):
    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8

    @classmethod
    def of(cls, value: int) -> ConfigSource:
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


class AlterConfigOpType(enum.IntEnum):
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ElectionType(enum.IntEnum):
    PREFERRED = 0
    UNCLEAN = 1


class OffsetSpec(enum.IntEnum):
    """Special ListOffsets timestamps; any int >= 0 asks for the first offset at or after it."""

    LATEST = -1
    EARLIEST = -2
    MAX_TIMESTAMP = -3  # ListOffsets v7+
    EARLIEST_LOCAL = -4  # v8+
    LATEST_TIERED = -5  # v9+


# The ListOffsets version each special timestamp needs.
SPEC_MIN_VERSION = {-3: 7, -4: 8, -5: 9}


@dataclass(frozen=True, slots=True)
class NewTopic:
    """A topic to create; -1 partitions / replication factor = the broker's defaults."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    replica_assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CreatedTopic:
    name: str
    topic_id: uuid.UUID | None
    num_partitions: int  # -1 when the broker does not say (CreateTopics < v5)
    replication_factor: int
    configs: Mapping[str, str | None]


@dataclass(frozen=True, slots=True)
class TopicListing:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool


@dataclass(frozen=True, slots=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID | None
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]


@dataclass(frozen=True, slots=True)
class NewPartitions:
    """Grow a topic to ``total_count`` partitions, optionally placing the new ones."""

    total_count: int
    assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True, slots=True)
class ConfigResource:
    type: ConfigResourceType
    name: str

    @classmethod
    def topic(cls, name: str) -> ConfigResource:
        return cls(ConfigResourceType.TOPIC, name)

    @classmethod
    def broker(cls, node_id: int | str = "") -> ConfigResource:
        """A broker's configs; "" = the cluster-wide broker defaults."""
        return cls(ConfigResourceType.BROKER, str(node_id))


@dataclass(frozen=True, slots=True)
class ConfigSynonym:
    name: str
    value: str | None
    source: ConfigSource


@dataclass(frozen=True, slots=True)
class ConfigEntry:
    name: str
    value: str | None
    source: ConfigSource
    read_only: bool
    sensitive: bool
    synonyms: tuple[ConfigSynonym, ...] = ()
    type: int = 0  # Kafka's ConfigType (DescribeConfigs v3+), 0 = unknown
    documentation: str | None = None


@dataclass(frozen=True, slots=True)
class AlterConfigOp:
    name: str
    value: str | None = None
    op: AlterConfigOpType = AlterConfigOpType.SET


@dataclass(frozen=True, slots=True)
class ClusterDescription:
    cluster_id: str | None
    controller_id: int  # -1 when unknown
    brokers: tuple[BrokerNode, ...]


@dataclass(frozen=True, slots=True)
class ListedOffset:
    offset: int
    timestamp: int  # -1 when the broker gives none
    leader_epoch: int  # -1 when unknown (ListOffsets < v4)


@dataclass(frozen=True, slots=True)
class PartitionReassignment:
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...]
    removing_replicas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class RaftVoterEndpoint:
    """One listener of a quorum voter (DescribeQuorum v2's Nodes)."""

    listener: str
    host: str
    port: int

    def __str__(self) -> str:
        # Kafka's form: LISTENER://host:port, an IPv6 host in brackets.
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.listener}://{host}:{self.port}"


@dataclass(frozen=True, slots=True)
class QuorumNode:
    """A voter's endpoints (Java's QuorumInfo.Node); known from DescribeQuorum v2 on."""

    node_id: int
    endpoints: tuple[RaftVoterEndpoint, ...]


@dataclass(frozen=True, slots=True)
class ReplicaState:
    """One voter or observer of the metadata quorum as its leader sees it (Java's
    QuorumInfo.ReplicaState): timestamps are the leader's clock in ms, None when unknown."""

    replica_id: int
    replica_directory_id: uuid.UUID  # the zero UUID when the replica has none (before v2)
    log_end_offset: int
    last_fetch_timestamp: int | None = None
    last_caught_up_timestamp: int | None = None


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """The metadata quorum (Java's QuorumInfo): leader, epoch, high watermark, the voters and
    observers with their progress, and the voters' endpoints by node id (empty before v2)."""

    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaState, ...]
    observers: tuple[ReplicaState, ...]
    nodes: Mapping[int, QuorumNode] = field(default_factory=dict)


class AdminError(KafkaError):
    """Some items of an admin call failed; ``errors`` says which and why."""

    def __init__(self, errors: Mapping[Any, KafkaError], results: Mapping[Any, Any]) -> None:
        self.errors = dict(errors)
        self.results = dict(results)
        first = next(iter(self.errors.values()))
        if len(self.errors) == 1:
            message = first.message
        else:
            details = "; ".join(str(e) for e in self.errors.values())
            message = f"{len(self.errors)} items failed: {details}"
        super().__init__(first.code, message)
