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
from .network import NetworkClient

__all__ = [
    "Admin",
    "AdminError",
    "AsyncAdmin",
    "BrokerConnection",
    "BrokerNode",
    "ClusterMetadata",
    "NetworkClient",
    "NetworkError",
    "PartitionInfo",
    "ProtocolError",
    "RequestTimeoutError",
    "TopicInfo",
    "TopicPartition",
    "UnsupportedVersionError",
]
