"""A client that disconnects while a coordinator's write for its request is still being
replicated (a follower of the internal topic's partition is paused, so the acks=all append
waits) must not leave the coordinator's state behind its log:

- the transaction coordinator: the write's outcome still reaches the transactional id's state,
  and the next InitProducerId is served instead of getting CONCURRENT_TRANSACTIONS forever
  (the pipeline of the exactly-once checker killed during its InitProducerId);
- the group coordinator: an OffsetCommit written to ``__consumer_offsets`` is applied, so
  OffsetFetch answers it (not the previous offset until the next reload).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from loss_checker import wait_fully_replicated
from quorum_support import wait_for
from rawclient import RawClient
from support import local_cluster

from brook.broker.group.store import partition_for
from brook.broker.txn.log_records import TRANSACTION_STATE_TOPIC
from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

INIT = {"transaction_timeout": 60000, "producer_id": -1, "producer_epoch": -1}
OFFSETS_TOPIC = "__consumer_offsets"


def _init_request(tid: str) -> dict[str, object]:
    return {"transactional_id": tid, **INIT}


def _init(address: str, tid: str) -> int:
    with RawClient(address, timeout=30) as client:
        resp = client.request(ApiKey.INIT_PRODUCER_ID, 4, _init_request(tid))
    return int(resp.error_code)


def _coordinator(address: str, key: str, key_type: int) -> int | None:
    with RawClient(address) as client:
        resp = client.request(
            ApiKey.FIND_COORDINATOR, 4, {"key_type": key_type, "coordinator_keys": [key]}
        )
    (found,) = resp.coordinators
    return int(found.node_id) if found.error_code == Errors.NONE else None


def _quiet_follower(cluster: LocalCluster, topic: str, key: str, leader: int) -> tuple[int, int]:
    """(a follower, the partition) of ``key``'s partition of ``topic`` (led by ``leader``),
    all replicas in sync; the follower is not the metadata quorum's leader: pausing it holds
    acks=all appends."""
    with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
        wait_fully_replicated(admin, topic)
        partitions = admin.describe_topics([topic])[topic].partitions
    info = partitions[partition_for(key, len(partitions))]
    assert info.leader == leader
    quorum = cluster.describe_quorum()
    assert quorum is not None
    follower = next(r for r in info.replicas if r != leader and r != quorum.leader_id)
    return follower, info.partition


def test_a_client_gone_mid_write_does_not_leave_its_id_pending(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3) as cluster:
        tid = f"app-{uuid.uuid4().hex[:8]}"
        first = cluster.bootstrap_servers.split(",")[0]
        coordinator = wait_for("a transaction coordinator", lambda: _coordinator(first, tid, 1))
        address = cluster.node(coordinator).broker_address
        assert wait_for("the first InitProducerId", lambda: _init(address, tid) == Errors.NONE)
        follower, _ = _quiet_follower(cluster, TRANSACTION_STATE_TOPIC, tid, coordinator)

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


def _commit_request(group: str, topic: str, offset: int) -> dict[str, Any]:
    partition = {
        "partition_index": 0,
        "committed_offset": offset,
        "committed_leader_epoch": -1,
        "committed_metadata": "",
    }
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "group_instance_id": None,
        "topics": [{"name": topic, "partitions": [partition]}],
    }


def _commit(address: str, group: str, topic: str, offset: int) -> int:
    with RawClient(address) as client:
        resp = client.request(ApiKey.OFFSET_COMMIT, 8, _commit_request(group, topic, offset))
    return int(resp.topics[0].partitions[0].error_code)


def _fetch(address: str, group: str, topic: str) -> int:
    with RawClient(address) as client:
        resp = client.request(
            ApiKey.OFFSET_FETCH,
            7,
            {
                "group_id": group,
                "topics": [{"name": topic, "partition_indexes": [0]}],
                "require_stable": False,
            },
        )
    (part,) = resp.topics[0].partitions
    assert part.error_code == Errors.NONE
    return int(part.committed_offset)


def _log_end_past_hw(address: str, topic: str, partition: int) -> bool:
    """Whether the leader holds records not yet replicated (ListOffsets latest as a replica
    sees it, the log end, against a consumer's, the high watermark)."""

    def latest(replica_id: int) -> int:
        request = {
            "replica_id": replica_id,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        }
        with RawClient(address) as client:
            resp = client.request(ApiKey.LIST_OFFSETS, 7, request)
        return int(resp.topics[0].partitions[0].offset)

    return latest(1) > latest(-1)


def test_an_offset_commit_of_a_client_gone_mid_write_is_applied(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3) as cluster:
        topic, group = f"t-{uuid.uuid4().hex[:8]}", f"g-{uuid.uuid4().hex[:8]}"
        with Admin({"bootstrap.servers": cluster.bootstrap_servers}) as admin:
            admin.create_topics([NewTopic(topic, 1, 3)])
        first = cluster.bootstrap_servers.split(",")[0]
        coordinator = wait_for("a group coordinator", lambda: _coordinator(first, group, 0))
        address = cluster.node(coordinator).broker_address
        assert wait_for("the first commit", lambda: _commit(address, group, topic, 1) == 0)
        assert _fetch(address, group, topic) == 1
        follower, index = _quiet_follower(cluster, OFFSETS_TOPIC, group, coordinator)

        cluster.pause(follower)  # the commit's acks=all append now waits for it
        try:
            gone = RawClient(address)
            request = _commit_request(group, topic, 42)
            gone.request(ApiKey.OFFSET_COMMIT, 8, request, expect_response=False)
            wait_for("the commit appended", lambda: _log_end_past_hw(address, OFFSETS_TOPIC, index))
            gone.close()
        finally:
            cluster.resume(follower)

        # the commit is in the log: the coordinator answers it, as after a reload
        assert wait_for("the commit applied", lambda: _fetch(address, group, topic) == 42, 30)
