"""Brook's transactional producer (sync and asyncio) against a real Brook broker: commit and
abort seen by read_committed and read_uncommitted consumers (Brook's and confluent-kafka's),
a second producer with the same transactional.id fencing the first, a consumer group's
offsets committed with the transaction and not with an aborted one, a record the broker
refuses making the transaction abortable, and misuse refused with Java's errors."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator

import pytest
from support import BrookProcess
from txn_support import read_values

from brook.client import (
    AbortableTransactionError,
    AsyncProducer,
    Consumer,
    FatalTransactionError,
    OffsetAndMetadata,
    Producer,
    ProducerFencedError,
    TopicPartition,
    TransactionAbortedError,
    TransactionStateError,
)
from brook.client.admin import Admin, NewTopic
from brook.protocol.errors import Errors

PARTITIONS = 3


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrookProcess]:
    with BrookProcess(tmp_path_factory.mktemp("txn-client") / "data") as process:
        yield process


def _topic(broker: BrookProcess, **configs: str) -> str:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    with Admin({"bootstrap.servers": broker.bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1, configs=configs)])
    return topic


def _producer(broker: BrookProcess, tid: str | None = None, **extra: object) -> Producer:
    return Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": tid or f"tid-{uuid.uuid4().hex[:8]}",
            **extra,
        }
    )


def _read(broker: BrookProcess, topic: str, level: str) -> list[str]:
    """Every record of ``topic`` under ``level`` with Brook's consumer, up to each
    partition's end (the last stable offset under read_committed)."""
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with Consumer({"bootstrap.servers": broker.bootstrap, "isolation.level": level}) as c:
        c.assign(tps)
        c.seek_to_beginning()
        ends = c.end_offsets(tps)
        got: list[str] = []
        deadline = time.monotonic() + 30
        while any(c.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, (ends, got)
            got += [r.value.decode() for r in c.poll(200)]
        return sorted(got)


def _read_confluent(broker: BrookProcess, topic: str, level: str) -> list[str]:
    return read_values(broker.bootstrap, topic, PARTITIONS, level, timeout=30)


def _send_each(producer: Producer, topic: str, prefix: str) -> None:
    for p in range(PARTITIONS):
        producer.send(topic, f"{prefix}{p}".encode(), partition=p)


def test_commit_and_abort_as_each_isolation_level_sees_them(broker: BrookProcess) -> None:
    topic = _topic(broker)
    with _producer(broker) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        _send_each(producer, topic, "c")
        producer.commit_transaction()
        producer.begin_transaction()
        _send_each(producer, topic, "a")
        producer.flush()  # in the log, then aborted
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"last", partition=1)
        producer.commit_transaction()
    committed = ["c0", "c1", "c2", "last"]
    everything = sorted(["a0", "a1", "a2", *committed])
    assert _read(broker, topic, "read_committed") == committed
    assert _read(broker, topic, "read_uncommitted") == everything
    assert _read_confluent(broker, topic, "read_committed") == committed
    assert _read_confluent(broker, topic, "read_uncommitted") == everything


def test_the_async_producer_commits_and_aborts(broker: BrookProcess) -> None:
    topic = _topic(broker)

    async def run() -> None:
        config = {"bootstrap.servers": broker.bootstrap, "transactional.id": uuid.uuid4().hex}
        async with AsyncProducer(config) as producer:
            await producer.init_transactions()
            producer.begin_transaction()
            for p in range(PARTITIONS):
                await producer.send(topic, f"c{p}".encode(), partition=p)
            await producer.commit_transaction()
            producer.begin_transaction()
            futures = [
                await producer.send(topic, f"a{p}".encode(), partition=p) for p in range(PARTITIONS)
            ]
            await producer.flush()
            assert all(f.done() for f in futures)
            await producer.abort_transaction()

    asyncio.run(run())
    assert _read(broker, topic, "read_committed") == ["c0", "c1", "c2"]
    assert _read_confluent(broker, topic, "read_uncommitted") == [
        "a0",
        "a1",
        "a2",
        "c0",
        "c1",
        "c2",
    ]


def test_a_second_producer_fences_the_first(broker: BrookProcess) -> None:
    topic = _topic(broker)
    tid = f"zombie-{uuid.uuid4().hex[:8]}"
    first = _producer(broker, tid)
    try:
        first.init_transactions()
        first.begin_transaction()
        _send_each(first, topic, "zombie")
        first.flush()
        with _producer(broker, tid) as second:
            second.init_transactions()  # aborts the first one's open transaction
            with pytest.raises(ProducerFencedError):
                first.commit_transaction()
            with pytest.raises(ProducerFencedError):
                first.send(topic, b"more", partition=0)
            with pytest.raises(ProducerFencedError):
                first.abort_transaction()
            second.begin_transaction()
            _send_each(second, topic, "live")
            second.commit_transaction()
    finally:
        first.close()
    assert _read(broker, topic, "read_committed") == ["live0", "live1", "live2"]
    assert _read_confluent(broker, topic, "read_committed") == ["live0", "live1", "live2"]


def test_offsets_commit_with_the_transaction_and_not_with_an_aborted_one(
    broker: BrookProcess,
) -> None:
    source, sink = _topic(broker), _topic(broker)
    with _producer(broker) as loader:
        loader.init_transactions()
        loader.begin_transaction()
        for n in range(12):
            loader.send(source, str(n).encode(), partition=n % PARTITIONS)
        loader.commit_transaction()
    group = f"g-{uuid.uuid4().hex[:8]}"
    tps = [TopicPartition(source, p) for p in range(PARTITIONS)]
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    try:
        consumer.subscribe([source])
        seen: list[str] = []
        deadline = time.monotonic() + 30
        while len(seen) < 12:
            assert time.monotonic() < deadline, seen
            seen += [r.value.decode() for r in consumer.poll(200)]
        metadata = consumer.group_metadata()
        assert metadata.group_id == group and metadata.generation_id > 0 and metadata.member_id
        positions = {tp: consumer.position(tp) for tp in tps}
        with _producer(broker) as producer:
            producer.init_transactions()
            producer.begin_transaction()
            producer.send(sink, b"copy", partition=0)
            producer.send_offsets_to_transaction(positions, metadata)
            producer.abort_transaction()
            assert consumer.committed(tps) == dict.fromkeys(tps)
            producer.begin_transaction()
            producer.send(sink, b"copy", partition=0)
            producer.send_offsets_to_transaction(
                {tp: OffsetAndMetadata(offset, "eos") for tp, offset in positions.items()},
                metadata,
            )
            producer.commit_transaction()
        committed = consumer.committed(tps)
        assert {tp: c.offset for tp, c in committed.items() if c} == positions
        assert all(c is not None and c.metadata == "eos" for c in committed.values())
    finally:
        consumer.close()
    assert _read(broker, sink, "read_committed") == ["copy"]


def test_offsets_of_a_stale_generation_make_the_transaction_abortable(
    broker: BrookProcess,
) -> None:
    source = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:8]}"
    with Consumer(
        {"bootstrap.servers": broker.bootstrap, "group.id": group, "auto.offset.reset": "earliest"}
    ) as consumer:
        consumer.subscribe([source])
        deadline = time.monotonic() + 30
        while consumer.group_metadata().generation_id < 1:
            assert time.monotonic() < deadline
            consumer.poll(100)
        metadata = consumer.group_metadata()
        stale = type(metadata)(group, metadata.generation_id + 5, metadata.member_id)
        with _producer(broker) as producer:
            producer.init_transactions()
            producer.begin_transaction()
            with pytest.raises(AbortableTransactionError) as caught:
                producer.send_offsets_to_transaction({(source, 0): 1}, stale)
            assert caught.value.code == Errors.ILLEGAL_GENERATION
            producer.abort_transaction()
            producer.begin_transaction()
            producer.send_offsets_to_transaction({(source, 0): 1}, metadata)
            producer.commit_transaction()
        assert consumer.committed([(source, 0)])[TopicPartition(source, 0)].offset == 1


def test_a_refused_record_makes_the_transaction_abortable(broker: BrookProcess) -> None:
    topic = _topic(broker, **{"max.message.bytes": "1000"})
    with _producer(broker) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, b"fits", partition=0)
        too_big = producer.send(topic, b"x" * 5000, partition=1)
        with pytest.raises(AbortableTransactionError) as caught:
            producer.commit_transaction()
        assert caught.value.code == Errors.MESSAGE_TOO_LARGE
        assert too_big.exception(5) is not None
        with pytest.raises(AbortableTransactionError, match="abort_transaction"):
            producer.send(topic, b"more", partition=0)
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send(topic, b"after", partition=2)
        producer.commit_transaction()
    assert _read(broker, topic, "read_committed") == ["after"]


def test_records_not_yet_sent_fail_when_their_transaction_aborts(broker: BrookProcess) -> None:
    topic = _topic(broker)
    with _producer(broker, **{"linger.ms": 60000, "batch.size": 1 << 20}) as producer:
        producer.init_transactions()
        producer.begin_transaction()
        future = producer.send(topic, b"never", partition=0)
        producer.abort_transaction()
        assert isinstance(future.exception(5), TransactionAbortedError)
        producer.begin_transaction()
        producer.send(topic, b"kept", partition=0)
        producer.commit_transaction()
    assert _read(broker, topic, "read_uncommitted") == ["kept"]


def test_misuse_is_refused(broker: BrookProcess) -> None:
    topic = _topic(broker)
    with (
        Producer({"bootstrap.servers": broker.bootstrap}) as plain,
        pytest.raises(TransactionStateError, match=r"set transactional\.id"),
    ):
        plain.init_transactions()
    with _producer(broker) as producer:
        with pytest.raises(TransactionStateError, match="init_transactions"):
            producer.send(topic, b"x")
        with pytest.raises(TransactionStateError, match="init_transactions"):
            producer.begin_transaction()
        producer.init_transactions()
        with pytest.raises(TransactionStateError, match="state READY"):
            producer.send(topic, b"x")
        with pytest.raises(TransactionStateError, match="state READY"):
            producer.commit_transaction()
        producer.begin_transaction()
        with pytest.raises(TransactionStateError):
            producer.begin_transaction()
        producer.abort_transaction()
    with _producer(broker, **{"transaction.timeout.ms": 10**9}) as producer:
        with pytest.raises(FatalTransactionError, match=r"transaction\.max\.timeout\.ms") as caught:
            producer.init_transactions()
        assert caught.value.code == Errors.INVALID_TRANSACTION_TIMEOUT
