"""AlterPartitionReassignments (45), v0-1: start moving partitions to target replicas, or
cancel (null replicas). A move completes once every added replica is in the ISR.

Needs ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.metadata.controller import Outcome
from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation

from .. import authz
from ..controller_channel import call_controller
from ..registry import BROKER, CONTROLLER, RequestContext, handler

REMOTE_VERSION = 0
Targets = list[tuple[str, int, list[int] | None]]


def request_of(targets: Targets, timeout_ms: int) -> dict:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, p, replicas in targets:
        by_topic.setdefault(topic, []).append(
            {"partition_index": p, "replicas": None if replicas is None else tuple(replicas)}
        )
    return {
        "timeout": timeout_ms,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }


def results_of(response: Any) -> list[tuple[str, int, Outcome]]:
    if response.error_code:
        raise ControllerError(response.error_code, response.error_message)
    return [
        (t.name, p.partition_index, Outcome(p.error_code, p.error_message))
        for t in response.responses
        for p in t.partitions
    ]


@handler(ApiKey.ALTER_PARTITION_REASSIGNMENTS, (0, 1), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not ctx.on_controller_listener and not authz.authorize_cluster(ctx, AclOperation.ALTER):
        return {
            "throttle_time": 0,
            "allow_replication_factor_change": True,
            "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": "Cluster authorization failed.",
            "responses": [],
        }
    targets = [
        (t.name, p.partition_index, None if p.replicas is None else list(p.replicas))
        for t in request.topics
        for p in t.partitions
    ]
    try:
        results = await call_controller(
            ctx.broker,
            lambda c: c.alter_partition_reassignments(targets),
            to_ms(request.timeout),
            local=ctx.on_controller_listener,
        )
    except ControllerError as exc:
        failed = Outcome(exc.error_code, exc.message)
        results = [(topic, p, failed) for topic, p, _ in targets]
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, p, outcome in results:
        by_topic.setdefault(topic, []).append(
            {
                "partition_index": p,
                "error_code": outcome.error_code,
                "error_message": outcome.error_message,
            }
        )
    return {
        "throttle_time": 0,
        "allow_replication_factor_change": getattr(
            request, "allow_replication_factor_change", True
        ),
        "error_code": Errors.NONE,
        "error_message": None,
        "responses": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
