"""Brook's Kafka client: producer, consumer and admin on one asyncio core.

The shared foundation: connection (one broker), cluster (metadata cache), network (all brokers).
"""

from .admin import Admin, AdminError, AsyncAdmin
from .cluster import BrokerNode, ClusterMetadata, PartitionInfo, TopicInfo, TopicPartition
from .connection import (
    BrokerConnection,
    NetworkError,
    ProtocolError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from .consumer import (
    AsyncConsumer,
    Consumer,
    ConsumerRecord,
    GroupMembershipUnavailableError,
    NoOffsetForPartitionError,
    OffsetAndMetadata,
    OffsetOutOfRangeError,
)
from .network import NetworkClient

__all__ = [
    "Admin",
    "AdminError",
    "AsyncAdmin",
    "AsyncConsumer",
    "BrokerConnection",
    "BrokerNode",
    "ClusterMetadata",
    "Consumer",
    "ConsumerRecord",
    "GroupMembershipUnavailableError",
    "NetworkClient",
    "NetworkError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetOutOfRangeError",
    "PartitionInfo",
    "ProtocolError",
    "RequestTimeoutError",
    "TopicInfo",
    "TopicPartition",
    "UnsupportedVersionError",
]
