"""CreateTopics (19), v2-7: name, partitions, replication factor or manual assignment, configs;
validate_only. v5+ returns the created topic's partitions, replication factor and configs,
v7 its topic id. Errors and messages follow Kafka's controller (see metadata/controller.py);
internal topics (``__consumer_offsets``, ...) are the node's to create, so a client asking a
broker for one gets INVALID_REQUEST, and a request for more than 10,000 partitions in all gets
POLICY_VIOLATION for every topic.

Served on broker listeners (forwarded to the active controller; the answer waits until this
broker's image has the topic) and on the controller listener (decided there; brokers create
the internal topics through it, so it takes them).

Needs CREATE on the cluster or on the topic (TOPIC_AUTHORIZATION_FAILED); the created topic's
configs are returned only with DESCRIBE_CONFIGS on it (else topic_config_error_code
TOPIC_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.metadata.controller import CreatedTopic, CreateTopicSpec
from brook.metadata.controller_api import ControllerError
from brook.metadata.topics import is_internal
from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..controller_channel import call_controller
from ..registry import BROKER, CONTROLLER, RequestContext, handler
from .describe_configs import describe_topic

REMOTE_VERSION = 7


def specs_of(request: Any) -> list[CreateTopicSpec]:
    specs = []
    for t in request.topics:
        assignments = {a.partition_index: list(a.broker_ids) for a in t.assignments}
        configs = {c.name: c.value for c in t.configs}
        specs.append(
            CreateTopicSpec(t.name, t.num_partitions, t.replication_factor, assignments, configs)
        )
    return specs


def request_of(specs: list[CreateTopicSpec], validate_only: bool, timeout_ms: int) -> dict:
    return {
        "topics": [
            {
                "name": s.name,
                "num_partitions": s.num_partitions,
                "replication_factor": s.replication_factor,
                "assignments": [
                    {"partition_index": p, "broker_ids": tuple(ids)}
                    for p, ids in sorted(s.assignments.items())
                ],
                "configs": [{"name": k, "value": v} for k, v in s.configs.items()],
            }
            for s in specs
        ],
        "timeout": timeout_ms,
        "validate_only": validate_only,
    }


def results_of(response: Any) -> list[CreatedTopic]:
    return [
        CreatedTopic(
            t.error_code,
            t.error_message,
            name=t.name,
            topic_id=t.topic_id,
            num_partitions=t.num_partitions,
            replication_factor=t.replication_factor,
        )
        for t in response.topics
    ]


@handler(ApiKey.CREATE_TOPICS, (2, 7), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    specs = specs_of(request)
    results: list[CreatedTopic | None] = [None] * len(specs)
    describable: set[str] | None = None
    if not ctx.on_controller_listener:
        creatable = {s.name for s in specs}
        if not authz.authorize_cluster(ctx, AclOperation.CREATE):
            creatable = authz.allowed_names(ctx, AclOperation.CREATE, ResourceType.TOPIC, creatable)
        describable = authz.allowed_names(
            ctx, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, (s.name for s in specs)
        )
        for i, spec in enumerate(specs):
            if spec.name not in creatable:
                results[i] = CreatedTopic(
                    Errors.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.", name=spec.name
                )
            elif is_internal(spec.name):
                message = f"Creation of internal topic {spec.name} is prohibited."
                results[i] = CreatedTopic(Errors.INVALID_REQUEST, message, name=spec.name)
    wanted = [spec for spec, result in zip(specs, results, strict=True) if result is None]
    if wanted:
        try:
            decided = await call_controller(
                broker,
                lambda c: c.create_topics(wanted, bool(request.validate_only)),
                to_ms(request.timeout),
                local=ctx.on_controller_listener,
            )
        except ControllerError as exc:
            decided = [CreatedTopic(exc.error_code, exc.message, name=s.name) for s in wanted]
        answers = iter(decided)
        results = [r if r is not None else next(answers) for r in results]
    topics = []
    for spec, result in zip(specs, results, strict=True):
        assert result is not None
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
        if result.ok and describable is not None and spec.name not in describable:
            entry["topic_config_error_code"] = Errors.TOPIC_AUTHORIZATION_FAILED
        elif result.ok:
            entry["configs"] = describe_topic(broker, spec.name, spec.configs, None, False, False)
        topics.append(entry)
    return {"throttle_time": 0, "topics": topics}
