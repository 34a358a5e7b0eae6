"""Transaction markers on a real broker: WriteTxnMarkers (as a coordinator sends it) ends
transactions produced with transactional batches; read_committed fetches stop at the last
stable offset and are told the aborted transactions (raw Fetch, ListOffsets, Brook's consumer
and confluent-kafka's), read_uncommitted ones see everything; Kafka's errors for stale
markers; DescribeProducers shows the open transaction; all of it after a kill -9."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess
from txn_support import (
    READ_COMMITTED,
    UNVERIFIED,
    TxnProducer,
    fetch_at,
    latest,
    values,
    write_marker,
)

from brook.client.cluster import TopicPartition
from brook.client.consumer import Consumer
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch

# These tests play the transaction coordinator themselves (raw WriteTxnMarkers).


@pytest.fixture
def brook(tmp_path: Path) -> Iterator[BrookProcess]:
    with BrookProcess(tmp_path / "data", UNVERIFIED) as broker:
        yield broker


def _scenario(c: RawClient, topic: str) -> tuple[TxnProducer, TxnProducer]:
    """offsets: 0 a1 (A), 1 b1 (B), 2 a2 (A), 3 ABORT(A), 4 b2 (B), 5 COMMIT(B), 6 c1 (C, open)"""
    a, b = TxnProducer(c, topic), TxnProducer(c, topic)
    assert a.send(b"a1") == (0, 0)
    assert b.send(b"b1") == (0, 1)
    assert a.send(b"a2") == (0, 2)
    # Nothing decided yet: a read_committed fetch gets nothing, the LSO is A's first offset.
    part = fetch_at(c, topic, READ_COMMITTED)
    assert (part.high_watermark, part.last_stable_offset, values(part)) == (3, 0, [])
    assert latest(c, topic, READ_COMMITTED) == 0 and latest(c, topic, 0) == 3
    assert a.end(commit=False) == Errors.NONE
    assert b.send(b"b2") == (0, 4)
    assert b.end(commit=True) == Errors.NONE
    return a, b


def _check_decided(c: RawClient, topic: str, a: TxnProducer, open_from: int) -> None:
    committed = fetch_at(c, topic, READ_COMMITTED)
    assert committed.last_stable_offset == open_from
    assert [(t.producer_id, t.first_offset) for t in committed.aborted_transactions] == [(a.pid, 0)]
    # The broker returns whole batches below the LSO; the client drops the aborted ones.
    assert values(committed) == [b"a1", b"b1", b"a2", b"b2"]
    uncommitted = fetch_at(c, topic, 0)
    assert uncommitted.aborted_transactions is None
    assert uncommitted.last_stable_offset == open_from
    assert latest(c, topic, READ_COMMITTED) == open_from


def test_markers_decide_what_read_committed_fetches_see(
    brook: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic)
        a, _ = _scenario(c, unique_topic)
        _check_decided(c, unique_topic, a, open_from=6)
        assert TxnProducer(c, unique_topic).send(b"c1") == (0, 6)
        _check_decided(c, unique_topic, a, open_from=6)
        assert latest(c, unique_topic, 0) == 7
    brook.restart(clean=False)
    with RawClient(brook.bootstrap) as c:
        _check_decided(c, unique_topic, a, open_from=6)


def test_brooks_and_confluents_read_committed_consumers(
    brook: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic)
        _scenario(c, unique_topic)
        TxnProducer(c, unique_topic).send(b"open")  # holds the LSO at 6

    def brook_read(level: str) -> list[bytes]:
        consumer = Consumer({"bootstrap.servers": brook.bootstrap, "isolation.level": level})
        try:
            consumer.assign([TopicPartition(unique_topic, 0)])
            consumer.seek(TopicPartition(unique_topic, 0), 0)
            got: list[bytes] = []
            deadline = time.monotonic() + 10
            want = 2 if level == "read_committed" else 5
            while len(got) < want and time.monotonic() < deadline:
                got += [r.value for r in consumer.poll(200)]
            got += [r.value for r in consumer.poll(300)]  # nothing more may come
            return got
        finally:
            consumer.close()

    def confluent_read(level: str) -> list[bytes]:
        consumer = confluent_kafka.Consumer(
            {
                "bootstrap.servers": brook.bootstrap,
                "group.id": f"txn-{uuid.uuid4().hex}",
                "isolation.level": level,
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
        try:
            consumer.assign([confluent_kafka.TopicPartition(unique_topic, 0, 0)])
            got: list[bytes] = []
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                msg = consumer.poll(0.2)
                if msg is None:
                    continue
                if msg.error():
                    assert msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF
                    return got
                got.append(msg.value())
            raise AssertionError(f"no end of partition after {got}")
        finally:
            consumer.close()

    assert brook_read("read_committed") == [b"b1", b"b2"]
    assert brook_read("read_uncommitted") == [b"a1", b"b1", b"a2", b"b2", b"open"]
    assert confluent_read("read_committed") == [b"b1", b"b2"]
    assert confluent_read("read_uncommitted") == [b"a1", b"b1", b"a2", b"b2", b"open"]


def test_stale_markers_get_kafkas_errors(brook: BrookProcess, unique_topic: str) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic)
        p = TxnProducer(c, unique_topic)
        p.send(b"x")
        assert p.end(commit=True, coordinator_epoch=3) == Errors.NONE
        end = latest(c, unique_topic, 0)
        assert p.end(commit=True, coordinator_epoch=2) == Errors.TRANSACTION_COORDINATOR_FENCED
        # A fencing abort under a bumped epoch; then the old epoch is refused everywhere.
        p.send(b"y")
        assert p.end(commit=False, epoch=p.epoch + 1, coordinator_epoch=3) == Errors.NONE
        assert p.end(commit=True, coordinator_epoch=3) == Errors.INVALID_PRODUCER_EPOCH
        assert p.send(b"zombie")[0] == Errors.INVALID_PRODUCER_EPOCH
        assert latest(c, unique_topic, 0) == end + 2
        missing = write_marker(c, p.pid, p.epoch + 1, True, [(f"no-{unique_topic}", 0)], 3)
        assert missing == [Errors.UNKNOWN_TOPIC_OR_PARTITION]
        # Non-transactional data inside an open transaction.
        q = TxnProducer(c, unique_topic)
        q.send(b"open")
        plain = build_simple_batch(
            [b"plain"], producer_id=q.pid, producer_epoch=q.epoch, base_sequence=q.seq
        )
        part = produce(c, unique_topic, 0, plain).responses[0].partition_responses[0]
        assert part.error_code == Errors.INVALID_TXN_STATE
        assert fetch(c, unique_topic, 0, 0).responses[0].partitions[0].error_code == 0


def describe_producers(c: RawClient, topic: str, partitions: list[int]) -> list[Any]:
    resp = c.request(61, 0, {"topics": [{"name": topic, "partition_indexes": partitions}]})
    return list(resp.topics[0].partitions)


def test_describe_producers_shows_open_transactions(brook: BrookProcess, unique_topic: str) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic)
        done, hanging = TxnProducer(c, unique_topic), TxnProducer(c, unique_topic)
        done.send(b"a", b"b")
        assert done.end(commit=True, coordinator_epoch=4) == Errors.NONE
        hanging.send(b"c")  # offset 3: its marker never comes
        (part,) = describe_producers(c, unique_topic, [0])
        assert part.error_code == 0
        states = {p.producer_id: p for p in part.active_producers}
        assert states.keys() == {done.pid, hanging.pid}
        d, h = states[done.pid], states[hanging.pid]
        assert (d.producer_epoch, d.last_sequence, d.coordinator_epoch) == (done.epoch, 1, 4)
        assert d.current_txn_start_offset == -1
        assert (h.last_sequence, h.current_txn_start_offset) == (0, 3)
        assert h.last_timestamp > 0
        missing = describe_producers(c, f"no-{unique_topic}", [0])
        assert missing[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert describe_producers(c, unique_topic, [5])[0].error_code == (
            Errors.UNKNOWN_TOPIC_OR_PARTITION
        )
    brook.restart(clean=False)
    with RawClient(brook.bootstrap) as c:
        (part,) = describe_producers(c, unique_topic, [0])
        after = {p.producer_id: p.current_txn_start_offset for p in part.active_producers}
        assert after == {done.pid: -1, hanging.pid: 3}
