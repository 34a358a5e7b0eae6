"""Brook's Kafka producer: the accumulator (batches built at send time), the sender (Produce
requests, retries, KIP-951 leader hints), idempotence, and the public AsyncProducer/Producer.

    batch.py         one partition's batch: record encoding, size estimates, the v2 header
    buffer_pool.py   buffer.memory accounting and blocking
    accumulator.py   per-partition deques; append (KIP-794), ready, drain, expiry
    idempotence.py   producer id/epoch, sequences, recovery (Java's TransactionManager)
    transactions.py  the transactional producer's state machine (Java's TransactionManager)
    txn_sender.py    the asyncio task sending its requests
    sender.py        the asyncio sender task
    producer_metrics.py  Kafka's producer metric names
    record.py        RecordMetadata, per-batch results, per-record futures
    producer.py      AsyncProducer and Producer
"""

from .errors import (
    AbortableTransactionError,
    BufferExhaustedError,
    FatalTransactionError,
    KafkaTimeoutError,
    ProducerClosedError,
    ProducerFencedError,
    RecordNotAppendedError,
    RecordTooLargeError,
    TransactionAbortedError,
    TransactionError,
    TransactionStateError,
)
from .producer import AsyncProducer, Producer
from .record import RecordFuture, RecordMetadata
from .transactions import ConsumerGroupMetadata

__all__ = [
    "AbortableTransactionError",
    "AsyncProducer",
    "BufferExhaustedError",
    "ConsumerGroupMetadata",
    "FatalTransactionError",
    "KafkaTimeoutError",
    "Producer",
    "ProducerClosedError",
    "ProducerFencedError",
    "RecordFuture",
    "RecordMetadata",
    "RecordNotAppendedError",
    "RecordTooLargeError",
    "TransactionAbortedError",
    "TransactionError",
    "TransactionStateError",
]
