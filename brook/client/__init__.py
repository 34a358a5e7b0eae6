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
from .metrics import MetricName, Metrics
from .network import NetworkClient
from .producer import (
    AsyncProducer,
    BufferExhaustedError,
    KafkaTimeoutError,
    Producer,
    ProducerClosedError,
    RecordFuture,
    RecordMetadata,
    RecordTooLargeError,
)

__all__ = [
    "Admin",
    "AdminError",
    "AsyncAdmin",
    "AsyncConsumer",
    "AsyncProducer",
    "BrokerConnection",
    "BrokerNode",
    "BufferExhaustedError",
    "ClusterMetadata",
    "Consumer",
    "ConsumerRecord",
    "GroupMembershipUnavailableError",
    "KafkaTimeoutError",
    "MetricName",
    "Metrics",
    "NetworkClient",
    "NetworkError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetOutOfRangeError",
    "PartitionInfo",
    "Producer",
    "ProducerClosedError",
    "ProtocolError",
    "RecordFuture",
    "RecordMetadata",
    "RecordTooLargeError",
    "RequestTimeoutError",
    "TopicInfo",
    "TopicPartition",
    "UnsupportedVersionError",
]
