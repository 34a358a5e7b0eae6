"""ListOffsets (2), v1-10: earliest (-2), latest (-1, the high watermark), max timestamp (-3,
v7+), earliest local (-4, v8+), latest tiered (-5, v9+: none without tiered storage), or the
first offset whose timestamp is at or after the given one, below the high watermark (below
the log end for a replica's request, as Kafka answers a follower). With isolation_level 1
(v2+, read_committed) the bound is the last stable offset instead of the high watermark.

A leader elected with a high watermark below the start of its epoch (its followers have not
fetched yet) answers a client's "latest", and a timestamp lookup that finds nothing below
the HW, with OFFSET_NOT_AVAILABLE: the HW it would give may still be behind offsets the
previous leader acknowledged (Kafka's Partition.fetchOffsetForTimestamp). Requests from a
replica (ReplicaId >= 0) are not refused so. Each topic needs DESCRIBE
(TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5


@handler(ApiKey.LIST_OFFSETS, (1, 10))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    rm = ctx.broker.replica_manager
    client = int(getattr(request, "replica_id", -1)) < 0
    read_committed = client and int(getattr(request, "isolation_level", 0)) == 1
    seen: set[tuple[str, int]] = set()
    duplicates = {
        (t.name, p.partition_index)
        for t in request.topics
        for p in t.partitions
        if (t.name, p.partition_index) in seen or seen.add((t.name, p.partition_index))
    }
    allowed = authz.allowed_names(
        ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
                "error_code": Errors.NONE,
            }
            partitions.append(entry)
            if topic.name not in allowed:
                entry["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
                continue
            if (topic.name, p.partition_index) in duplicates:
                entry["error_code"] = Errors.INVALID_REQUEST
                continue
            partition, code = rm.leader_partition(
                topic.name, p.partition_index, getattr(p, "current_leader_epoch", -1)
            )
            if partition is None:
                entry["error_code"] = code
                continue
            log = partition.log
            target = int(p.timestamp)
            hw = partition.high_watermark
            lagging = client and partition.epoch_start_offset > hw
            # A consumer reads up to the high watermark; a replica (a follower out of range
            # asking where the leader's log ends) up to the log end, as in Kafka.
            upper = hw if client else log.log_end_offset
            if read_committed:
                upper = partition.last_stable_offset
            if target == LATEST:
                if lagging:
                    entry["error_code"] = Errors.OFFSET_NOT_AVAILABLE
                    continue
                entry.update(offset=upper, leader_epoch=partition.leader_epoch)
            elif target in (EARLIEST, EARLIEST_LOCAL):
                epoch = log.epoch_cache.epoch_for_offset(log.log_start_offset)
                entry.update(
                    offset=log.log_start_offset, leader_epoch=-1 if epoch is None else epoch
                )
            elif target == LATEST_TIERED:
                pass
            elif target < 0 and target != MAX_TIMESTAMP:
                entry["error_code"] = Errors.INVALID_REQUEST
            else:
                if target == MAX_TIMESTAMP:
                    found = log.max_timestamp_offset()
                else:
                    found = log.offset_for_timestamp(target)
                if found is not None and found[0] < upper:
                    entry.update(offset=found[0], timestamp=found[1], leader_epoch=found[2])
                elif lagging:
                    entry["error_code"] = Errors.OFFSET_NOT_AVAILABLE
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
