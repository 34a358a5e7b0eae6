"""The Raft RPCs on a real controller listener answer bad requests with Kafka's error codes:
a cluster id that differs, a stale or a future epoch, another partition than the metadata
one, a malformed position; and a broker listener does not serve them at all."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from quorum_support import FAST, wait_for
from support import local_cluster

from brook.cli.local_cluster import LocalCluster
from brook.net.connection import NodeConnection, NodeUnavailable
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.raft.messages import BeginQuorumEpochRequest, FetchRequest, VoteRequest
from brook.raft.wire import encode_request


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    with local_cluster(tmp_path_factory.mktemp("rpc") / "c", nodes=3, overrides=FAST) as c:
        wait_for("a leader", c.describe_quorum)
        yield c


def _send(port: int, api: ApiKey, version: int, request: dict[str, Any]) -> Any:
    async def go() -> Any:
        conn = NodeConnection("127.0.0.1", port, "rpc-test")
        try:
            return await conn.send(api, version, request, 5)
        finally:
            conn.close()

    return asyncio.run(go())


def _partition(response: Any) -> Any:
    return response.topics[0].partitions[0]


def test_vote_errors(cluster: LocalCluster) -> None:
    q = wait_for("a leader", cluster.describe_quorum)
    follower = next(n for n in cluster.nodes if n.node_id != q.leader_id)
    port = follower.ports["CONTROLLER"]
    vote = VoteRequest(cluster.cluster_id, 99, q.leader_epoch + 1, q.leader_epoch, 0, False)
    wrong_cluster = {**encode_request(vote), "cluster_id": "other-cluster"}
    assert _send(port, ApiKey.VOTE, 2, wrong_cluster).error_code == Errors.INCONSISTENT_CLUSTER_ID
    # a last epoch not below the candidate's epoch is a malformed vote
    malformed = VoteRequest(cluster.cluster_id, 99, q.leader_epoch, q.leader_epoch, 5, False)
    answer = _partition(_send(port, ApiKey.VOTE, 2, encode_request(malformed)))
    assert answer.error_code == Errors.INVALID_REQUEST and not answer.vote_granted
    # an announcement of a leader for an older epoch is fenced
    stale = BeginQuorumEpochRequest(cluster.cluster_id, 99, q.leader_epoch - 1)
    answer = _partition(_send(port, ApiKey.BEGIN_QUORUM_EPOCH, 1, encode_request(stale)))
    assert answer.error_code == Errors.FENCED_LEADER_EPOCH
    assert answer.leader_id == q.leader_id and answer.leader_epoch == q.leader_epoch
    other_topic = encode_request(vote)
    other_topic["topics"][0]["topic_name"] = "not-metadata"
    assert _send(port, ApiKey.VOTE, 2, other_topic).error_code == Errors.INVALID_REQUEST
    # a candidate of the current epoch: the follower has a leader and keeps it
    current = VoteRequest(cluster.cluster_id, 99, q.leader_epoch, q.leader_epoch - 1, 10**9, False)
    answer = _partition(_send(port, ApiKey.VOTE, 2, encode_request(current)))
    assert not answer.vote_granted and answer.leader_id == q.leader_id
    after = cluster.describe_quorum()
    assert after is not None and after.leader_epoch == q.leader_epoch


def test_fetch_errors(cluster: LocalCluster) -> None:
    q = wait_for("a leader", cluster.describe_quorum)
    leader = cluster.node(q.leader_id)
    port = leader.ports["CONTROLLER"]

    def fetch(epoch: int, offset: int = 0, last: int = 0, cluster_id: str | None = None) -> Any:
        request = FetchRequest(cluster_id or cluster.cluster_id, 99, epoch, offset, last, 0, 1024)
        return _send(port, ApiKey.FETCH, 17, encode_request(request))

    assert fetch(q.leader_epoch, cluster_id="x").error_code == Errors.INCONSISTENT_CLUSTER_ID
    stale = fetch(q.leader_epoch - 1).responses[0].partitions[0]
    assert stale.error_code == Errors.FENCED_LEADER_EPOCH
    future = fetch(q.leader_epoch + 1).responses[0].partitions[0]
    assert future.error_code == Errors.UNKNOWN_LEADER_EPOCH
    bad = fetch(q.leader_epoch, offset=-5).responses[0].partitions[0]
    assert bad.error_code == Errors.INVALID_REQUEST
    follower = next(n for n in cluster.nodes if n.node_id != q.leader_id)
    request = FetchRequest(cluster.cluster_id, 99, q.leader_epoch, 0, 0, 0, 1024)
    not_leader = _send(follower.ports["CONTROLLER"], ApiKey.FETCH, 17, encode_request(request))
    assert not_leader.responses[0].partitions[0].error_code == Errors.NOT_LEADER_OR_FOLLOWER


def test_broker_listeners_do_not_serve_the_raft_rpcs(cluster: LocalCluster) -> None:
    vote = VoteRequest(cluster.cluster_id, 99, 1, 0, 0, False)
    with pytest.raises(NodeUnavailable):  # an API the listener does not serve closes it
        _send(cluster.node(1).ports["PLAINTEXT"], ApiKey.VOTE, 2, encode_request(vote))
