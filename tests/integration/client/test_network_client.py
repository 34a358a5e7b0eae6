"""NetworkClient and BrokerConnection against real brokers (Tansu, Brook): negotiation, metadata for
tracked topics, requests to a partition's leader, hand-encoded requests."""

from __future__ import annotations

import asyncio
import struct

from brook.client.admin import AsyncAdmin, NewTopic
from brook.client.config import parse_producer_config
from brook.client.network import NetworkClient
from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio


def test_metadata_for_tracked_topics_and_leader_requests(bootstrap: str, unique_topic: str) -> None:
    async def main() -> None:
        async with AsyncAdmin({"bootstrap.servers": bootstrap}) as admin:
            await admin.create_topics([NewTopic(unique_topic, 3, 1)])
        config = parse_producer_config({"bootstrap.servers": bootstrap})
        net = NetworkClient(config, kind="producer")
        await net.start()
        assert net.cluster.cluster_id and net.cluster.brokers
        assert net.cluster.partitions_for(unique_topic) == ()
        net.add_topics([unique_topic])
        await net.await_update(timeout_ms=10_000)
        cluster = net.cluster
        assert cluster.partitions_for(unique_topic) == (0, 1, 2)
        assert cluster.available_partitions_for(unique_topic) == (0, 1, 2)
        assert cluster.topic_id(unique_topic) is not None
        leader = cluster.leader_for((unique_topic, 0))
        assert leader is not None and cluster.leader_epoch((unique_topic, 0)) >= 0

        conn = await net.connection(leader)
        assert conn.ready and conn.node_id == leader and net.least_loaded_node() == leader
        version = conn.version_for(ApiKey.LIST_OFFSETS, 1, 9)
        request = {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": unique_topic,
                    "partitions": [
                        {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                        for p in (0, 1, 2)
                    ],
                }
            ],
            "timeout": 5000,
        }
        response = await net.send_to(leader, ApiKey.LIST_OFFSETS, request, version=version)
        assert [int(p.error_code) for p in response.topics[0].partitions] == [0, 0, 0]

        # A hand-encoded body through send_raw, decoded by hand (error code) and by kio.
        body = encode_kio(build(request_class(ApiKey.LIST_OFFSETS, version), request))
        half = len(body) // 2
        raw = await conn.send_raw(ApiKey.LIST_OFFSETS, version, [body[:half], body[half:]])
        decoded = decode_kio(response_class(ApiKey.LIST_OFFSETS, version), raw)
        assert decoded.topics[0].name == unique_topic
        assert struct.unpack_from(">i", raw, 0)[0] == 0  # throttle_time_ms

        # Many requests in flight on one connection at once.
        responses = await asyncio.gather(
            *(net.send_to(leader, ApiKey.LIST_OFFSETS, request) for _ in range(50))
        )
        assert len(responses) == 50 and conn.in_flight == 0
        await net.close()
        assert conn.closed

    asyncio.run(main())
