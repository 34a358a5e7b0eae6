"""kafka-python 3.0.12's transactional producer against a real Brook broker: commit and abort
across partitions seen by kafka-python's read_committed and read_uncommitted consumers, a
read_committed consumer held at an open transaction's start, a zombie fenced by a second
producer with the same transactional id, offsets sent to a transaction (with the consumer's
group metadata, KIP-447, and with a bare group id) committed with it and dropped with an
aborted one, offsets of a stale generation refused (KIP-447), a transaction aborted at its
timeout, compressed transactional batches of every codec, two producers' transactions
interleaved on one partition read under read_committed from every offset, the same producer
committing across kill -9 of the broker, and KafkaAdminClient's KIP-664 calls (list,
describe, describe producers, abort an open transaction)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import AbortTransactionSpec, TransactionState
from kafka.errors import (
    CommitFailedError,
    KafkaError,
    ProducerFencedError,
    TransactionCoordinatorFencedError,
)
from kafka.structs import OffsetAndMetadata
from rawclient import RawClient, create_topic
from support import BrookProcess
from txn_clients import kafka_python_read_all as read_all

PARTITIONS = 3
OVERRIDES = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrookProcess]:
    with BrookProcess(tmp_path_factory.mktemp("kptxn") / "data", OVERRIDES) as process:
        yield process


def _topic(broker: BrookProcess) -> str:
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=PARTITIONS)
    return topic


def _producer(broker: BrookProcess, tid: str, **extra: object) -> KafkaProducer:
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id=tid, **extra)
    producer.init_transactions()
    return producer


def _send(producer: KafkaProducer, topic: str, prefix: str, n: int) -> None:
    """``n`` records over the partitions, each acknowledged before returning (kafka-python's
    abort drops records still unsent, so an aborted transaction's records are flushed first)."""
    futures = [
        producer.send(topic, f"{prefix}{i}".encode(), partition=i % PARTITIONS) for i in range(n)
    ]
    producer.flush()
    for future in futures:
        future.get(timeout=30)


def test_commit_and_abort_as_read_committed_and_read_uncommitted_see_them(
    broker: BrookProcess,
) -> None:
    topic = _topic(broker)
    producer = _producer(broker, f"app-{uuid.uuid4().hex[:6]}")
    try:
        producer.begin_transaction()
        _send(producer, topic, "c", 9)
        producer.commit_transaction()
        producer.begin_transaction()
        _send(producer, topic, "a", 6)
        producer.abort_transaction()
        producer.begin_transaction()
        _send(producer, topic, "d", 3)
        producer.commit_transaction()
    finally:
        producer.close()
    committed = sorted([f"c{i}" for i in range(9)] + [f"d{i}" for i in range(3)])
    assert read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == committed
    assert read_all(broker.bootstrap, topic, PARTITIONS, "read_uncommitted") == sorted(
        committed + [f"a{i}" for i in range(6)]
    )


def test_read_committed_stops_at_an_open_transaction(broker: BrookProcess) -> None:
    topic = _topic(broker)
    producer = _producer(broker, f"app-{uuid.uuid4().hex[:6]}")
    try:
        producer.begin_transaction()
        _send(producer, topic, "c", 3)
        producer.commit_transaction()
        producer.begin_transaction()
        _send(producer, topic, "open", 3)
        assert read_all(broker.bootstrap, topic, PARTITIONS, "read_committed", settled=False) == [
            "c0",
            "c1",
            "c2",
        ]
        uncommitted = read_all(broker.bootstrap, topic, PARTITIONS, "read_uncommitted", False)
        assert len(uncommitted) == 6
        producer.commit_transaction()
    finally:
        producer.close()
    assert read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == sorted(
        ["c0", "c1", "c2", "open0", "open1", "open2"]
    )


def test_a_second_producer_fences_the_first(broker: BrookProcess) -> None:
    topic = _topic(broker)
    tid = f"app-{uuid.uuid4().hex[:6]}"
    zombie = _producer(broker, tid)
    try:
        zombie.begin_transaction()
        _send(zombie, topic, "z", 3)
        successor = _producer(broker, tid)  # InitProducerId: aborts the zombie's transaction
        try:
            successor.begin_transaction()
            _send(successor, topic, "s", 3)
            successor.commit_transaction()
        finally:
            successor.close()
        with pytest.raises(ProducerFencedError):
            zombie.commit_transaction()
    finally:
        zombie.close(timeout=5)
    assert read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == ["s0", "s1", "s2"]
    assert read_all(broker.bootstrap, topic, PARTITIONS, "read_uncommitted") == sorted(
        ["s0", "s1", "s2", "z0", "z1", "z2"]
    )


def _committed(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group)
    try:
        found = {p: consumer.committed(TopicPartition(topic, p)) for p in range(PARTITIONS)}
    finally:
        consumer.close()
    return {p: offset for p, offset in found.items() if offset is not None}


def _wait_committed(bootstrap: str, group: str, topic: str, expected: dict[int, int]) -> None:
    """Until the group's committed offsets are ``expected`` (a transaction's offsets apply once
    its COMMIT marker reaches ``__consumer_offsets``, just after the commit returns)."""
    deadline = time.monotonic() + 30
    while (found := _committed(bootstrap, group, topic)) != expected:
        assert time.monotonic() < deadline, found
        time.sleep(0.05)


@pytest.mark.parametrize("metadata", ["group_metadata", "group_id"])
def test_offsets_sent_to_a_transaction_commit_and_abort_with_it(
    broker: BrookProcess, metadata: str
) -> None:
    source, sink = _topic(broker), _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"
    loader = KafkaProducer(bootstrap_servers=broker.bootstrap)
    for i in range(30):
        loader.send(source, f"in{i}".encode(), partition=i % PARTITIONS)
    loader.close()
    consumer = KafkaConsumer(
        source,
        bootstrap_servers=broker.bootstrap,
        group_id=group,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
    )
    producer = _producer(broker, f"etl-{uuid.uuid4().hex[:6]}")

    def group_metadata() -> object:
        return consumer.group_metadata() if metadata == "group_metadata" else group

    try:
        seen: list[str] = []
        deadline = time.monotonic() + 60
        while len(seen) < 30:
            assert time.monotonic() < deadline, seen
            batch = consumer.poll(timeout_ms=500)
            if not batch:
                continue
            producer.begin_transaction()
            for records in batch.values():
                for r in records:
                    producer.send(sink, r.value.upper(), partition=r.partition)
                seen += [r.value.decode() for r in records]
            positions = {tp: OffsetAndMetadata(consumer.position(tp), "", -1) for tp in batch}
            producer.send_offsets_to_transaction(positions, group_metadata())
            producer.commit_transaction()
        committed = {p: 10 for p in range(PARTITIONS)}
        _wait_committed(broker.bootstrap, group, source, committed)
        # Offsets sent to an aborted transaction are not committed.
        producer.begin_transaction()
        producer.send(sink, b"x", partition=0)
        rewound = {
            TopicPartition(source, p): OffsetAndMetadata(1, "", -1) for p in range(PARTITIONS)
        }
        producer.send_offsets_to_transaction(rewound, group_metadata())
        producer.abort_transaction()
        assert _committed(broker.bootstrap, group, source) == committed
    finally:
        producer.close()
        consumer.close()
    assert read_all(broker.bootstrap, sink, PARTITIONS, "read_committed") == sorted(
        f"IN{i}" for i in range(30)
    )


def _ends(bootstrap: str, topic: str, level: str) -> dict[TopicPartition, int]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=level)
    try:
        return consumer.end_offsets([TopicPartition(topic, p) for p in range(PARTITIONS)])
    finally:
        consumer.close()


def test_a_transaction_past_its_timeout_is_aborted(broker: BrookProcess) -> None:
    topic = _topic(broker)
    producer = _producer(broker, f"app-{uuid.uuid4().hex[:6]}", transaction_timeout_ms=1000)
    try:
        producer.begin_transaction()
        _send(producer, topic, "late", 3)
        # The coordinator aborts it (its check runs every 200 ms): its markers end the open
        # transaction, so the last stable offsets reach the log ends.
        deadline = time.monotonic() + 30
        while _ends(broker.bootstrap, topic, "read_committed") != _ends(
            broker.bootstrap, topic, "read_uncommitted"
        ):
            assert time.monotonic() < deadline, "the timed-out transaction was not aborted"
            time.sleep(0.1)
        with pytest.raises(KafkaError):
            producer.commit_transaction()
    finally:
        producer.close(timeout=5)
    assert read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == []
    assert read_all(broker.bootstrap, topic, PARTITIONS, "read_uncommitted") == [
        "late0",
        "late1",
        "late2",
    ]


def _assigned(consumer: KafkaConsumer, deadline: float) -> None:
    while not consumer.assignment():
        assert time.monotonic() < deadline, "the consumer was never assigned partitions"
        consumer.poll(timeout_ms=100)


def test_offsets_with_a_stale_generation_are_refused(broker: BrookProcess) -> None:
    """KIP-447: offsets sent with the group metadata of a member the group has moved past (a
    rebalance since) fail the transaction (ILLEGAL_GENERATION, CommitFailedError) instead of
    committing a zombie's position; the producer aborts and goes on."""
    source = _topic(broker)
    group = f"g-{uuid.uuid4().hex[:6]}"

    def member() -> KafkaConsumer:
        return KafkaConsumer(
            source,
            bootstrap_servers=broker.bootstrap,
            group_id=group,
            enable_auto_commit=False,
            session_timeout_ms=10_000,
            heartbeat_interval_ms=500,
        )

    first, second = member(), None
    producer = _producer(broker, f"etl-{uuid.uuid4().hex[:6]}")
    try:
        deadline = time.monotonic() + 60
        _assigned(first, deadline)
        stale = first.group_metadata()
        second = member()
        # Both poll until the rebalance the second one started has given them a new generation.
        while True:
            assert time.monotonic() < deadline, "the group never rebalanced"
            first.poll(timeout_ms=100)
            second.poll(timeout_ms=100)
            now = first.group_metadata()
            if now.generation_id > stale.generation_id and second.assignment():
                break
        offsets = {TopicPartition(source, 0): OffsetAndMetadata(5, "", -1)}
        producer.begin_transaction()
        with pytest.raises(KafkaError) as refused:
            producer.send_offsets_to_transaction(offsets, stale)
            producer.commit_transaction()
        assert isinstance(refused.value, CommitFailedError), refused.value
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send_offsets_to_transaction(offsets, first.group_metadata())
        producer.commit_transaction()
    finally:
        producer.close()
        first.close()
        if second is not None:
            second.close()
    _wait_committed(broker.bootstrap, group, source, {0: 5})


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_transactions(broker: BrookProcess, codec: str) -> None:
    """Compressed transactional batches: read_committed drops the aborted ones whole."""
    topic = _topic(broker)
    producer = _producer(broker, f"app-{uuid.uuid4().hex[:6]}", compression_type=codec)
    try:
        for n in range(6):
            producer.begin_transaction()
            _send(producer, topic, f"{n}-", 30)
            (producer.commit_transaction if n % 2 == 0 else producer.abort_transaction)()
    finally:
        producer.close()
    committed = read_all(broker.bootstrap, topic, PARTITIONS, "read_committed")
    assert committed == sorted(f"{n}-{i}" for n in (0, 2, 4) for i in range(30))
    assert len(read_all(broker.bootstrap, topic, PARTITIONS, "read_uncommitted")) == 180


@pytest.mark.parametrize("segment_bytes", [None, 1024])
def test_interleaved_transactions_read_from_any_offset(
    broker: BrookProcess, segment_bytes: int | None
) -> None:
    """Two producers' transactions interleaved batch by batch on one partition, one aborting
    each time, the other committing: read_committed from every offset (inside an aborted
    transaction, on a marker) returns exactly the committed records after it; also with
    segments of 1 KiB, so that each transaction spans two segments and its abort may be
    indexed in a later segment than the one a fetch starts in."""
    topic = f"txn-{uuid.uuid4().hex[:8]}"
    configs = {} if segment_bytes is None else {"segment.bytes": str(segment_bytes)}
    with RawClient(broker.bootstrap) as c:
        create_topic(c, topic, partitions=1, configs=configs)
    pad = "-" + "x" * 100
    aborter = _producer(broker, f"a-{uuid.uuid4().hex[:6]}")
    committer = _producer(broker, f"c-{uuid.uuid4().hex[:6]}")
    try:
        for n in range(3):
            aborter.begin_transaction()
            committer.begin_transaction()
            for i in range(5):
                for producer, name in ((aborter, "A"), (committer, "B")):
                    value = f"{name}{n}-{i}{pad}".encode()
                    producer.send(topic, value, partition=0).get(timeout=30)
            aborter.abort_transaction()
            committer.commit_transaction()
    finally:
        aborter.close()
        committer.close()
    assert read_all(broker.bootstrap, topic, 1, "read_committed") == sorted(
        f"B{n}-{i}{pad}" for n in range(3) for i in range(5)
    )
    if segment_bytes is not None:  # the transactions span segments; aborts were indexed
        assert len(list((broker.data_dir / f"{topic}-0").glob("*.log"))) >= 4
        assert list((broker.data_dir / f"{topic}-0").glob("*.txnindex"))
    tp = TopicPartition(topic, 0)
    every = _read_from(broker.bootstrap, tp, 0, "read_uncommitted")
    assert len(every) == 30
    end = max(o for o, _ in every) + 3  # the last round's two markers
    for start in range(end + 1):
        expected = [(o, v) for o, v in every if o >= start and v.startswith("B")]
        assert _read_from(broker.bootstrap, tp, start, "read_committed") == expected, start


def _read_from(bootstrap: str, tp: TopicPartition, start: int, level: str) -> list[tuple[int, str]]:
    """(offset, value) of every record from ``start`` to the end at ``level``."""
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, isolation_level=level, enable_auto_commit=False
    )
    try:
        consumer.assign([tp])
        consumer.seek(tp, start)
        end = consumer.end_offsets([tp])[tp]
        got: list[tuple[int, str]] = []
        deadline = time.monotonic() + 30
        while consumer.position(tp) < end:
            assert time.monotonic() < deadline, (start, got)
            for records in consumer.poll(timeout_ms=200).values():
                got += [(r.offset, r.value.decode()) for r in records]
        return got
    finally:
        consumer.close()


def test_the_same_producer_commits_across_a_broker_kill(tmp_path: Path) -> None:
    """kill -9 of the broker with a transaction open: the restarted coordinator loads it from
    ``__transaction_state`` and the producer, still running, adds to it and commits it."""
    with BrookProcess(tmp_path / "data") as own:
        topic = _topic(own)
        producer = _producer(own, f"app-{uuid.uuid4().hex[:6]}")
        try:
            producer.begin_transaction()
            _send(producer, topic, "before", 3)
            own.kill()
            own.start()
            _send(producer, topic, "after", 3)
            producer.commit_transaction()
        finally:
            producer.close(timeout=5)
        assert read_all(own.bootstrap, topic, PARTITIONS, "read_committed") == sorted(
            [f"before{i}" for i in range(3)] + [f"after{i}" for i in range(3)]
        )


def test_a_timeout_above_the_brokers_maximum_is_refused(broker: BrookProcess) -> None:
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap,
        transactional_id=f"app-{uuid.uuid4().hex[:6]}",
        transaction_timeout_ms=900_001,  # transaction.max.timeout.ms is 900,000
        max_block_ms=30_000,
    )
    try:
        # kafka-python wraps the InitProducerId error it has no handler for in a KafkaError.
        with pytest.raises(KafkaError, match="InvalidTransactionTimeout"):
            producer.init_transactions()
    finally:
        producer.close(timeout=5)


def test_admin_lists_describes_and_aborts_an_open_transaction(broker: BrookProcess) -> None:
    """KafkaAdminClient's KIP-664 calls: ListTransactions and DescribeTransactions show the
    open transaction, DescribeProducers its start offset and coordinator epoch, and an abort
    written with that epoch (WriteTxnMarkers to the leader, as kafka-transactions.sh abort
    does) ends it: read_committed moves past it without its record."""
    topic = _topic(broker)
    tid = f"app-{uuid.uuid4().hex[:6]}"
    producer = _producer(broker, tid)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        producer.begin_transaction()
        _send(producer, topic, "c", 1)
        producer.commit_transaction()
        producer.begin_transaction()
        _send(producer, topic, "open", 1)  # to partition 0, never ended by its producer
        listed = [t for ts in admin.list_transactions().values() for t in ts]
        assert (tid, TransactionState.ONGOING) in [(t.transactional_id, t.state) for t in listed]
        described = admin.describe_transactions([tid])[tid]
        assert described.state == TransactionState.ONGOING
        assert described.topic_partitions == {TopicPartition(topic, 0)}
        tp = TopicPartition(topic, 0)
        (active,) = admin.describe_producers([tp])[tp].active_producers
        assert active.current_transaction_start_offset == 2  # after "c0" and its marker
        assert (active.producer_id, active.producer_epoch) == (
            described.producer_id,
            described.producer_epoch,
        )
        # kafka-python's default coordinator epoch (-1) is older than the one that wrote this
        # producer's last marker: refused, as Kafka's partition leader refuses it.
        with pytest.raises(TransactionCoordinatorFencedError):
            admin.abort_transaction(
                AbortTransactionSpec(tp, active.producer_id, active.producer_epoch, -1)
            )
        assert admin.describe_producers([tp])[tp].active_producers == [active]
        admin.abort_transaction(
            AbortTransactionSpec(
                tp, active.producer_id, active.producer_epoch, active.coordinator_epoch
            )
        )
        (after,) = admin.describe_producers([tp])[tp].active_producers
        assert after.current_transaction_start_offset == -1
        assert read_all(broker.bootstrap, topic, PARTITIONS, "read_committed") == ["c0"]
    finally:
        admin.close()
        producer.close(timeout=5)
