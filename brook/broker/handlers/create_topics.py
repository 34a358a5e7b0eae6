"""CreateTopics (19), v2-7: name, partitions, replication factor or manual assignment, configs;
validate_only. v5+ returns the created topic's partitions, replication factor and configs,
v7 its topic id. Errors and messages follow Kafka's controller (see metadata/controller.py);
internal topics (``__consumer_offsets``, ...) are the node's to create, so a client asking for
one gets INVALID_REQUEST, and a request for more than 10,000 partitions in all gets
POLICY_VIOLATION for every topic.
"""

from __future__ import annotations

from typing import Any

from brook.metadata.controller import CreateTopicSpec
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from ..registry import RequestContext, handler
from .describe_configs import describe_topic


@handler(ApiKey.CREATE_TOPICS, (2, 7))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    specs = []
    for t in request.topics:
        assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        configs = {c.name: c.value for c in t.configs}
        specs.append(
            CreateTopicSpec(t.name, t.num_partitions, t.replication_factor, assignments, configs)
        )
    decision = await broker.metadata.submit(
        lambda c: c.create_topics(specs, bool(request.validate_only), internal_topics_allowed=False)
    )
    topics = []
    for spec, result in zip(specs, decision.results, strict=True):
        entry: dict[str, Any] = {
            "name": spec.name,
            "topic_id": result.topic_id,
            "error_code": result.error_code,
            "error_message": result.error_message,
            "num_partitions": result.num_partitions,
            "replication_factor": result.replication_factor,
            "configs": None,
            "topic_config_error_code": Errors.NONE,
        }
        if result.ok:
            entry["configs"] = describe_topic(broker, spec.name, spec.configs, None, False, False)
        topics.append(entry)
    return {"throttle_time": 0, "topics": topics}
