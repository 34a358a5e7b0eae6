"""Brook's producer against real brokers (Tansu and Brook): round trips per codec, acks,
idempotence, callbacks, errors; read back with confluent-kafka so that what was acknowledged
is exactly what is stored."""

from __future__ import annotations

import asyncio
import threading

import pytest
from readback import consume, create_topic
from support import BrookProcess

from brook import AsyncProducer, Producer
from brook.client import NetworkError, RecordMetadata, RecordTooLargeError
from brook.client.admin import Admin, NewTopic
from brook.config.defs import ConfigError
from brook.protocol.errors import KafkaError

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_per_codec(bootstrap: str, unique_topic: str, codec: str) -> None:
    create_topic(bootstrap, unique_topic, 3)
    config = {"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 5}
    sent: dict[tuple[int, int], tuple[bytes | None, bytes | None, list]] = {}
    with Producer(config) as producer:
        futures = []
        for i in range(400):
            key = None if i % 3 == 0 else f"k{i}".encode()
            value = None if i % 7 == 0 else f"value-{i}-".encode() * (i % 5 + 1)
            headers = [("idx", str(i).encode()), ("null", None)] if i % 2 else None
            partition = 2 if i % 11 == 0 else None
            futures.append(
                (
                    producer.send(
                        unique_topic, value, key=key, partition=partition, headers=headers
                    ),
                    key,
                    value,
                    headers,
                    partition,
                )
            )
        producer.flush()
        for future, key, value, headers, partition in futures:
            meta = future.result(0)
            assert isinstance(meta, RecordMetadata) and meta.topic == unique_topic
            if partition is not None:
                assert meta.partition == partition
            assert meta.serialized_key_size == (-1 if key is None else len(key))
            assert meta.serialized_value_size == (-1 if value is None else len(value))
            sent[(meta.partition, meta.offset)] = (key, value, headers or [])
    assert len(sent) == 400
    stored = consume(bootstrap, unique_topic, 3, 400)
    got = {
        (m.partition(), m.offset()): (m.key(), m.value(), list(m.headers() or [])) for m in stored
    }
    assert len(stored) == 400
    assert got == {k: (key, value, list(h)) for k, (key, value, h) in sent.items()}


@pytest.mark.parametrize("acks", ["0", "1", "all"])
def test_acks(bootstrap: str, unique_topic: str, acks: str) -> None:
    create_topic(bootstrap, unique_topic, 1)
    config = {"bootstrap.servers": bootstrap, "acks": acks}
    with Producer(config) as producer:
        futures = [producer.send(unique_topic, f"v{i}".encode()) for i in range(200)]
        producer.flush()
        offsets = [f.result(0).offset for f in futures]
    if acks == "0":
        assert offsets == [-1] * 200  # no response: no offsets, as Java reports them
    else:
        assert offsets == list(range(200))
    stored = consume(bootstrap, unique_topic, 1, 200)
    assert [m.value() for m in stored] == [f"v{i}".encode() for i in range(200)]


def test_idempotent_producer_numbers_batches(bootstrap: str, unique_topic: str) -> None:
    create_topic(bootstrap, unique_topic, 2)
    config = {"bootstrap.servers": bootstrap, "enable.idempotence": True, "batch.size": 2000}
    with Producer(config) as producer:
        futures = [producer.send(unique_topic, b"x" * 50, partition=i % 2) for i in range(1000)]
        producer.flush()
        assert all(f.exception(0) is None for f in futures)
        idem = producer._core.idempotence
        assert idem is not None and idem.has_producer_id
        pid = idem.producer_id_and_epoch
        # Every record acknowledged, in order per partition, sequences running on.
        assert idem.last_acked_sequence((unique_topic, 0)) == 499
        assert idem.last_acked_sequence((unique_topic, 1)) == 499
    stored = consume(bootstrap, unique_topic, 2, 1000)
    assert len(stored) == 1000
    for partition in (0, 1):
        offsets = [m.offset() for m in stored if m.partition() == partition]
        assert offsets == list(range(500))
    assert pid.producer_id >= 0


def test_delivery_callbacks_and_done_callbacks(bootstrap: str, unique_topic: str) -> None:
    create_topic(bootstrap, unique_topic, 1)
    delivered: list[tuple[RecordMetadata, BaseException | None]] = []
    done = threading.Event()
    seen: list[int] = []
    with Producer({"bootstrap.servers": bootstrap}) as producer:
        for _ in range(50):
            producer.send(unique_topic, b"v", on_delivery=lambda m, e: delivered.append((m, e)))
        future = producer.send(unique_topic, b"last")
        future.add_done_callback(lambda f: (seen.append(f.result().offset), done.set()))
        assert done.wait(10)
        producer.flush()
    assert seen == [50]
    assert [m.offset for m, e in delivered] == list(range(50))
    assert all(e is None for _, e in delivered)


def test_async_producer(bootstrap: str, unique_topic: str) -> None:
    create_topic(bootstrap, unique_topic, 2)

    async def main() -> list[RecordMetadata]:
        async with AsyncProducer({"bootstrap.servers": bootstrap, "linger.ms": 2}) as producer:
            first = await producer.send_and_wait(unique_topic, b"first", key=b"k")
            futures = [await producer.send(unique_topic, f"v{i}".encode()) for i in range(300)]
            await producer.flush()
            rest = [await f for f in futures]
            parts = await producer.partitions_for(unique_topic)
            assert sorted(p.partition for p in parts) == [0, 1]
            return [first, *rest]

    results = asyncio.run(main())
    assert len({(m.partition, m.offset) for m in results}) == 301
    assert len(consume(bootstrap, unique_topic, 2, 301)) == 301


def test_serializers_and_metrics(bootstrap: str, unique_topic: str) -> None:
    create_topic(bootstrap, unique_topic, 1)
    config = {
        "bootstrap.servers": bootstrap,
        "client.id": "metrics-test",
        "key.serializer": "org.apache.kafka.common.serialization.StringSerializer",
        "value.serializer": "org.apache.kafka.common.serialization.StringSerializer",
    }
    with Producer(config) as producer:
        for i in range(100):
            producer.send(unique_topic, f"value {i}", key=f"key {i}")
        producer.flush()
        metrics = producer.metrics()
    assert metrics["producer-metrics:record-send-total:{client-id=metrics-test}"] == 100
    assert metrics["producer-metrics:record-error-total:{client-id=metrics-test}"] == 0
    assert metrics["producer-metrics:batch-size-avg:{client-id=metrics-test}"] > 61
    # Java's estimateSizeInBytesUpperBound of the largest record ("key 99" / "value 99"):
    # batch header 61 + record overhead 21 + key, value and header count with their lengths.
    assert metrics["producer-metrics:record-size-max:{client-id=metrics-test}"] == 61 + 21 + 17
    assert metrics["producer-metrics:request-latency-avg:{client-id=metrics-test}"] >= 0
    assert metrics["producer-metrics:outgoing-byte-total:{client-id=metrics-test}"] > 100 * 7
    node_keys = [k for k in metrics if k.group == "producer-node-metrics"]
    assert node_keys and all(k.tags["node-id"].startswith("node-") for k in node_keys)
    topic_total = (
        f"producer-topic-metrics:record-send-total:{{client-id=metrics-test, topic={unique_topic}}}"
    )
    assert metrics[topic_total] == 100
    stored = consume(bootstrap, unique_topic, 1, 100)
    assert stored[5].key() == b"key 5" and stored[5].value() == b"value 5"


def test_unknown_topic_times_out_within_max_block(bootstrap: str, unique_topic: str) -> None:
    # Tansu and Brook may both create topics on Metadata; an invalid name never exists.
    with (
        Producer({"bootstrap.servers": bootstrap, "max.block.ms": 1500}) as producer,
        pytest.raises(KafkaError) as info,
    ):
        producer.send("bad topic name with spaces", b"v")
    assert info.value.name in ("INVALID_TOPIC_EXCEPTION", "REQUEST_TIMED_OUT")


def test_oversized_record_is_rejected_at_send(bootstrap: str, unique_topic: str) -> None:
    create_topic(bootstrap, unique_topic, 1)
    with Producer({"bootstrap.servers": bootstrap, "max.request.size": 10000}) as producer:
        with pytest.raises(RecordTooLargeError) as info:
            producer.send(unique_topic, b"x" * 20000)
        message = str(info.value)
        assert "max.request.size" in message and "10000" in message and "200" in message
        assert info.value.name == "MESSAGE_TOO_LARGE" and not info.value.retriable
        # Still usable afterwards.
        assert producer.send(unique_topic, b"fine").result(10).offset == 0


def test_broker_error_surfaces_with_kafka_name_and_flag(bootstrap: str, unique_topic: str) -> None:
    create_topic(bootstrap, unique_topic, 1)
    config = {"bootstrap.servers": bootstrap, "max.block.ms": 2000}
    with Producer(config) as producer:
        # Partition 5 of a one-partition topic never appears in the metadata.
        with pytest.raises(KafkaError) as info:
            producer.send(unique_topic, b"v", partition=5)
        assert info.value.name == "REQUEST_TIMED_OUT" and info.value.retriable
        assert "Partition 5" in str(info.value)


def test_unreachable_bootstrap_names_the_address_and_reason() -> None:
    from support import free_port

    port = free_port()
    with pytest.raises(NetworkError) as info:
        Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
    assert f"127.0.0.1:{port}" in str(info.value)
    assert "refused" in str(info.value).lower()


def test_unknown_config_key_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        Producer({"bootstrap.servers": "127.0.0.1:9", "lingr.ms": 5})
    assert "lingr.ms" in str(info.value)


def test_broker_rejection_reaches_the_future_with_its_kafka_name(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    with Admin({"bootstrap.servers": brook_session.bootstrap}) as admin:
        admin.create_topics([NewTopic(unique_topic, 1, 1, configs={"max.message.bytes": "1000"})])
    with Producer({"bootstrap.servers": brook_session.bootstrap, "linger.ms": 0}) as producer:
        future = producer.send(unique_topic, b"x" * 3000)
        with pytest.raises(KafkaError) as info:
            future.result(20)
        assert info.value.name in ("MESSAGE_TOO_LARGE", "RECORD_LIST_TOO_LARGE")
        assert not info.value.retriable
        assert producer.send(unique_topic, b"small").result(20).offset >= 0


def test_many_threads_share_one_producer(bootstrap: str, unique_topic: str) -> None:
    create_topic(bootstrap, unique_topic, 3)
    with Producer({"bootstrap.servers": bootstrap, "batch.size": 4096}) as producer:
        futures: dict[int, list] = {}

        def worker(n: int) -> None:
            futures[n] = [
                producer.send(unique_topic, f"{n}-{i}".encode(), headers={"thread": str(n)})
                for i in range(3000)
            ]

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        producer.flush()
        places = {
            (f.result(0).partition, f.result(0).offset) for fs in futures.values() for f in fs
        }
        assert len(places) == 12000
        assert [p.partition for p in producer.partitions_for(unique_topic)] == [0, 1, 2]
    stored = consume(bootstrap, unique_topic, 3, 12000)
    values = [m.value() for m in stored]
    assert len(values) == 12000 == len(set(values))
    headers = {h for m in stored for h in m.headers()}
    assert headers == {("thread", str(n).encode()) for n in range(4)}
