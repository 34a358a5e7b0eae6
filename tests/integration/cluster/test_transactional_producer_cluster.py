"""Brook's transactional producer on a real 3-node ``brook cluster`` (RF-3 topics and
``__transaction_state``): transactions over partitions led by every broker, committed and
aborted, as Brook's and confluent-kafka's consumers see them under both isolation levels; a
second producer with the same transactional id fencing the first; and the same producer going
on after kill -9 of the broker coordinating its transactional id (it finds the new
coordinator and commits there)."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from loss_checker import wait_fully_replicated
from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster
from txn_support import read_values

from brook.client import Consumer, Producer, ProducerFencedError, TopicPartition
from brook.client.admin import Admin, NewTopic
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

PARTITIONS = 6


def _coordinator(bootstrap: str, tid: str) -> tuple[int, int]:
    with RawClient(bootstrap) as client:
        resp = client.request(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]}
        )
    (found,) = resp.coordinators
    return int(found.error_code), int(found.node_id)


def _send(producer: Producer, topic: str, prefix: str) -> None:
    for p in range(PARTITIONS):
        producer.send(topic, f"{prefix}{p}".encode(), partition=p)


def _read(bootstrap: str, topic: str, level: str) -> list[str]:
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with Consumer({"bootstrap.servers": bootstrap, "isolation.level": level}) as consumer:
        consumer.assign(tps)
        consumer.seek_to_beginning()
        ends = consumer.end_offsets(tps)
        got: list[str] = []
        deadline = time.monotonic() + 90
        while any(consumer.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, (ends, got)
            got += [r.value.decode() for r in consumer.poll(200)]
        return sorted(got)


def _read_confluent(bootstrap: str, topic: str, level: str) -> list[str]:
    return read_values(bootstrap, topic, PARTITIONS, level, timeout=90)


def _names(*prefixes: str) -> list[str]:
    return sorted(f"{prefix}{p}" for prefix in prefixes for p in range(PARTITIONS))


def test_brook_transactions_over_three_brokers_fencing_and_coordinator_failover(
    tmp_path: Path,
) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        bootstrap = cluster.bootstrap_servers
        topic = f"t-{uuid.uuid4().hex[:8]}"
        tid = f"app-{uuid.uuid4().hex[:8]}"
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics(
                [NewTopic(topic, PARTITIONS, 3, configs={"min.insync.replicas": "2"})]
            )
            wait_fully_replicated(admin, topic)
            leaders = {p.leader for p in admin.describe_topics([topic])[topic].partitions}
        assert len(leaders) == 3  # every transaction touches partitions on every broker

        first = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
        try:
            first.init_transactions(60)
            first.begin_transaction()
            _send(first, topic, "one-")
            first.commit_transaction(60)
            first.begin_transaction()
            _send(first, topic, "aborted-")
            first.flush(60)
            first.abort_transaction(60)
            first.begin_transaction()
            _send(first, topic, "zombie-")
            first.flush(60)

            second = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid})
            second.init_transactions(60)  # fences the first and aborts its transaction
            with pytest.raises(ProducerFencedError):
                first.commit_transaction(60)
        finally:
            first.close()

        try:
            second.begin_transaction()
            _send(second, topic, "two-")
            second.commit_transaction(60)
            assert _read(bootstrap, topic, "read_committed") == _names("one-", "two-")
            assert _read_confluent(bootstrap, topic, "read_committed") == _names("one-", "two-")
            everything = _names("one-", "aborted-", "zombie-", "two-")
            assert _read(bootstrap, topic, "read_uncommitted") == everything
            assert _read_confluent(bootstrap, topic, "read_uncommitted") == everything

            # kill -9 of the coordinator: the producer finds the next one and goes on.
            with Admin({"bootstrap.servers": bootstrap}) as admin:
                wait_fully_replicated(admin, "__transaction_state")
            error, coordinator = _coordinator(bootstrap.split(",")[0], tid)
            assert error == Errors.NONE
            cluster.kill(coordinator)
            survivors = ",".join(
                cluster.node(n).broker_address for n in (1, 2, 3) if n != coordinator
            )

            def moved() -> int | None:
                code, node = _coordinator(survivors.split(",")[0], tid)
                return node if code == Errors.NONE and node != coordinator else None

            wait_for("a new transaction coordinator", moved, timeout=90)
            second.begin_transaction()
            _send(second, topic, "three-")
            second.commit_transaction(90)
        finally:
            second.close(5)
        assert _read(survivors, topic, "read_committed") == _names("one-", "two-", "three-")
