"""Reading back what a producer wrote, with a real third-party consumer (confluent-kafka)."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Consumer, TopicPartition

from brook.client.admin import Admin, NewTopic


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1)])


def consume(
    bootstrap: str, topic: str, partitions: int, expected: int, timeout: float = 30.0
) -> list:
    """Every record of ``topic`` from offset 0, until ``expected`` arrived (or the timeout)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"readback-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out: list = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for msg in consumer.consume(1000, 0.5):
                assert msg.error() is None, msg.error()
                out.append(msg)
        # A little longer, to see duplicates or strays beyond what was expected.
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            for msg in consumer.consume(1000, 0.2):
                assert msg.error() is None, msg.error()
                out.append(msg)
    finally:
        consumer.close()
    return out
