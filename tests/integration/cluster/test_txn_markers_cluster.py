"""Transaction markers on a real 3-node ``brook cluster``: markers written to an RF-3
partition's leader reach its followers, and after kill -9 of that leader the new leader answers
read_committed fetches with the same last stable offset and aborted transactions; confluent-
kafka's read_committed consumer through the cluster sees only committed records."""

from __future__ import annotations

import uuid
from pathlib import Path

from loss_checker import wait_fully_replicated
from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster
from txn_support import READ_COMMITTED, UNVERIFIED, TxnProducer, fetch_at, read_to_end, values

from brook.client.admin import Admin, NewTopic
from brook.protocol.errors import Errors


def _leader(admin: Admin, topic: str) -> int:
    return int(admin.describe_topics([topic])[topic].partitions[0].leader)


def _read_committed(bootstrap: str, topic: str) -> list[bytes]:
    return [m.value() for m in read_to_end(bootstrap, topic)]


def test_markers_replicate_and_outlive_their_leader(tmp_path: Path) -> None:
    # the test writes the markers itself: no coordinator to verify its batches (KIP-890)
    overrides = {**FAST, **UNVERIFIED}
    with local_cluster(tmp_path / "c", nodes=3, overrides=overrides) as cluster:
        topic = f"t-{uuid.uuid4().hex[:8]}"
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(topic, 1, 3, configs={"min.insync.replicas": "2"})])
            wait_fully_replicated(admin, topic)
            leader = _leader(admin, topic)
        with RawClient(cluster.node(leader).broker_address) as c:
            a, b = TxnProducer(c, topic), TxnProducer(c, topic)
            assert a.send(b"a1") == (0, 0)
            assert b.send(b"b1") == (0, 1)
            assert a.end(commit=False, coordinator_epoch=1) == Errors.NONE  # 2
            assert b.send(b"b2") == (0, 3)
            assert b.end(commit=True, coordinator_epoch=1) == Errors.NONE  # 4
            assert TxnProducer(c, topic).send(b"open") == (0, 5)
            before = fetch_at(c, topic, READ_COMMITTED)
        assert before.last_stable_offset == 5
        assert [(t.producer_id, t.first_offset) for t in before.aborted_transactions] == [
            (a.pid, 0)
        ]

        survivor = next(n for n in (1, 2, 3) if n != leader)
        cluster.kill(leader)
        with Admin({"bootstrap.servers": cluster.node(survivor).broker_address}) as admin:
            new_leader = wait_for(
                "a new leader",
                lambda: (lambda n: n if n not in (-1, leader) else None)(_leader(admin, topic)),
                timeout=60,
            )

        def answered() -> object | None:
            with RawClient(cluster.node(new_leader).broker_address) as c:
                part = fetch_at(c, topic, READ_COMMITTED)
            return part if part.error_code == 0 and part.last_stable_offset == 5 else None

        after = wait_for("the new leader's last stable offset", answered, timeout=60)
        assert [(t.producer_id, t.first_offset) for t in after.aborted_transactions] == [(a.pid, 0)]
        assert values(after) == [b"a1", b"b1", b"b2"]  # whole batches; clients drop a1
        survivors = ",".join(cluster.node(n).broker_address for n in (1, 2, 3) if n != leader)
        assert _read_committed(survivors, topic) == [b"b1", b"b2"]
