"""describe_metadata_quorum against a scripted loopback broker: the request on the wire, the
answer of each DescribeQuorum version as QuorumInfo, Kafka's checks of the answer's shape, and
which errors are retried within the timeout (NOT_LEADER_OR_FOLLOWER, NOT_CONTROLLER) and which
are raised at once."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable
from typing import Any

import pytest
from scripted_broker import DEFAULT_RANGES, Request, ScriptedBroker, metadata_response

from brook.client.admin import (
    AsyncAdmin,
    QuorumInfo,
    QuorumNode,
    RaftVoterEndpoint,
    ReplicaState,
)
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

DIRECTORY = uuid.UUID("5f1c4a1e-0000-4000-8000-00000000abcd")
ZERO = uuid.UUID(int=0)


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 30))  # type: ignore[arg-type]


def replica(replica_id: int, leo: int, fetch: int = -1, caught_up: int = -1) -> dict[str, Any]:
    return {
        "replica_id": replica_id,
        "replica_directory_id": DIRECTORY if replica_id == 2 else None,
        "log_end_offset": leo,
        "last_fetch_timestamp": fetch,
        "last_caught_up_timestamp": caught_up,
    }


def quorum_response(**changes: Any) -> dict[str, Any]:
    partition = {
        "partition_index": 0,
        "error_code": 0,
        "error_message": None,
        "leader_id": 1,
        "leader_epoch": 7,
        "high_watermark": 120,
        "current_voters": [replica(1, 125, -1, 5000), replica(2, 120, 4990, 4980)],
        "observers": [replica(4, 100, 4900, 4000)],
    }
    partition.update(changes.pop("partition", {}))
    body = {
        "error_code": 0,
        "error_message": None,
        "topics": [{"topic_name": "__cluster_metadata", "partitions": [partition]}],
        "nodes": [
            {"node_id": 1, "listeners": [{"name": "CONTROLLER", "host": "c1", "port": 9093}]},
            {"node_id": 2, "listeners": [{"name": "CONTROLLER", "host": "::1", "port": 9094}]},
        ],
    }
    body.update(changes)
    return body


class Quorum:
    """One scripted broker: Metadata names it; DescribeQuorum answers come from ``answers``
    (the last one repeats)."""

    def __init__(self, *answers: dict[str, Any]) -> None:
        self.answers = list(answers)
        self.port = 0

    def script(self, broker: ScriptedBroker, req: Request) -> None:
        if req.api_key == ApiKey.METADATA:
            broker.respond(req, metadata_response("c", [(1, "127.0.0.1", broker.port)], [], 1))
        elif req.api_key == ApiKey.DESCRIBE_QUORUM:
            answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
            broker.respond(req, answer)


def with_broker(
    quorum: Quorum, body: Any, versions: tuple[int, int] = (0, 2), **config: Any
) -> Any:
    async def main() -> Any:
        ranges = {**DEFAULT_RANGES, ApiKey.DESCRIBE_QUORUM: versions}
        async with ScriptedBroker(quorum.script, ranges=ranges) as broker:
            admin = AsyncAdmin(
                {"bootstrap.servers": broker.address, "retry.backoff.ms": 10, **config}
            )
            await admin.start()
            try:
                return await body(admin, broker)
            finally:
                await admin.close()

    return run(main())


def test_v2_answer_as_quorum_info_and_the_request_on_the_wire() -> None:
    async def body(admin: AsyncAdmin, broker: ScriptedBroker) -> None:
        info = await admin.describe_metadata_quorum()
        assert info == QuorumInfo(
            leader_id=1,
            leader_epoch=7,
            high_watermark=120,
            voters=(
                ReplicaState(1, ZERO, 125, None, 5000),
                ReplicaState(2, DIRECTORY, 120, 4990, 4980),
            ),
            observers=(ReplicaState(4, ZERO, 100, 4900, 4000),),
            nodes={
                1: QuorumNode(1, (RaftVoterEndpoint("CONTROLLER", "c1", 9093),)),
                2: QuorumNode(2, (RaftVoterEndpoint("CONTROLLER", "::1", 9094),)),
            },
        )
        assert str(info.nodes[2].endpoints[0]) == "CONTROLLER://[::1]:9094"
        (sent,) = broker.requests_for(ApiKey.DESCRIBE_QUORUM)
        assert sent.version == 2
        request = sent.decode()
        assert [
            (t.topic_name, [p.partition_index for p in t.partitions]) for t in request.topics
        ] == [("__cluster_metadata", [0])]

    with_broker(Quorum(quorum_response()), body)


def test_v0_answer_has_no_timestamps_directories_or_nodes() -> None:
    async def body(admin: AsyncAdmin, broker: ScriptedBroker) -> None:
        info = await admin.describe_metadata_quorum()
        assert broker.requests_for(ApiKey.DESCRIBE_QUORUM)[0].version == 0
        assert info.voters == (
            ReplicaState(1, ZERO, 125, None, None),
            ReplicaState(2, ZERO, 120, None, None),
        )
        assert info.nodes == {}

    with_broker(Quorum(quorum_response()), body, versions=(0, 0))


@pytest.mark.parametrize(
    "first",
    [
        # The quorum is electing a leader: the partition says NOT_LEADER_OR_FOLLOWER.
        quorum_response(partition={"error_code": Errors.NOT_LEADER_OR_FOLLOWER}),
        # The broker's controller moved while it forwarded the request.
        quorum_response(error_code=Errors.NOT_CONTROLLER, topics=[]),
    ],
    ids=["not-leader", "not-controller"],
)
def test_retriable_errors_are_retried_within_the_timeout(first: dict[str, Any]) -> None:
    async def body(admin: AsyncAdmin, broker: ScriptedBroker) -> None:
        info = await admin.describe_metadata_quorum(timeout_ms=10_000)
        assert info.leader_id == 1
        assert len(broker.requests_for(ApiKey.DESCRIBE_QUORUM)) == 3

    with_broker(Quorum(first, first, quorum_response()), body)


def test_a_retriable_error_that_lasts_is_raised_at_the_deadline() -> None:
    async def body(admin: AsyncAdmin, broker: ScriptedBroker) -> None:
        start = time.monotonic()
        with pytest.raises(KafkaError) as info:
            await admin.describe_metadata_quorum(timeout_ms=500)
        assert info.value.name == "NOT_LEADER_OR_FOLLOWER"
        assert 0.4 < time.monotonic() - start < 10
        assert len(broker.requests_for(ApiKey.DESCRIBE_QUORUM)) > 1

    stuck = quorum_response(partition={"error_code": Errors.NOT_LEADER_OR_FOLLOWER})
    with_broker(Quorum(stuck), body)


@pytest.mark.parametrize(
    ("answer", "name", "message"),
    [
        (
            quorum_response(error_code=Errors.CLUSTER_AUTHORIZATION_FAILED, topics=[]),
            "CLUSTER_AUTHORIZATION_FAILED",
            None,
        ),
        (
            quorum_response(
                partition={"error_code": Errors.INVALID_REQUEST, "error_message": "bad"}
            ),
            "INVALID_REQUEST",
            "bad",
        ),
        (
            quorum_response(topics=[]),
            "UNKNOWN_SERVER_ERROR",
            "DescribeMetadataQuorum received 0 topics when 1 was expected",
        ),
        (
            quorum_response(topics=[{"topic_name": "other", "partitions": []}]),
            "UNKNOWN_SERVER_ERROR",
            "DescribeMetadataQuorum received a topic with name other when "
            "__cluster_metadata was expected",
        ),
        (
            quorum_response(partition={"partition_index": 3}),
            "UNKNOWN_SERVER_ERROR",
            "DescribeMetadataQuorum received a single partition with index 3 when 0 was expected",
        ),
    ],
    ids=["authorization", "partition-error", "no-topic", "wrong-topic", "wrong-partition"],
)
def test_other_errors_are_raised_at_once(answer: dict[str, Any], name: str, message: str) -> None:
    async def body(admin: AsyncAdmin, broker: ScriptedBroker) -> None:
        with pytest.raises(KafkaError) as info:
            await admin.describe_metadata_quorum(timeout_ms=10_000)
        assert (info.value.name, info.value.message) == (name, message)
        assert len(broker.requests_for(ApiKey.DESCRIBE_QUORUM)) == 1

    with_broker(Quorum(answer), body)


def test_a_broker_without_describe_quorum_is_unsupported_version() -> None:
    async def main() -> None:
        async with ScriptedBroker(Quorum(quorum_response()).script) as broker:
            admin = AsyncAdmin({"bootstrap.servers": broker.address})
            async with admin:
                with pytest.raises(KafkaError) as info:
                    await admin.describe_metadata_quorum(timeout_ms=10_000)
            assert info.value.name == "UNSUPPORTED_VERSION"
            assert "does not support describe_quorum" in str(info.value)
            assert broker.requests_for(ApiKey.DESCRIBE_QUORUM) == []

    run(main())
