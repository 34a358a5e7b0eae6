"""confluent-kafka's transactional producer against a real Brook broker: commit and abort
across partitions seen by read_committed and read_uncommitted consumers, a zombie fenced by a
second producer with the same transactional id, a transaction aborted at its timeout,
INVALID_TRANSACTION_TIMEOUT, and kill -9 of the broker with a transaction open and with one
committed (the coordinator reloads ``__transaction_state`` and finishes or fences them)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from rawclient import RawClient, create_topic
from support import BrookProcess
from txn_support import read_values

PARTITIONS = 3
OVERRIDES = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrookProcess]:
    with BrookProcess(tmp_path / "data", OVERRIDES) as process:
        yield process


def _topic(broker: BrookProcess) -> str:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=PARTITIONS)
    return topic


def _producer(broker: BrookProcess, tid: str, **extra: object) -> Producer:
    return Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": tid, **extra})


def _read(broker: BrookProcess, topic: str, level: str) -> list[str]:
    """Every record of the topic at ``level``, until each partition's end (for read_committed,
    its last stable offset)."""
    return read_values(broker.bootstrap, topic, PARTITIONS, level, timeout=30)


def _open_transactions(broker: BrookProcess, topic: str) -> list[int]:
    """Start offsets of the open transactions of the topic's partitions (DescribeProducers)."""
    with RawClient(broker.bootstrap) as c:
        request = {"topics": [{"name": topic, "partition_indexes": list(range(PARTITIONS))}]}
        resp = c.request(61, 0, request)
    return [
        p.current_txn_start_offset
        for part in resp.topics[0].partitions
        for p in part.active_producers
        if p.current_txn_start_offset >= 0
    ]


def _send(producer: Producer, topic: str, prefix: str, n: int) -> None:
    for i in range(n):
        producer.produce(topic, f"{prefix}{i}".encode(), partition=i % PARTITIONS)
    producer.flush(30)


def test_commit_and_abort_as_read_committed_and_read_uncommitted_see_them(
    broker: BrookProcess,
) -> None:
    topic = _topic(broker)
    producer = _producer(broker, f"app-{uuid.uuid4().hex[:6]}")
    producer.init_transactions(30)
    producer.begin_transaction()
    _send(producer, topic, "c", 9)
    producer.commit_transaction(30)
    producer.begin_transaction()
    _send(producer, topic, "a", 6)
    producer.abort_transaction(30)
    producer.begin_transaction()
    _send(producer, topic, "d", 3)
    producer.commit_transaction(30)
    committed = sorted([f"c{i}" for i in range(9)] + [f"d{i}" for i in range(3)])
    assert _read(broker, topic, "read_committed") == committed
    assert _read(broker, topic, "read_uncommitted") == sorted(
        committed + [f"a{i}" for i in range(6)]
    )


def test_a_second_producer_fences_the_first(broker: BrookProcess) -> None:
    topic = _topic(broker)
    tid = f"app-{uuid.uuid4().hex[:6]}"
    zombie = _producer(broker, tid)
    zombie.init_transactions(30)
    zombie.begin_transaction()
    _send(zombie, topic, "z", 3)
    successor = _producer(broker, tid)
    successor.init_transactions(30)  # aborts the zombie's open transaction
    successor.begin_transaction()
    _send(successor, topic, "s", 3)
    successor.commit_transaction(30)
    with pytest.raises(KafkaException) as fenced:
        zombie.commit_transaction(10)
    assert fenced.value.args[0].fatal() or fenced.value.args[0].txn_requires_abort()
    assert _read(broker, topic, "read_committed") == ["s0", "s1", "s2"]


def test_a_transaction_past_its_timeout_is_aborted(broker: BrookProcess) -> None:
    topic = _topic(broker)
    producer = _producer(broker, f"app-{uuid.uuid4().hex[:6]}", **{"transaction.timeout.ms": 1000})
    producer.init_transactions(30)
    producer.begin_transaction()
    _send(producer, topic, "late", 3)
    # The coordinator aborts it (its check runs every 200 ms): the partitions' markers come.
    deadline = time.monotonic() + 30
    while _open_transactions(broker, topic):
        assert time.monotonic() < deadline, "the timed-out transaction was not aborted"
        time.sleep(0.1)
    with pytest.raises(KafkaException):
        producer.commit_transaction(10)
    assert _read(broker, topic, "read_committed") == []
    assert _read(broker, topic, "read_uncommitted") == ["late0", "late1", "late2"]


def test_a_timeout_above_the_brokers_maximum_is_refused(broker: BrookProcess) -> None:
    producer = _producer(
        broker, f"app-{uuid.uuid4().hex[:6]}", **{"transaction.timeout.ms": 900_001}
    )
    with pytest.raises(KafkaException) as refused:
        producer.init_transactions(10)
    assert refused.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT


def test_the_coordinator_reloads_after_kill_9(broker: BrookProcess) -> None:
    topic = _topic(broker)
    tid = f"app-{uuid.uuid4().hex[:6]}"
    producer = _producer(broker, tid)
    producer.init_transactions(30)
    producer.begin_transaction()
    _send(producer, topic, "c", 3)
    producer.commit_transaction(30)
    producer.begin_transaction()
    _send(producer, topic, "open", 3)  # never ended: its producer dies with the broker
    broker.kill()
    broker.start()
    successor = _producer(broker, tid)
    successor.init_transactions(60)  # fences and aborts the open one, loaded from the log
    successor.begin_transaction()
    _send(successor, topic, "n", 3)
    successor.commit_transaction(30)
    assert _read(broker, topic, "read_committed") == ["c0", "c1", "c2", "n0", "n1", "n2"]
    assert "open0" in _read(broker, topic, "read_uncommitted")


def _committed(broker: BrookProcess, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], 30)
    finally:
        consumer.close()
    return {tp.partition: tp.offset for tp in found if tp.offset >= 0}


def test_offsets_sent_to_a_transaction_commit_and_abort_with_it(broker: BrookProcess) -> None:
    source, sink = _topic(broker), _topic(broker)
    loader = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(30):
        loader.produce(source, f"in{i}".encode(), partition=i % PARTITIONS)
    loader.flush(30)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    producer = _producer(broker, f"etl-{uuid.uuid4().hex[:6]}")
    producer.init_transactions(30)
    try:
        consumer.subscribe([source])
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while len(seen) < 30:
            assert time.monotonic() < deadline, seen
            batch = [m for m in consumer.consume(100, 0.5) if m.error() is None]
            if not batch:
                continue
            producer.begin_transaction()
            for msg in batch:
                producer.produce(sink, msg.value().upper(), partition=msg.partition())
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), 30)
            producer.commit_transaction(30)
            seen += [m.value().decode() for m in batch]
        committed = _committed(broker, group, source)
        assert committed == {p: 10 for p in range(PARTITIONS)}
        # Offsets sent to an aborted transaction are not committed.
        producer.begin_transaction()
        producer.produce(sink, b"x", partition=0)
        rewound = [TopicPartition(source, p, 1) for p in range(PARTITIONS)]
        producer.send_offsets_to_transaction(rewound, consumer.consumer_group_metadata(), 30)
        producer.abort_transaction(30)
        assert _committed(broker, group, source) == committed
    finally:
        consumer.close()
    assert _read(broker, sink, "read_committed") == sorted(f"IN{i}" for i in range(30))
    broker.kill()
    broker.start()
    # Reloaded from __consumer_offsets: the committed transactions' offsets, not the aborted.
    assert _committed(broker, group, source) == committed


def _fetch_offset(broker: BrookProcess, group: str, topic: str, stable: bool) -> tuple[int, int]:
    """(error, committed offset) of partition 0 from OffsetFetch v7."""
    with RawClient(broker.bootstrap) as c:
        resp = c.request(
            9,
            7,
            {
                "group_id": group,
                "topics": [{"name": topic, "partition_indexes": [0]}],
                "require_stable": stable,
            },
        )
    (part,) = resp.topics[0].partitions
    return int(part.error_code), int(part.committed_offset)


def test_offsets_of_an_open_transaction_are_unstable(broker: BrookProcess) -> None:
    topic = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    producer = _producer(broker, f"etl-{uuid.uuid4().hex[:6]}")
    producer.init_transactions(30)
    try:
        producer.begin_transaction()
        producer.send_offsets_to_transaction(
            [TopicPartition(topic, 0, 7)], consumer.consumer_group_metadata(), 30
        )
        assert _fetch_offset(broker, group, topic, stable=True) == (
            88,
            -1,
        )  # UNSTABLE_OFFSET_COMMIT
        assert _fetch_offset(broker, group, topic, stable=False) == (0, -1)
        producer.commit_transaction(30)
        deadline = time.monotonic() + 30
        while _fetch_offset(broker, group, topic, stable=True) != (0, 7):
            assert time.monotonic() < deadline, "the committed offset never became stable"
            time.sleep(0.05)
    finally:
        consumer.close()


def test_describe_and_list_transactions(broker: BrookProcess) -> None:
    topic = _topic(broker)
    tid = f"app-{uuid.uuid4().hex[:6]}"
    producer = _producer(broker, tid)
    producer.init_transactions(30)
    producer.begin_transaction()
    _send(producer, topic, "x", 2)
    with RawClient(broker.bootstrap) as c:
        (state,) = c.request(65, 0, {"transactional_ids": [tid]}).transaction_states
        assert (state.error_code, state.transaction_state) == (0, "Ongoing")
        assert sorted((t.topic, list(t.partitions)) for t in state.topics) == [(topic, [0, 1])]
        assert state.producer_epoch == 0 and state.producer_id >= 0
        (missing,) = c.request(65, 0, {"transactional_ids": ["nobody"]}).transaction_states
        assert missing.error_code in (105, 16)  # TRANSACTIONAL_ID_NOT_FOUND, or NOT_COORDINATOR
        listed = c.request(
            66, 1, {"state_filters": ["Ongoing", "Bogus"], "producer_id_filters": []}
        )
        assert listed.error_code == 0 and list(listed.unknown_state_filters) == ["Bogus"]
        assert [(t.transactional_id, t.transaction_state) for t in listed.transaction_states] == [
            (tid, "Ongoing")
        ]
    producer.commit_transaction(30)
    with RawClient(broker.bootstrap) as c:
        deadline = time.monotonic() + 30
        while True:
            (state,) = c.request(65, 0, {"transactional_ids": [tid]}).transaction_states
            if state.transaction_state == "CompleteCommit":
                break
            assert time.monotonic() < deadline, state.transaction_state
            time.sleep(0.05)
        assert list(state.topics) == []
