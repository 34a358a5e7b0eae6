"""KIP-890 part 1 on a real 3-node ``brook cluster`` with the transaction coordinator on
another broker than the partition leader: the leader asks it over AddPartitionsToTxn v5
(verify-only) and refuses a batch for a partition not in the transaction, or a late batch
of an aborted one, while the same batch after AddPartitionsToTxn is written; confluent-kafka's
transactional producer commits across partitions led by every broker."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from confluent_kafka import Producer
from loss_checker import wait_fully_replicated
from quorum_support import FAST
from rawclient import RawClient
from support import local_cluster
from txn_support import READ_COMMITTED, latest, read_to_end
from txn_verify_support import RawTxnProducer, open_transactions, wait_complete

from brook.client.admin import Admin, NewTopic
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

PARTITIONS = 3


def _coordinator(c: RawClient, tid: str) -> int:
    deadline = time.monotonic() + 60
    while True:
        resp = c.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
        (found,) = resp.coordinators
        if found.error_code == Errors.NONE:
            return int(found.node_id)
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def _leaders(admin: Admin, topic: str) -> dict[int, int]:
    parts = admin.describe_topics([topic])[topic].partitions
    return {int(p.partition): int(p.leader) for p in parts}


def _read_committed(bootstrap: str, topic: str) -> list[bytes]:
    return sorted(m.value() for m in read_to_end(bootstrap, topic, PARTITIONS))


def test_leader_verifies_with_a_coordinator_on_another_broker(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        topic = f"t-{uuid.uuid4().hex[:8]}"
        bootstrap = cluster.bootstrap_servers
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic(topic, PARTITIONS, 3)])
            wait_fully_replicated(admin, topic)
            leaders = _leaders(admin, topic)
        leader = leaders[0]
        with RawClient(cluster.node(leader).broker_address) as to_leader:
            # a transactional id whose coordinator is another broker than partition 0's leader
            tid = next(
                t
                for t in (f"tx-{uuid.uuid4().hex[:8]}" for _ in range(200))
                if _coordinator(to_leader, t) != leader
            )
            coordinator = _coordinator(to_leader, tid)
            with RawClient(cluster.node(coordinator).broker_address) as to_coordinator:
                p = RawTxnProducer(to_coordinator, tid, leader=to_leader)
                assert p.send(topic, 0, b"stray") == (Errors.INVALID_TXN_STATE, -1)
                assert p.send(topic, 0, b"stray", version=11) == (Errors.TRANSACTION_ABORTABLE, -1)
                assert latest(to_leader, topic, 0) == 0
                assert p.add(topic, 0) == Errors.NONE
                assert p.send(topic, 0, b"a1") == (Errors.NONE, 0)
                assert p.end(commit=False) == Errors.NONE
                wait_complete(to_coordinator, tid)
                end = latest(to_leader, topic, 0)
                assert end == 2  # a1 and the ABORT marker
                assert p.send(topic, 0, b"late") == (Errors.INVALID_TXN_STATE, -1)
                assert open_transactions(to_leader, topic) == []
                assert latest(to_leader, topic, READ_COMMITTED) == end
                assert p.add(topic, 0) == Errors.NONE
                assert p.send(topic, 0, b"b1") == (Errors.NONE, end)
                assert p.end(commit=True) == Errors.NONE
        # confluent-kafka through the cluster: every partition's leader verifies its first batch
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": f"cf-{tid}"})
        producer.init_transactions(60)
        for commit in (True, False, True):
            producer.begin_transaction()
            for i in range(PARTITIONS * 5):
                producer.produce(topic, f"{commit}-{i}".encode(), partition=i % PARTITIONS)
            if commit:
                producer.commit_transaction(60)
            else:
                producer.abort_transaction(60)
        expected = sorted([b"b1"] + [f"True-{i}".encode() for i in range(PARTITIONS * 5)] * 2)
        assert _read_committed(bootstrap, topic) == expected
