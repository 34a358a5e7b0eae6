"""DescribeProducers (61), v0: the producers a partition's replica knows (KIP-664), each with
its epoch, last sequence and timestamp, the epoch of the coordinator whose marker it last got,
and where its open transaction began (-1 for none): how an operator finds a hanging
transaction, one whose marker never came (``kafka-transactions.sh find-hanging``).

As Kafka's (ReplicaManager.activeProducerState), any replica answers, leader or follower:
followers keep the same producer state, and ``--broker-id`` asks one replica in particular.
Each topic needs READ (TOPIC_AUTHORIZATION_FAILED on its partitions); a partition with no
replica here gets NOT_LEADER_OR_FOLLOWER, one that does not exist UNKNOWN_TOPIC_OR_PARTITION,
one in an offline log directory KAFKA_STORAGE_ERROR.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.DESCRIBE_PRODUCERS, (0, 0))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    rm = ctx.broker.replica_manager
    allowed = authz.allowed_names(
        ctx, AclOperation.READ, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    topics = []
    for topic in request.topics:
        partitions = []
        for index in topic.partition_indexes:
            entry: dict[str, Any] = {
                "partition_index": index,
                "error_code": Errors.NONE,
                "error_message": None,
                "active_producers": [],
            }
            partitions.append(entry)
            if topic.name not in allowed:
                entry["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
                continue
            partition = rm.partitions.get((topic.name, index))
            if partition is None:
                # not hosted here: the leader lookup's answer (offline, unknown, elsewhere)
                entry["error_code"] = rm.leader_partition(topic.name, index)[1]
                continue
            entry["active_producers"] = [
                {
                    "producer_id": p.producer_id,
                    "producer_epoch": p.epoch,
                    "last_sequence": p.last_seq,
                    "last_timestamp": p.last_timestamp,
                    "coordinator_epoch": p.coordinator_epoch,
                    "current_txn_start_offset": (
                        -1 if p.current_txn_first_offset is None else p.current_txn_first_offset
                    ),
                }
                for p in partition.log.producer_state.producers.values()
            ]
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
