"""DeleteRecords (21), v0-2: move a partition's log start offset forward (-1 means the high
watermark); offsets beyond the high watermark get OFFSET_OUT_OF_RANGE, internal topics
INVALID_TOPIC_EXCEPTION as in Kafka.

Each topic needs DELETE (TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.metadata.topics import is_internal
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.DELETE_RECORDS, (0, 2))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    rm = ctx.broker.replica_manager
    allowed = authz.allowed_names(
        ctx, AclOperation.DELETE, ResourceType.TOPIC, (t.name for t in request.topics)
    )
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "low_watermark": -1,
                "error_code": Errors.NONE,
            }
            partitions.append(entry)
            if topic.name not in allowed:
                entry["error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
                continue
            if (
                is_internal(topic.name)
                and ctx.broker.image.partition(topic.name, p.partition_index) is not None
            ):
                # ReplicaManager.deleteRecordsOnLocalLog: "Cannot delete records of internal
                # topic" (the response has no message field to carry it).
                entry["error_code"] = Errors.INVALID_TOPIC_EXCEPTION
                continue
            partition, code = rm.leader_partition(topic.name, p.partition_index)
            if partition is None:
                entry["error_code"] = code
                continue
            target = partition.high_watermark if p.offset == -1 else p.offset
            if target < 0 or target > partition.high_watermark:
                entry["error_code"] = Errors.OFFSET_OUT_OF_RANGE
                continue
            try:
                partition.log.maybe_increment_log_start_offset(target)
            except KafkaError as exc:
                entry["error_code"] = exc.code
                continue
            entry["low_watermark"] = partition.log.log_start_offset
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time": 0, "topics": topics}
