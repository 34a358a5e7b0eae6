"""confluent-kafka (librdkafka) against Brook: Produce v10 / Fetch v16 with topic ids, every
codec, idempotence, acks 0/1/all, keys, headers and null values, assign consumers without
commits from the beginning, the end, an offset and a timestamp, and the admin API."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from support import BrookProcess


def _produce(bootstrap: str, topic: str, n: int, **config: object) -> list:
    producer = Producer({"bootstrap.servers": bootstrap, **config})
    reports: list = []
    for i in range(n):
        producer.produce(
            topic,
            value=f"v{i}".encode(),
            key=f"k{i}".encode(),
            headers=[("idx", str(i).encode())],
            on_delivery=lambda err, msg: reports.append((err, msg)),
        )
    assert producer.flush(30) == 0
    return reports


def _consume(bootstrap: str, tps: list[TopicPartition], n: int) -> list:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"g-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
        }
    )
    consumer.assign(tps)
    out: list = []
    deadline = time.monotonic() + 30
    while len(out) < n and time.monotonic() < deadline:
        for msg in consumer.consume(1000, 0.5):
            assert msg.error() is None, msg.error()
            out.append(msg)
    consumer.close()
    return out


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_idempotent_round_trip_per_codec(
    brook_session: BrookProcess, unique_topic: str, codec: str
) -> None:
    reports = _produce(
        brook_session.bootstrap,
        unique_topic,
        300,
        **{"compression.type": codec, "enable.idempotence": True, "linger.ms": 5},
    )
    assert all(err is None for err, _ in reports)
    assert sorted(m.offset() for _, m in reports) == list(range(300))
    msgs = _consume(brook_session.bootstrap, [TopicPartition(unique_topic, 0, 0)], 300)
    assert [(m.key(), m.value()) for m in msgs] == [
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(300)
    ]
    assert msgs[7].headers() == [("idx", b"7")]


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(brook_session: BrookProcess, unique_topic: str, acks: str) -> None:
    reports = _produce(brook_session.bootstrap, unique_topic, 100, acks=acks)
    assert all(err is None for err, _ in reports)
    msgs = _consume(brook_session.bootstrap, [TopicPartition(unique_topic, 0, 0)], 100)
    assert len(msgs) == 100


def test_consume_from_end_and_offset(brook_session: BrookProcess, unique_topic: str) -> None:
    b = brook_session.bootstrap
    _produce(b, unique_topic, 10)
    msgs = _consume(b, [TopicPartition(unique_topic, 0, 6)], 4)
    assert [m.offset() for m in msgs] == [6, 7, 8, 9]
    consumer = Consumer({"bootstrap.servers": b, "group.id": "x", "enable.auto.commit": False})
    low, high = consumer.get_watermark_offsets(TopicPartition(unique_topic, 0), timeout=10)
    assert (low, high) == (0, 10)
    consumer.close()


def test_null_values_beginning_end_and_timestamps(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    producer = Producer({"bootstrap.servers": b})
    base = int(time.time() * 1000) - 100_000
    for i in range(10):
        producer.produce(
            unique_topic,
            value=None if i == 3 else f"v{i}".encode(),
            key=f"k{i}".encode(),
            timestamp=base + i * 1000,
        )
    assert producer.flush(30) == 0
    msgs = _consume(b, [TopicPartition(unique_topic, 0, OFFSET_BEGINNING)], 10)
    assert [(m.key(), m.value()) for m in msgs[2:5]] == [
        (b"k2", b"v2"),
        (b"k3", None),
        (b"k4", b"v4"),
    ]
    assert [m.timestamp()[1] for m in msgs] == [base + i * 1000 for i in range(10)]
    consumer = Consumer(
        {"bootstrap.servers": b, "group.id": f"g-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    found = consumer.offsets_for_times([TopicPartition(unique_topic, 0, base + 6500)], 10)
    consumer.close()
    assert [tp.offset for tp in found] == [7]
    assert [m.value() for m in _consume(b, found, 3)] == [b"v7", b"v8", b"v9"]
    # from the end: only records written after the consumer found the end reach it
    consumer = Consumer(
        {"bootstrap.servers": b, "group.id": f"g-{uuid.uuid4().hex}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(unique_topic, 0, OFFSET_END)])
    first = None
    deadline = time.monotonic() + 30
    tick = 0
    while first is None and time.monotonic() < deadline:
        producer.produce(unique_topic, f"tick{tick}".encode())
        producer.flush(10)
        tick += 1
        msg = consumer.poll(0.3)
        if msg is not None:
            assert msg.error() is None, msg.error()
            first = msg
    consumer.close()
    assert first is not None and first.offset() >= 10 and first.value().startswith(b"tick")


def test_admin_api(brook_session: BrookProcess, unique_topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": brook_session.bootstrap})
    admin.create_topics([NewTopic(unique_topic, 2, 1, config={"retention.ms": "100000"})])[
        unique_topic
    ].result(10)
    bad = admin.create_topics([NewTopic(unique_topic, 2, 1)])[unique_topic]
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS"):
        bad.result(10)
    resource = ConfigResource("TOPIC", unique_topic)
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["retention.ms"].value == "100000"
    assert configs["segment.bytes"].value == "1073741824"
    alter = ConfigResource(
        "TOPIC",
        unique_topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "200000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin.incremental_alter_configs([alter])[alter].result(10)
    configs = admin.describe_configs([resource])[resource].result(10)
    assert configs["retention.ms"].value == "200000"
    admin.create_partitions([NewPartitions(unique_topic, 3)])[unique_topic].result(10)
    meta = admin.list_topics(unique_topic, timeout=10)
    assert len(meta.topics[unique_topic].partitions) == 3
    cluster = admin.describe_cluster().result(10)
    assert [n.port for n in cluster.nodes] == [brook_session.port]
    _produce(brook_session.bootstrap, unique_topic, 5)
    tps = [TopicPartition(unique_topic, p) for p in range(3)]
    latest = admin.list_offsets({tp: OffsetSpec.latest() for tp in tps})
    assert sum(f.result(10).offset for f in latest.values()) == 5
    earliest = admin.list_offsets({tp: OffsetSpec.earliest() for tp in tps})
    assert [f.result(10).offset for f in earliest.values()] == [0, 0, 0]
    admin.delete_topics([unique_topic])[unique_topic].result(10)
