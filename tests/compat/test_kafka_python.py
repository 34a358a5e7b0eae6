"""kafka-python 3 against Brook at its default settings: the idempotent producer, every codec,
keys/headers/null values, assign + seek consumers, timestamps, fetch sessions, admin."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from support import BrookProcess


def _consume(bootstrap: str, tps: list[TopicPartition], count: int,
             seek: dict[TopicPartition, int] | None = None, **config: object) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **config)
    consumer.assign(tps)
    if seek is None:
        consumer.seek_to_beginning(*tps)
    else:
        for tp, offset in seek.items():
            consumer.seek(tp, offset)
    out: list = []
    deadline = time.monotonic() + 30
    while len(out) < count and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            out.extend(records)
    consumer.close()
    return out


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
def test_idempotent_round_trip_per_codec(brook_session: BrookProcess, unique_topic: str,
                                         codec: str | None) -> None:
    producer = KafkaProducer(bootstrap_servers=brook_session.bootstrap, compression_type=codec)
    assert producer.config["enable_idempotence"] is True  # kafka-python 3's default
    futures = [producer.send(unique_topic, key=f"k{i}".encode(), value=f"v{i}".encode(),
                             headers=[("h", str(i).encode())]) for i in range(200)]
    futures.append(producer.send(unique_topic, key=b"tombstone", value=None))
    producer.flush()
    offsets = [f.get(timeout=10).offset for f in futures]
    assert offsets == list(range(201))
    producer.close()
    records = _consume(brook_session.bootstrap, [TopicPartition(unique_topic, 0)], 201)
    assert [(r.key, r.value) for r in records[:200]] == [
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(200)]
    assert [r.headers for r in records[:3]] == [[("h", b"0")], [("h", b"1")], [("h", b"2")]]
    assert (records[200].key, records[200].value) == (b"tombstone", None)


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_acks(brook_session: BrookProcess, unique_topic: str, acks: object) -> None:
    producer = KafkaProducer(bootstrap_servers=brook_session.bootstrap, acks=acks,
                             enable_idempotence=acks == "all")
    for i in range(50):
        producer.send(unique_topic, str(i).encode())
    producer.flush()
    producer.close()
    records = _consume(brook_session.bootstrap, [TopicPartition(unique_topic, 0)], 50)
    assert [r.value for r in records] == [str(i).encode() for i in range(50)]


def test_seek_offsets_timestamps_and_sessions(brook_session: BrookProcess,
                                              unique_topic: str) -> None:
    b = brook_session.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=b)
    admin.create_topics([NewTopic(unique_topic, 3, 1)])
    producer = KafkaProducer(bootstrap_servers=b)
    base = int(time.time() * 1000) - 100_000
    for i in range(30):
        producer.send(unique_topic, str(i).encode(), partition=i % 3, timestamp_ms=base + i * 1000)
    producer.flush()
    producer.close()
    tps = [TopicPartition(unique_topic, p) for p in range(3)]
    consumer = KafkaConsumer(bootstrap_servers=b, enable_auto_commit=False)
    assert consumer.beginning_offsets(tps) == {tp: 0 for tp in tps}
    assert consumer.end_offsets(tps) == {tp: 10 for tp in tps}
    found = consumer.offsets_for_times({tp: base + 15_000 for tp in tps})
    # partition p holds i = p, p+3, ...; the first i >= 15 in each
    assert {tp.partition: found[tp].offset for tp in tps} == {0: 5, 1: 5, 2: 5}
    assert consumer.offsets_for_times({tps[0]: base + 10**9})[tps[0]] is None
    consumer.close()
    records = _consume(b, tps, 3 * 7, seek={tp: 3 for tp in tps})
    assert sorted(int(r.value) for r in records) == sorted(i for i in range(30) if i // 3 >= 3)
    # kafka-python asks for a fetch session; the broker must grant one and stay consistent
    consumer = KafkaConsumer(bootstrap_servers=b, enable_auto_commit=False)
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 30 and time.monotonic() < deadline:
        seen += sum(len(v) for v in consumer.poll(timeout_ms=300).values())
    for _ in range(5):  # idle incremental fetches
        consumer.poll(timeout_ms=200)
    handlers = consumer._fetcher._session_handlers
    assert handlers and all(h.next_metadata.session_id != 0 for h in handlers.values())
    assert all(h.next_metadata.epoch > 1 for h in handlers.values())
    consumer.close()
    assert seen == 30


def test_admin_calls(brook_session: BrookProcess, unique_topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=brook_session.bootstrap)
    admin.create_topics([NewTopic(unique_topic, 2, 1, topic_configs={"retention.ms": "3600000"})])
    assert unique_topic in admin.list_topics()
    resource = ConfigResource(ConfigResourceType.TOPIC, unique_topic)
    modified = admin.describe_configs([resource])["topic"][unique_topic]
    assert list(modified) == ["retention.ms"]
    assert modified["retention.ms"]["value"] == "3600000"
    assert modified["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    everything = admin.describe_configs([resource], include_synonyms=True,
                                        config_filter="all")["topic"][unique_topic]
    assert everything["cleanup.policy"]["value"] == "delete"
    assert everything["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
    assert everything["segment.bytes"]["value"] == "1073741824"
    admin.create_partitions({unique_topic: NewPartitions(4)})
    meta = admin.describe_topics([unique_topic])[0]
    assert len(meta["partitions"]) == 4
    cluster = admin.describe_cluster()
    assert cluster["brokers"][0]["port"] == brook_session.port
    admin.delete_topics([unique_topic])
    assert unique_topic not in admin.list_topics()
    admin.close()
