"""OffsetForLeaderEpoch (23), v2-4: the end offset of a leader epoch on this leader (KIP-101,
KIP-279), used by followers to truncate and by consumers to validate positions (KIP-320).

ReplicaId -2 (v3+, Kafka's debugging id) is answered by any replica hosted here, not only the
leader, and for an epoch past the log's latest with that latest epoch and the log end: the
active controller asks so what each replica of a fenced quorum-acks partition holds
(``brook.metadata.replica_logs``).

A consumer needs DESCRIBE on each topic (TOPIC_AUTHORIZATION_FAILED); a replica (ReplicaId
set) CLUSTER_ACTION on the cluster (CLUSTER_AUTHORIZATION_FAILED on every partition).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler

DEBUG_REPLICA_ID = -2
CONSUMER_REPLICA_ID = -1


@handler(ApiKey.OFFSET_FOR_LEADER_EPOCH, (2, 4))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    rm = ctx.broker.replica_manager
    any_replica = ctx.api_version >= 3 and request.replica_id == DEBUG_REPLICA_ID
    replica = ctx.api_version >= 3 and request.replica_id != CONSUMER_REPLICA_ID
    if replica and not authz.authorize_cluster(ctx, AclOperation.CLUSTER_ACTION):
        allowed: set[str] = set()
        denial = Errors.CLUSTER_AUTHORIZATION_FAILED
    else:
        names = (t.topic for t in request.topics)
        allowed = (
            authz.allowed_names(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, names)
            if not replica
            else set(names)
        )
        denial = Errors.TOPIC_AUTHORIZATION_FAILED
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            entry: dict[str, Any] = {
                "error_code": Errors.NONE,
                "partition": p.partition,
                "leader_epoch": -1,
                "end_offset": -1,
            }
            partitions.append(entry)
            if topic.topic not in allowed:
                entry["error_code"] = denial
                continue
            if any_replica:
                partition = rm.partitions.get((topic.topic, p.partition))
                code = (
                    Errors.NOT_LEADER_OR_FOLLOWER
                    if partition is None
                    else partition.check_leader_epoch(p.current_leader_epoch)
                )
                if code:
                    partition = None
            else:
                partition, code = rm.leader_partition(
                    topic.topic, p.partition, p.current_leader_epoch
                )
            if partition is None:
                entry["error_code"] = code
                continue
            plog = partition.log
            latest = plog.latest_epoch()
            if any_replica and (latest is None or p.leader_epoch > latest):
                # past the log's latest epoch (a fenced epoch no batch carries): where the
                # log ends, and the epoch of its last batch
                epoch, end = (-1 if latest is None else latest), plog.log_end_offset
            else:
                epoch, end = plog.end_offset_for_epoch(p.leader_epoch)
            entry.update(leader_epoch=epoch, end_offset=end)
        topics.append({"topic": topic.topic, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
