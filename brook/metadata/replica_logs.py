"""How the active controller learns what a fenced partition's replicas hold, for KIP-250's
most-complete-log election (``quorum_acks.most_complete``).

It asks each live replica's broker with OffsetForLeaderEpoch (v4, ReplicaId -2: Kafka's
debugging replica id, which Brook's brokers answer from any replica, not only the leader)
for the end of the fenced leader epoch: the answer is the replica's last epoch and log end.
CurrentLeaderEpoch is the fenced epoch, so a broker that has not applied the fence yet
answers UNKNOWN_LEADER_EPOCH and is asked again later; one that has, has stopped appending
(it neither leads nor fetches a leaderless partition), so its answer stays true until the
controller elects. One request per broker covers every partition waiting for it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from brook.net.connection import NodeChannels, NodeUnavailable
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from .image import MetadataImage, PartitionInfo
from .quorum_acks import LogEnd

log = logging.getLogger(__name__)

VERSION = 4
DEBUG_REPLICA_ID = -2
TIMEOUT_S = 2.0

PartitionKey = tuple[str, int]


class ReplicaLogs:
    def __init__(self, node_id: int, listener: str | None) -> None:
        self.listener = listener
        self.channels = NodeChannels(f"brook-controller-{node_id}")

    def close(self) -> None:
        self.channels.close()

    async def ask(
        self,
        image: MetadataImage,
        wanted: Mapping[int, Sequence[tuple[str, PartitionInfo]]],
    ) -> dict[PartitionKey, dict[int, LogEnd]]:
        """``wanted``: broker id -> the partitions to ask it about. Returns, per partition,
        the replicas that answered and what they hold; a broker that cannot be reached or
        answers an error for a partition is simply missing from it."""
        answers = await asyncio.gather(
            *(self._ask_one(image, broker, parts) for broker, parts in wanted.items())
        )
        reports: dict[PartitionKey, dict[int, LogEnd]] = {}
        for broker, answer in zip(wanted, answers, strict=True):
            for key, end in answer.items():
                reports.setdefault(key, {})[broker] = end
        return reports

    async def _ask_one(
        self, image: MetadataImage, broker_id: int, parts: Sequence[tuple[str, PartitionInfo]]
    ) -> dict[PartitionKey, LogEnd]:
        broker = image.brokers.get(broker_id)
        if broker is None or not broker.endpoints:
            return {}
        endpoint = (broker.endpoint(self.listener) if self.listener else None) or (
            broker.endpoints[0]
        )
        conn = self.channels.get(broker_id, endpoint.host, endpoint.port)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for topic, info in parts:
            by_topic.setdefault(topic, []).append(
                {
                    "partition": info.partition,
                    "current_leader_epoch": info.leader_epoch,
                    "leader_epoch": info.leader_epoch,
                }
            )
        request = {
            "replica_id": DEBUG_REPLICA_ID,
            "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        try:
            resp = await conn.send(ApiKey.OFFSET_FOR_LEADER_EPOCH, VERSION, request, TIMEOUT_S)
        except (NodeUnavailable, TimeoutError, OSError) as exc:
            log.debug("broker %d did not say what its replicas hold: %r", broker_id, exc)
            return {}
        out: dict[PartitionKey, LogEnd] = {}
        for topic in resp.topics:
            for p in topic.partitions:
                if int(p.error_code) == Errors.NONE:
                    key = (str(topic.topic), int(p.partition))
                    out[key] = LogEnd(int(p.leader_epoch), int(p.end_offset))
        return out
