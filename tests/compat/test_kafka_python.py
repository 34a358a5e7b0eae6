"""kafka-python 3 against Brook at its default settings: the idempotent producer, every codec,
keys/headers/null values, assign + seek consumers, timestamps, fetch sessions, admin."""

from __future__ import annotations

import time

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from support import BrookProcess


def _consume(
    bootstrap: str,
    tps: list[TopicPartition],
    count: int,
    seek: dict[TopicPartition, int] | None = None,
    **config: object,
) -> list:
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
def test_idempotent_round_trip_per_codec(
    brook_session: BrookProcess, unique_topic: str, codec: str | None
) -> None:
    producer = KafkaProducer(bootstrap_servers=brook_session.bootstrap, compression_type=codec)
    assert producer.config["enable_idempotence"] is True  # kafka-python 3's default
    futures = [
        producer.send(
            unique_topic,
            key=f"k{i}".encode(),
            value=f"v{i}".encode(),
            headers=[("h", str(i).encode())],
        )
        for i in range(200)
    ]
    futures.append(producer.send(unique_topic, key=b"tombstone", value=None))
    producer.flush()
    offsets = [f.get(timeout=10).offset for f in futures]
    assert offsets == list(range(201))
    producer.close()
    records = _consume(brook_session.bootstrap, [TopicPartition(unique_topic, 0)], 201)
    assert [(r.key, r.value) for r in records[:200]] == [
        (f"k{i}".encode(), f"v{i}".encode()) for i in range(200)
    ]
    assert [r.headers for r in records[:3]] == [[("h", b"0")], [("h", b"1")], [("h", b"2")]]
    assert (records[200].key, records[200].value) == (b"tombstone", None)


@pytest.mark.parametrize("acks", [0, 1, "all"])
def test_acks(brook_session: BrookProcess, unique_topic: str, acks: object) -> None:
    producer = KafkaProducer(
        bootstrap_servers=brook_session.bootstrap, acks=acks, enable_idempotence=acks == "all"
    )
    for i in range(50):
        producer.send(unique_topic, str(i).encode())
    producer.flush()
    producer.close()
    records = _consume(brook_session.bootstrap, [TopicPartition(unique_topic, 0)], 50)
    assert [r.value for r in records] == [str(i).encode() for i in range(50)]


def test_seek_to_offsets_and_timestamps(brook_session: BrookProcess, unique_topic: str) -> None:
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
    # assign + seek to the offset found for a timestamp: i = 15.. on partition 0
    records = _consume(b, tps[:1], 5, seek={tps[0]: found[tps[0]].offset})
    assert [int(r.value) for r in records] == [15, 18, 21, 24, 27]


def test_consume_from_latest(brook_session: BrookProcess, unique_topic: str) -> None:
    b = brook_session.bootstrap
    producer = KafkaProducer(bootstrap_servers=b)
    for i in range(5):
        producer.send(unique_topic, f"old{i}".encode())
    producer.flush()
    tp = TopicPartition(unique_topic, 0)
    consumer = KafkaConsumer(bootstrap_servers=b, enable_auto_commit=False)
    consumer.assign([tp])
    consumer.seek_to_end(tp)
    assert consumer.position(tp) == 5  # ListOffsets(latest) resolved before anything new
    for i in range(3):
        producer.send(unique_topic, f"new{i}".encode())
    producer.flush()
    producer.close()
    got: list = []
    deadline = time.monotonic() + 30
    while len(got) < 3 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(records)
    consumer.close()
    assert [(r.offset, r.value) for r in got] == [(5 + i, f"new{i}".encode()) for i in range(3)]


def test_incremental_fetch_responses_leave_out_idle_partitions(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    """kafka-python's consumer at its defaults opens a KIP-227 session; once data flows to one
    of three partitions, the broker's incremental responses name that partition alone."""
    b = brook_session.bootstrap
    admin = KafkaAdminClient(bootstrap_servers=b)
    admin.create_topics([NewTopic(unique_topic, 3, 1)])
    admin.close()
    tps = [TopicPartition(unique_topic, p) for p in range(3)]
    consumer = KafkaConsumer(bootstrap_servers=b, enable_auto_commit=False, fetch_max_wait_ms=100)
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    fetcher = consumer._fetcher
    original = fetcher._handle_fetch_response
    # (incremental?, partitions in the session, partitions named by the response)
    responses: list[tuple[bool, int, set[int]]] = []

    def spy(node_id: int, fetch_offsets: object, send_time: float, response: object) -> object:
        handler = fetcher._session_handlers[node_id]
        named = {p.partition_index for t in response.responses for p in t.partitions}
        responses.append(
            (not handler.next_metadata.is_full, len(handler.session_partitions), named)
        )
        return original(node_id, fetch_offsets, send_time, response)

    fetcher._handle_fetch_response = spy
    for _ in range(3):
        consumer.poll(timeout_ms=200)
    producer = KafkaProducer(bootstrap_servers=b)
    got: list = []
    deadline = time.monotonic() + 30
    for i in range(20):
        producer.send(unique_topic, f"m{i}".encode(), partition=1).get(timeout=10)
        if i % 5 == 4:
            for records in consumer.poll(timeout_ms=300).values():
                got.extend(records)
    producer.close()
    while len(got) < 20 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=300).values():
            got.extend(records)
    consumer.close()
    assert [r.value for r in got] == [f"m{i}".encode() for i in range(20)]
    full = [named for incremental, _, named in responses if not incremental]
    assert full and full[0] == {0, 1, 2}  # the first fetch is full and creates the session
    incremental = [(size, named) for inc, size, named in responses if inc]
    assert any(size == 3 and not named for size, named in incremental)  # idle: nothing sent
    with_data = [named for size, named in incremental if named]
    assert with_data and all(named == {1} for named in with_data)  # 0 and 2 left out


def test_admin_calls(brook_session: BrookProcess, unique_topic: str) -> None:
    admin = KafkaAdminClient(bootstrap_servers=brook_session.bootstrap)
    admin.create_topics([NewTopic(unique_topic, 2, 1, topic_configs={"retention.ms": "3600000"})])
    assert unique_topic in admin.list_topics()
    resource = ConfigResource(ConfigResourceType.TOPIC, unique_topic)
    modified = admin.describe_configs([resource])["topic"][unique_topic]
    assert list(modified) == ["retention.ms"]
    assert modified["retention.ms"]["value"] == "3600000"
    assert modified["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    everything = admin.describe_configs([resource], include_synonyms=True, config_filter="all")[
        "topic"
    ][unique_topic]
    assert everything["cleanup.policy"]["value"] == "delete"
    assert everything["cleanup.policy"]["config_source"] == "DEFAULT_CONFIG"
    assert everything["segment.bytes"]["value"] == "1073741824"
    # kafka-python 3 alters through IncrementalAlterConfigs when the broker offers it
    changed = ConfigResource(
        ConfigResourceType.TOPIC,
        unique_topic,
        configs={"retention.ms": "7200000", "segment.ms": "60000"},
    )
    assert admin._check_incremental_alter_configs_support()
    assert admin.alter_configs([changed]) == {"topic": {unique_topic: "OK"}}
    modified = admin.describe_configs([resource])["topic"][unique_topic]
    assert {k: v["value"] for k, v in modified.items()} == {
        "retention.ms": "7200000",
        "segment.ms": "60000",
    }
    admin.create_partitions({unique_topic: NewPartitions(4)})
    meta = admin.describe_topics([unique_topic])[0]
    assert len(meta["partitions"]) == 4
    cluster = admin.describe_cluster()
    assert cluster["brokers"][0]["port"] == brook_session.port
    admin.delete_topics([unique_topic])
    assert unique_topic not in admin.list_topics()
    admin.close()
