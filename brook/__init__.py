"""Brook: a Kafka-compatible event-streaming platform in Python.

The client is importable from the top level, as confluent-kafka and kafka-python offer theirs:
the clients (``Producer``, ``Consumer``, ``Admin`` and their asyncio twins), the admin types
(``NewTopic``, ``NewPartitions``, ``ConfigResource``, ``AlterConfigOp``, ``OffsetSpec``, ...),
``TopicPartition``, ``OffsetAndMetadata``, the record types and ``KafkaError``.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# Where each top-level name lives. They load on first use, so importing brook (the broker,
# the tools) does not pull in the client.
_EXPORTS = {
    **dict.fromkeys(
        (
            "Admin",
            "AsyncAdmin",
            "AsyncConsumer",
            "AsyncProducer",
            "Consumer",
            "ConsumerGroupMetadata",
            "ConsumerRecord",
            "NetworkError",
            "Producer",
            "RecordFuture",
            "RecordMetadata",
            "TopicPartition",
        ),
        "brook.client",
    ),
    **dict.fromkeys(
        (
            "AbortTransactionSpec",
            "AdminError",
            "AlterConfigOp",
            "AlterConfigOpType",
            "ClusterDescription",
            "ConfigEntry",
            "ConfigResource",
            "ConfigResourceType",
            "ConfigSource",
            "ConsumerGroupDescription",
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
            "TopicDescription",
            "TopicListing",
            "TransactionDescription",
            "TransactionListing",
        ),
        "brook.client.admin",
    ),
    "KafkaError": "brook.protocol.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> object:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'brook' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
