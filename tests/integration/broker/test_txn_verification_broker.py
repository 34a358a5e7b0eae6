"""KIP-890 part 1 on a real broker: a transactional batch for a partition that is not in the
producer's ongoing transaction is refused (INVALID_TXN_STATE, TRANSACTION_ABORTABLE from
Produce v11) and nothing is written; a late batch of an aborted transaction cannot open a
hanging one; AddPartitionsToTxn v4 verify-only answers without adding; with
``transaction.partition.verification.enable=false`` the same batch is written (and hangs);
confluent-kafka's transactional producer works with verification on."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from rawclient import RawClient, create_topic
from support import BrookProcess
from txn_support import READ_COMMITTED, latest
from txn_verify_support import RawTxnProducer, open_transactions, wait_complete

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch


def _verify_only(
    c: RawClient, p: RawTxnProducer, partitions: list[tuple[str, int]], version: int = 4
) -> dict[tuple[str, int], int]:
    resp = c.request(
        ApiKey.ADD_PARTITIONS_TO_TXN,
        version,
        {
            "transactions": [
                {
                    "transactional_id": p.tid,
                    "producer_id": p.pid,
                    "producer_epoch": p.epoch,
                    "verify_only": True,
                    "topics": [{"name": t, "partitions": [i]} for t, i in partitions],
                }
            ]
        },
    )
    assert resp.error_code == Errors.NONE
    (txn,) = resp.results_by_transaction
    assert txn.transactional_id == p.tid
    return {
        (t.name, int(r.partition_index)): int(r.partition_error_code)
        for t in txn.topic_results
        for r in t.results_by_partition
    }


@pytest.fixture
def unverified(tmp_path: Path) -> Iterator[BrookProcess]:
    with BrookProcess(
        tmp_path / "off", {"transaction.partition.verification.enable": "false"}
    ) as broker:
        yield broker


def test_batch_for_partition_not_in_transaction_is_refused(
    brook: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic, partitions=2)
        p = RawTxnProducer(c, f"tx-{uuid.uuid4().hex[:8]}")
        # Partition 0 was never added: refused, nothing written, no transaction opened.
        assert p.send(unique_topic, 0, b"stray") == (Errors.INVALID_TXN_STATE, -1)
        # Produce v11+ clients understand TRANSACTION_ABORTABLE and get it instead.
        assert p.send(unique_topic, 0, b"stray", version=11) == (Errors.TRANSACTION_ABORTABLE, -1)
        assert latest(c, unique_topic, 0) == 0
        assert open_transactions(c, unique_topic) == []
        # Once added, the same batch is written.
        assert p.add(unique_topic, 0) == Errors.NONE
        assert _verify_only(c, p, [(unique_topic, 0), (unique_topic, 1)]) == {
            (unique_topic, 0): Errors.NONE,
            (unique_topic, 1): Errors.TRANSACTION_ABORTABLE,
        }
        assert p.send(unique_topic, 0, b"in") == (Errors.NONE, 0)
        assert p.send(unique_topic, 0, b"in-2") == (Errors.NONE, 1)
        # The other partition is still not in the transaction.
        assert p.send(unique_topic, 1, b"stray") == (Errors.INVALID_TXN_STATE, -1)


def test_late_batch_of_aborted_transaction_cannot_hang(
    brook: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic)
        p = RawTxnProducer(c, f"tx-{uuid.uuid4().hex[:8]}")
        assert p.add(unique_topic, 0) == Errors.NONE
        assert p.send(unique_topic, 0, b"a1") == (Errors.NONE, 0)
        assert p.end(commit=False) == Errors.NONE
        wait_complete(c, p.tid)
        end = latest(c, unique_topic, 0)
        assert end == 2  # a1 and the ABORT marker
        # A batch of the aborted transaction arriving late (same epoch, next sequence).
        assert p.send(unique_topic, 0, b"late") == (Errors.INVALID_TXN_STATE, -1)
        assert latest(c, unique_topic, 0) == end
        assert open_transactions(c, unique_topic) == []
        assert latest(c, unique_topic, READ_COMMITTED) == end
        # The coordinator was not changed by the verification: the next transaction works.
        assert p.add(unique_topic, 0) == Errors.NONE
        assert p.send(unique_topic, 0, b"b1") == (Errors.NONE, end)
        assert p.end(commit=True) == Errors.NONE


def test_verify_only_answers_kafkas_errors(brook: BrookProcess, unique_topic: str) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic)
        p = RawTxnProducer(c, f"tx-{uuid.uuid4().hex[:8]}")
        tp = (unique_topic, 0)
        # Not added: not in the transaction; the request did not add it either.
        assert _verify_only(c, p, [tp], version=5) == {tp: Errors.TRANSACTION_ABORTABLE}
        assert _verify_only(c, p, [tp]) == {tp: Errors.TRANSACTION_ABORTABLE}
        other = RawTxnProducer.__new__(RawTxnProducer)
        other.c, other.tid, other.pid, other.epoch = c, p.tid, p.pid, p.epoch + 1
        assert _verify_only(c, other, [tp]) == {tp: Errors.PRODUCER_FENCED}
        other.pid, other.epoch = p.pid + 1, p.epoch
        assert _verify_only(c, other, [tp]) == {tp: Errors.INVALID_PRODUCER_ID_MAPPING}
        assert _verify_only(c, p, [("no-such-topic", 0)]) == {
            ("no-such-topic", 0): Errors.UNKNOWN_TOPIC_OR_PARTITION
        }
        # v4 without verify_only adds the partition, as v3 does.
        resp = c.request(
            ApiKey.ADD_PARTITIONS_TO_TXN,
            4,
            {
                "transactions": [
                    {
                        "transactional_id": p.tid,
                        "producer_id": p.pid,
                        "producer_epoch": p.epoch,
                        "verify_only": False,
                        "topics": [{"name": unique_topic, "partitions": [0]}],
                    }
                ]
            },
        )
        result = resp.results_by_transaction[0].topic_results[0].results_by_partition[0]
        assert result.partition_error_code == Errors.NONE
        assert _verify_only(c, p, [tp]) == {tp: Errors.NONE}


def test_verification_off_writes_the_stray_batch(
    unverified: BrookProcess, unique_topic: str
) -> None:
    with RawClient(unverified.bootstrap) as c:
        create_topic(c, unique_topic)
        p = RawTxnProducer(c, f"tx-{uuid.uuid4().hex[:8]}")
        # Without verification the batch opens a transaction the coordinator knows nothing
        # about: a hanging transaction holding the last stable offset.
        assert p.send(unique_topic, 0, b"stray") == (Errors.NONE, 0)
        assert open_transactions(c, unique_topic) == [0]
        assert latest(c, unique_topic, READ_COMMITTED) == 0


def test_confluent_transactional_producer_with_verification(
    brook: BrookProcess, unique_topic: str
) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic, partitions=3)
    producer = Producer(
        {"bootstrap.servers": brook.bootstrap, "transactional.id": f"cf-{uuid.uuid4().hex[:6]}"}
    )
    producer.init_transactions(30)
    for commit in (True, False, True):
        producer.begin_transaction()
        for i in range(30):
            producer.produce(unique_topic, f"{commit}-{i}".encode(), partition=i % 3)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    consumer = Consumer(
        {
            "bootstrap.servers": brook.bootstrap,
            "group.id": f"g-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(unique_topic, p, 0) for p in range(3)])
        got: list[bytes] = []
        ended: set[int] = set()
        deadline = time.monotonic() + 30
        while len(ended) < 3:
            assert time.monotonic() < deadline, (ended, len(got))
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                assert msg.error().code() == KafkaError._PARTITION_EOF, msg.error()
                ended.add(msg.partition())
                continue
            got.append(msg.value())
    finally:
        consumer.close()
    assert sorted(got) == sorted(f"True-{i}".encode() for i in range(30) for _ in range(2))


def _txn_batch(pid: int, epoch: int, value: bytes) -> bytes:
    return build_simple_batch(
        [value],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=0,
        transactional=True,
        timestamp=int(time.time() * 1000),
    )


def test_what_nothing_can_verify_is_refused(brook: BrookProcess, unique_topic: str) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic, partitions=2)
        p = RawTxnProducer(c, f"tx-{uuid.uuid4().hex[:8]}")
        assert p.add(unique_topic, 0) == Errors.NONE
        assert p.add(unique_topic, 1) == Errors.NONE

        def produce(tid: str | None, batches: list[bytes]) -> list[int]:
            resp = c.request(
                ApiKey.PRODUCE,
                9,
                {
                    "transactional_id": tid,
                    "acks": -1,
                    "timeout": 30000,
                    "topic_data": [
                        {
                            "name": unique_topic,
                            "partition_data": [
                                {"index": i, "records": b} for i, b in enumerate(batches)
                            ],
                        }
                    ],
                },
            )
            return [int(r.error_code) for r in resp.responses[0].partition_responses]

        # A transactional batch in a produce without a transactional id: nothing verifies it.
        assert produce(None, [_txn_batch(p.pid, p.epoch, b"x")]) == [Errors.INVALID_TXN_STATE]
        # Two producer ids in one request's transactional batches: refused whole, as Kafka.
        two = [_txn_batch(p.pid, p.epoch, b"x"), _txn_batch(p.pid + 1, 0, b"y")]
        assert produce(p.tid, two) == [Errors.INVALID_PRODUCER_ID_MAPPING] * 2
        assert latest(c, unique_topic, 0) == 0
        # Both partitions in the transaction, one request: both verified and written.
        both = [_txn_batch(p.pid, p.epoch, b"a"), _txn_batch(p.pid, p.epoch, b"b")]
        assert produce(p.tid, both) == [Errors.NONE, Errors.NONE]
        assert open_transactions(c, unique_topic) == [0]


def _set_verification(c: RawClient, value: str) -> None:
    """The cluster-wide dynamic default (broker resource "")."""
    request = {
        "resources": [
            {
                "resource_type": 4,
                "resource_name": "",
                "configs": [
                    {
                        "name": "transaction.partition.verification.enable",
                        "config_operation": 0,
                        "value": value,
                    }
                ],
            }
        ],
        "validate_only": False,
    }
    resp = c.request(ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, request)
    assert resp.responses[0].error_code == Errors.NONE, resp


def test_verification_is_a_dynamic_broker_config(brook: BrookProcess, unique_topic: str) -> None:
    with RawClient(brook.bootstrap) as c:
        create_topic(c, unique_topic, partitions=2)
        p = RawTxnProducer(c, f"tx-{uuid.uuid4().hex[:8]}")
        assert p.send(unique_topic, 0, b"stray") == (Errors.INVALID_TXN_STATE, -1)
        _set_verification(c, "false")
        deadline = time.monotonic() + 30
        while (answer := p.send(unique_topic, 0, b"stray")) != (Errors.NONE, 0):
            assert answer == (Errors.INVALID_TXN_STATE, -1), answer
            assert time.monotonic() < deadline, "verification still on"
            time.sleep(0.1)
        _set_verification(c, "true")
        deadline = time.monotonic() + 30
        while (answer := p.send(unique_topic, 1, b"stray")) != (Errors.INVALID_TXN_STATE, -1):
            assert time.monotonic() < deadline, f"verification still off: {answer}"
            time.sleep(0.1)
        assert latest(c, unique_topic, 0) == 1 and open_transactions(c, unique_topic) == [0]
