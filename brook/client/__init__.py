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
    AbortableTransactionError,
    AsyncProducer,
    BufferExhaustedError,
    ConsumerGroupMetadata,
    FatalTransactionError,
    KafkaTimeoutError,
    Producer,
    ProducerClosedError,
    ProducerFencedError,
    RecordFuture,
    RecordMetadata,
    RecordTooLargeError,
    TransactionAbortedError,
    TransactionError,
    TransactionStateError,
)

__all__ = [
    "AbortableTransactionError",
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
    "ConsumerGroupMetadata",
    "ConsumerRecord",
    "FatalTransactionError",
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
    "ProducerFencedError",
    "ProtocolError",
    "RecordFuture",
    "RecordMetadata",
    "RecordTooLargeError",
    "RequestTimeoutError",
    "TopicInfo",
    "TopicPartition",
    "TransactionAbortedError",
    "TransactionError",
    "TransactionStateError",
    "UnsupportedVersionError",
]
