"""Clients keep working across a broker restart in the middle of their work."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KTopicPartition
from support import BrookProcess


def test_confluent_and_kafka_python_across_restarts(tmp_path: Path, unique_topic: str) -> None:
    with BrookProcess(tmp_path / "d", {"log.flush.interval.messages": "1"}) as broker:
        b = broker.bootstrap
        producer = Producer(
            {"bootstrap.servers": b, "enable.idempotence": True, "message.timeout.ms": 60000}
        )
        for i in range(100):
            producer.produce(unique_topic, f"a{i}".encode())
        assert producer.flush(30) == 0
        broker.restart(clean=False)  # kill -9 while the producer is still open
        for i in range(100):
            producer.produce(unique_topic, f"b{i}".encode())
        assert producer.flush(60) == 0
        kp = KafkaProducer(bootstrap_servers=b)
        broker.restart(clean=True)
        for i in range(50):
            kp.send(unique_topic, f"c{i}".encode())
        kp.flush(timeout=60)
        kp.close()
        consumer = Consumer(
            {"bootstrap.servers": b, "group.id": uuid.uuid4().hex, "enable.auto.commit": False}
        )
        consumer.assign([TopicPartition(unique_topic, 0, 0)])
        values = []
        deadline = time.monotonic() + 30
        while len(values) < 250 and time.monotonic() < deadline:
            values += [m.value() for m in consumer.consume(500, 0.5) if m.error() is None]
        consumer.close()
        expected = [
            f"{p}{i}".encode() for p, n in (("a", 100), ("b", 100), ("c", 50)) for i in range(n)
        ]
        assert values == expected  # idempotence: no duplicates from the retries
        kc = KafkaConsumer(bootstrap_servers=b, enable_auto_commit=False)
        tp = KTopicPartition(unique_topic, 0)
        assert kc.end_offsets([tp]) == {tp: 250}
        kc.close()
