"""Brook's consumer: ``AsyncConsumer`` (asyncio) and ``Consumer`` (blocking facade).

    from brook import Consumer
    with Consumer({"bootstrap.servers": "127.0.0.1:9092"}) as consumer:
        consumer.assign([("events", 0)])
        consumer.seek_to_beginning()
        for record in consumer.poll(timeout_ms=1000):
            print(record.offset, record.key, record.value)

Modules, one concern each: ``subscription`` (what is read and from where), ``fetcher``
(Fetch rounds through KIP-227 sessions, KIP-951 hints, the record buffer),
``fetch_request`` (Fetch on the wire), ``partition_records`` (decoding one partition's
fetched bytes), ``offsets`` (ListOffsets: resets and lookups), ``coordinator`` (the
group-membership hook), ``membership`` (the group member's state machine),
``group_coordinator`` (its asyncio shell: rebalances, heartbeats, commits),
``consumer_protocol`` (subscription and assignment bytes), ``assignors/`` (range,
roundrobin, sticky, cooperative-sticky), ``async_consumer`` and ``consumer`` (the public
classes).

With a group.id, subscribe() joins the group through ``ConsumerGroupCoordinator``; another
implementation of ``coordinator.GroupCoordinator`` (its docstring is the contract) plugs in
with ``AsyncConsumer(config, coordinator_factory=factory)``. Without a group.id, subscribe(),
commit() and committed() raise GroupMembershipUnavailableError; assign() works either way.

Reading fixed offset ranges (the Spark source): one consumer per task, then

    async with AsyncConsumer({"bootstrap.servers": servers}) as c:
        async for records in c.read_range(("events", 3), start, end):
            columns = list(zip(*records))  # topic, partition, offset, timestamp, ... columns

Each chunk is a list of ConsumerRecord tuples exactly as decoded from one fetched run of
batches; records at or past ``end`` are cut off. A range that starts below the log start
offset, or loses its position to retention while being read, raises
OffsetOutOfRangeError (``offsets`` and ``log_start_offsets`` say where): failOnDataLoss
catches it and either fails or skips to ``log_start_offsets``.
"""

from .async_consumer import AsyncConsumer, OffsetAndTimestamp
from .consumer import Consumer
from .coordinator import CoordinatorContext, CoordinatorFactory, GroupCoordinator, OffsetAndMetadata
from .errors import (
    CommitFailedError,
    GroupMembershipUnavailableError,
    NoOffsetForPartitionError,
    OffsetOutOfRangeError,
    RebalanceInProgressError,
    RecordDeserializationError,
)
from .record import ConsumerRecord, TimestampType

__all__ = [
    "AsyncConsumer",
    "CommitFailedError",
    "Consumer",
    "ConsumerRecord",
    "CoordinatorContext",
    "CoordinatorFactory",
    "GroupCoordinator",
    "GroupMembershipUnavailableError",
    "NoOffsetForPartitionError",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "OffsetOutOfRangeError",
    "RebalanceInProgressError",
    "RecordDeserializationError",
    "TimestampType",
]
