"""kill -9 of the transaction coordinator's broker on a 3-node ``brook cluster`` while a
partition leader on another broker must verify a transaction's first batch with it (KIP-890):
the producer is told NOT_ENOUGH_REPLICAS (which clients retry) and nothing is written until the
coordinator's successor has loaded the transaction; then the retried batch is verified and
written, and the transaction commits through the new coordinator."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from loss_checker import wait_fully_replicated
from rawclient import RawClient
from support import local_cluster
from txn_support import READ_COMMITTED, latest
from txn_verify_support import RawTxnProducer, wait_complete

from brook.client.admin import Admin, NewTopic
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

FAST = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}


def _coordinator(c: RawClient, tid: str, not_on: int | None = None) -> int:
    deadline = time.monotonic() + 60
    while True:
        resp = c.request(ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]})
        (found,) = resp.coordinators
        if found.error_code == Errors.NONE and found.node_id != not_on:
            return int(found.node_id)
        assert time.monotonic() < deadline, found
        time.sleep(0.2)


def test_verification_waits_out_a_killed_coordinator(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        topic = f"t-{uuid.uuid4().hex[:8]}"
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(topic, 1, 3)])
            wait_fully_replicated(admin, topic)
            leader = int(admin.describe_topics([topic])[topic].partitions[0].leader)
        with RawClient(cluster.node(leader).broker_address) as to_leader:
            tid = next(
                t
                for t in (f"tx-{uuid.uuid4().hex[:8]}" for _ in range(200))
                if _coordinator(to_leader, t) != leader
            )
            old = _coordinator(to_leader, tid)
            with RawClient(cluster.node(old).broker_address) as to_old:
                p = RawTxnProducer(to_old, tid, leader=to_leader)
                assert p.add(topic, 0) == Errors.NONE
                cluster.kill(old)
                answers: list[int] = []
                deadline = time.monotonic() + 90
                while True:
                    code, offset = p.send(topic, 0, b"a1")
                    answers.append(code)
                    if code == Errors.NONE:
                        break
                    assert code == Errors.NOT_ENOUGH_REPLICAS, answers
                    assert latest(to_leader, topic, 0) == 0  # nothing written meanwhile
                    assert time.monotonic() < deadline, answers
                    time.sleep(0.2)
                assert offset == 0
                # the first attempt found the coordinator dead: it could not be verified
                assert answers[0] == Errors.NOT_ENOUGH_REPLICAS, answers
            new = _coordinator(to_leader, tid, not_on=old)
            with RawClient(cluster.node(new).broker_address) as to_new:
                p.c = to_new
                assert p.end(commit=True) == Errors.NONE
                wait_complete(to_new, tid)
            assert latest(to_leader, topic, READ_COMMITTED) == 2  # a1 and its COMMIT marker
