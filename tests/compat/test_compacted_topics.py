"""Third-party consumers on a compacted topic the cleaner has rewritten: kcat,
confluent-kafka, kafka-python and aiokafka read across the offsets it removed, through
rebuilt compressed batches, batches with a delete horizon (KIP-534: negative timestamp
deltas), and empty batches kept for an idempotent producer's last sequence; each sees every
record the broker holds, at its offset, with its timestamp."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka import TopicPartition as AioTopicPartition
from confluent_kafka import Consumer as ConfluentConsumer
from confluent_kafka import Producer as ConfluentProducer
from confluent_kafka import TopicPartition as ConfluentTopicPartition
from kafka import KafkaConsumer
from kafka import TopicPartition as KafkaTopicPartition
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.batch import DELETE_HORIZON_BIT, iter_batches
from brook.protocol.records import build_batch, encode_record, iter_records

TOPIC = "compacted"
KCAT = shutil.which("kcat") or shutil.which("kafkacat")
Row = tuple[int, bytes | None, bytes | None, int]  # offset, key, value, timestamp


def _stored(bootstrap: str) -> tuple[list[Row], list]:
    """What the broker holds: every record, and every batch header."""
    rows: list[Row] = []
    headers = []
    offset = 0
    with RawClient(bootstrap) as c:
        while True:
            part = fetch(c, TOPIC, 0, offset).responses[0].partitions[0]
            if not part.records:
                return rows, headers
            for _, header in iter_batches(part.records):
                headers.append(header)
                offset = header.next_offset
            rows += [(r.offset, r.key, r.value, r.timestamp) for _, r in iter_records(part.records)]


def _send(c: RawClient, entries: list[tuple[bytes, bytes | None]], codec: int) -> None:
    records = [encode_record(i, i, k, v, ()) for i, (k, v) in enumerate(entries)]
    now = int(time.time() * 1000)
    batch = build_batch(
        records, base_timestamp=now, max_timestamp=now + len(records) - 1, codec=codec
    )
    assert produce(c, TOPIC, 0, batch).responses[0].partition_responses[0].error_code == 0


@pytest.fixture(scope="module")
def cleaned(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, list[Row]]:
    """A broker whose compacted topic was cleaned into every kind of rewritten batch."""
    data = tmp_path_factory.mktemp("compacted") / "d"
    with BrookProcess(Path(data), {"log.cleaner.backoff.ms": "100"}) as broker:
        bootstrap = broker.bootstrap
        with RawClient(bootstrap) as c:
            create_topic(
                c,
                TOPIC,
                configs={
                    "cleanup.policy": "compact",
                    "segment.bytes": "3000",
                    "min.cleanable.dirty.ratio": "0.01",
                    "delete.retention.ms": "86400000",
                },
            )
        # an idempotent producer's batch, later superseded: kept empty for its sequence
        producer = ConfluentProducer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
        producer.produce(TOPIC, b"idempotent", key=b"p", partition=0)
        assert producer.flush(30) == 0
        with RawClient(bootstrap) as c:
            for codec in (1, 3, 4):  # gzip, lz4, zstd: rebuilt with two of three records
                keys = [b"a%d" % codec, b"b%d" % codec, b"c%d" % codec]
                _send(c, [(k, b"old-%d" % codec) for k in keys], codec)
                _send(c, [(keys[0], b"new-%d" % codec)], codec)
            _send(c, [(b"p", b"superseded")], 0)
            _send(c, [(b"t", b"value")], 0)
            _send(c, [(b"t", None), (b"u", b"kept")], 0)  # a tombstone: its batch gets a horizon
            for n in range(60):  # distinct keys, enough to roll a few segments
                _send(c, [(b"f%02d" % n, b"x" * 100)], 0)
        deadline = time.monotonic() + 40
        while True:
            rows, headers = _stored(bootstrap)
            kinds = {
                "horizon": any(h.attributes & DELETE_HORIZON_BIT for h in headers),
                "empty": any(h.records_count == 0 for h in headers),
                "compressed": any(
                    h.codec and h.records_count < h.last_offset_delta + 1 for h in headers
                ),
            }
            if all(kinds.values()) and len(rows) < 300:
                break
            assert time.monotonic() < deadline, kinds
            time.sleep(0.2)
        assert [r[0] for r in rows] != list(range(len(rows)))  # gaps
        yield bootstrap, rows


def test_confluent_kafka_reads_across_the_gaps(cleaned: tuple[str, list[Row]]) -> None:
    bootstrap, rows = cleaned
    consumer = ConfluentConsumer(
        {"bootstrap.servers": bootstrap, "group.id": "c", "enable.auto.commit": False}
    )
    consumer.assign([ConfluentTopicPartition(TOPIC, 0, 0)])
    got: list[Row] = []
    deadline = time.monotonic() + 30
    while len(got) < len(rows) and time.monotonic() < deadline:
        for m in consumer.consume(100, 0.5):
            assert m.error() is None, m.error()
            got.append((m.offset(), m.key(), m.value(), m.timestamp()[1]))
    consumer.close()
    assert got == rows


def test_kafka_python_reads_across_the_gaps(cleaned: tuple[str, list[Row]]) -> None:
    bootstrap, rows = cleaned
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = KafkaTopicPartition(TOPIC, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    got: list[Row] = []
    deadline = time.monotonic() + 30
    while len(got) < len(rows) and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got += [(r.offset, r.key, r.value, r.timestamp) for r in records]
    consumer.close()
    assert got == rows


def test_aiokafka_reads_across_the_gaps(cleaned: tuple[str, list[Row]]) -> None:
    bootstrap, rows = cleaned

    async def read() -> list[Row]:
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
        await consumer.start()
        got: list[Row] = []
        try:
            tp = AioTopicPartition(TOPIC, 0)
            consumer.assign([tp])
            await consumer.seek_to_beginning(tp)
            async with asyncio.timeout(30):
                while len(got) < len(rows):
                    batch = await consumer.getmany(timeout_ms=500)
                    got += [
                        (m.offset, m.key, m.value, m.timestamp)
                        for msgs in batch.values()
                        for m in msgs
                    ]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(read()) == rows


@pytest.mark.skipif(KCAT is None, reason="kcat is installed by the test command")
def test_kcat_reads_across_the_gaps(cleaned: tuple[str, list[Row]]) -> None:
    bootstrap, rows = cleaned
    assert KCAT is not None
    out = subprocess.run(
        [KCAT, "-b", bootstrap, "-C", "-t", TOPIC, "-o", "beginning", "-e", "-f", "%o|%k|%S|%T\n"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    got = [line.split("|") for line in out.splitlines()]
    assert [(int(o), k, int(size), int(ts)) for o, k, size, ts in got] == [
        (o, k.decode(), -1 if v is None else len(v), ts) for o, k, v, ts in rows
    ]
