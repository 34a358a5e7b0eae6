"""confluent-kafka's transactional producer on a real 3-node ``brook cluster`` (RF-3 topics and
``__transaction_state``): a transaction spans partitions led by every broker; kill -9 of the
broker coordinating the transactional id, with one transaction committed and the next left
open, moves the coordinator to the new leader of its ``__transaction_state`` partition, which
loads it; the producer's successor fences and aborts the open one, and read_committed
consumers on the survivors see exactly the committed transactions."""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka import Producer
from loss_checker import wait_fully_replicated
from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster
from txn_support import read_values

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
        producer.produce(topic, f"{prefix}{p}".encode(), partition=p)
    producer.flush(60)


def _read_committed(bootstrap: str, topic: str) -> list[str]:
    return read_values(bootstrap, topic, PARTITIONS, timeout=90)


def test_transactions_survive_the_death_of_their_coordinator(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        topic = f"t-{uuid.uuid4().hex[:8]}"
        tid = f"app-{uuid.uuid4().hex[:8]}"
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.create_topics(
                [NewTopic(topic, PARTITIONS, 3, configs={"min.insync.replicas": "2"})]
            )
            wait_fully_replicated(admin, topic)
            leaders = {p.leader for p in admin.describe_topics([topic])[topic].partitions}
        assert len(leaders) == 3  # the transaction's markers go to every broker

        producer = Producer(
            {"bootstrap.servers": cluster.bootstrap_servers, "transactional.id": tid}
        )
        producer.init_transactions(60)
        producer.begin_transaction()
        _send(producer, topic, "one-")
        producer.commit_transaction(60)
        producer.begin_transaction()
        _send(producer, topic, "open-")  # left open

        first = cluster.bootstrap_servers.split(",")[0]
        error, coordinator = _coordinator(first, tid)
        assert error == Errors.NONE
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            wait_fully_replicated(admin, "__transaction_state")
        cluster.kill(coordinator)
        survivors = ",".join(cluster.node(n).broker_address for n in (1, 2, 3) if n != coordinator)

        def moved() -> int | None:
            code, node = _coordinator(survivors.split(",")[0], tid)
            return node if code == Errors.NONE and node != coordinator else None

        wait_for("a new transaction coordinator", moved, timeout=90)
        successor = Producer({"bootstrap.servers": survivors, "transactional.id": tid})
        successor.init_transactions(90)  # fences the open transaction: it is aborted
        successor.begin_transaction()
        _send(successor, topic, "two-")
        successor.commit_transaction(90)
        expected = sorted(
            [f"one-{p}" for p in range(PARTITIONS)] + [f"two-{p}" for p in range(PARTITIONS)]
        )
        assert _read_committed(survivors, topic) == expected
