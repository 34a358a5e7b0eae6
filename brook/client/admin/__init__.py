"""The admin client: ``AsyncAdmin`` (asyncio), ``Admin`` (blocking) and their argument and
result types, re-exported here.

The package is split by domain, as Java's and aiokafka's admin clients are organised, and its
imports point one way only: ``types`` (the dataclasses and enums) at the bottom, ``core`` (the
network client, deadlines, retries, where a request goes) over it, the domain modules
(``topics``, ``configs``, ``partitions``, ``cluster``, ``groups``, ``transactions``: each
operation's request and response as functions over the core) over that, then ``async_admin``
(one method per operation) and ``sync_admin`` (the blocking facade). No module of the package
imports this one.
"""

from __future__ import annotations

from brook.protocol.errors import KafkaError as KafkaError

# Also importable from here, as from the single-module client before the split, though they
# belong to the metadata cache, the connection and the protocol (``X as X``: re-exported).
from ..cluster import BrokerNode as BrokerNode
from ..cluster import PartitionInfo as PartitionInfo
from ..cluster import TopicPartition as TopicPartition
from ..connection import NetworkError as NetworkError
from ..connection import RequestTimeoutError as RequestTimeoutError
from ..connection import UnsupportedVersionError as UnsupportedVersionError
from ..consumer.coordinator import OffsetAndMetadata
from .async_admin import AsyncAdmin
from .groups import CONSUMER_GROUP_STATES as CONSUMER_GROUP_STATES
from .groups import (
    ConsumerGroupDescription,
    GroupListing,
    MemberDescription,
)
from .sync_admin import Admin
from .transactions import (
    AbortTransactionSpec,
    ProducerState,
    TransactionDescription,
    TransactionListing,
)
from .types import SPEC_MIN_VERSION as SPEC_MIN_VERSION
from .types import (
    AdminError,
    AlterConfigOp,
    AlterConfigOpType,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    CreatedTopic,
    ElectionType,
    ListedOffset,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    PartitionReassignment,
    QuorumInfo,
    QuorumNode,
    RaftVoterEndpoint,
    ReplicaState,
    TopicDescription,
    TopicListing,
)

__all__ = [
    "AbortTransactionSpec",
    "Admin",
    "AdminError",
    "AlterConfigOp",
    "AlterConfigOpType",
    "AsyncAdmin",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConsumerGroupDescription",
    "CreatedTopic",
    "ElectionType",
    "GroupListing",
    "ListedOffset",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetSpec",
    "PartitionReassignment",
    "ProducerState",
    "QuorumInfo",
    "QuorumNode",
    "RaftVoterEndpoint",
    "ReplicaState",
    "TopicDescription",
    "TopicListing",
    "TransactionDescription",
    "TransactionListing",
]
