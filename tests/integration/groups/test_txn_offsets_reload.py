"""A group whose only records in ``__consumer_offsets`` are offsets sent to a transaction
still open when the broker is killed: after the restart the group exists (as in Kafka), its
offsets are unstable until the transaction ends, and the transaction's commit applies them."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, Producer, TopicPartition
from rawclient import RawClient, create_topic
from support import BrookProcess

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors


def _fetch_offset(broker: BrookProcess, group: str, topic: str) -> tuple[int, int]:
    """(error, committed offset) of partition 0 from OffsetFetch v7 with require_stable."""
    with RawClient(broker.bootstrap) as c:
        resp = c.request(
            ApiKey.OFFSET_FETCH,
            7,
            {
                "group_id": group,
                "topics": [{"name": topic, "partition_indexes": [0]}],
                "require_stable": True,
            },
        )
    (part,) = resp.topics[0].partitions
    return int(part.error_code), int(part.committed_offset)


def test_a_group_with_only_open_transaction_offsets_survives_kill_9(
    own_groups_brook: BrookProcess,
) -> None:
    broker = own_groups_brook
    topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": f"app-{group}"})
    try:
        producer.init_transactions(30)
        producer.begin_transaction()
        # the group never joins: these offsets are its only records
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 7)], consumer.consumer_group_metadata(), 30
        )
        assert _fetch_offset(broker, group, topic) == (Errors.UNSTABLE_OFFSET_COMMIT, -1)
        broker.kill()
        broker.start()
        assert _fetch_offset(broker, group, topic) == (Errors.UNSTABLE_OFFSET_COMMIT, -1)
        producer.commit_transaction(60)
        deadline = time.monotonic() + 30
        while _fetch_offset(broker, group, topic) != (Errors.NONE, 7):
            assert time.monotonic() < deadline, _fetch_offset(broker, group, topic)
            time.sleep(0.05)
    finally:
        consumer.close()
