"""A transactional client that disconnects while the coordinator's write for its request is
still being replicated (a follower of the ``__transaction_state`` partition is paused, so the
acks=all append waits) must not leave its transactional id stuck: the write's outcome still
reaches the coordinator's state, and the next InitProducerId for the id is served instead of
getting CONCURRENT_TRANSACTIONS forever (the pipeline of the exactly-once checker killed
during its InitProducerId)."""

from __future__ import annotations

import uuid
from pathlib import Path

from loss_checker import wait_fully_replicated
from quorum_support import wait_for
from rawclient import RawClient
from support import local_cluster

from brook.broker.group.store import partition_for
from brook.broker.txn.log_records import TRANSACTION_STATE_TOPIC
from brook.client.admin import Admin
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

INIT = {"transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1}


def _init_request(tid: str) -> dict[str, object]:
    return {"transactional_id": tid, **INIT}


def _init(address: str, tid: str) -> int:
    with RawClient(address, timeout=30) as client:
        resp = client.request(ApiKey.INIT_PRODUCER_ID, 4, _init_request(tid))
    return int(resp.error_code)


def _coordinator(address: str, tid: str) -> int | None:
    with RawClient(address) as client:
        resp = client.request(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": 1, "coordinator_keys": [tid]}
        )
    (found,) = resp.coordinators
    return int(found.node_id) if found.error_code == Errors.NONE else None


def test_a_client_gone_mid_write_does_not_leave_its_id_pending(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3) as cluster:
        tid = f"app-{uuid.uuid4().hex[:8]}"
        first = cluster.bootstrap_servers.split(",")[0]
        coordinator = wait_for("a transaction coordinator", lambda: _coordinator(first, tid))
        address = cluster.node(coordinator).broker_address
        assert wait_for("the first InitProducerId", lambda: _init(address, tid) == Errors.NONE)
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            wait_fully_replicated(admin, TRANSACTION_STATE_TOPIC)
            partitions = admin.describe_topics([TRANSACTION_STATE_TOPIC])[
                TRANSACTION_STATE_TOPIC
            ].partitions
        info = partitions[partition_for(tid, len(partitions))]
        assert info.leader == coordinator
        quorum = cluster.describe_quorum()
        assert quorum is not None
        follower = next(r for r in info.replicas if r != coordinator and r != quorum.leader_id)

        cluster.pause(follower)  # the bump's acks=all append now waits for it
        try:
            gone = RawClient(address)
            gone.request(ApiKey.INIT_PRODUCER_ID, 4, _init_request(tid), expect_response=False)
            # another client sees that request's write pending, then the first one goes away
            wait_for(
                "the write pending",
                lambda: _init(address, tid) == Errors.CONCURRENT_TRANSACTIONS,
            )
            gone.close()
        finally:
            cluster.resume(follower)

        # the abandoned write completes or fails, either way the id is served again
        assert wait_for(
            "InitProducerId served again",
            lambda: _init(address, tid) == Errors.NONE,
            timeout=30,
        )
