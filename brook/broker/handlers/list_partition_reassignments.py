"""ListPartitionReassignments (46), v0: partitions with a move in progress.

Needs DESCRIBE on the cluster (CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.metadata.controller_api import ControllerError, Reassignment
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation

from .. import authz
from ..registry import BROKER, CONTROLLER, RequestContext, handler

REMOTE_VERSION = 0


def request_of(partitions: list[tuple[str, int]] | None, timeout_ms: int) -> dict:
    topics = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        topics = [{"name": t, "partition_indexes": tuple(ps)} for t, ps in by_topic.items()]
    return {"timeout": timeout_ms, "topics": topics}


def results_of(response: Any) -> list[Reassignment]:
    if response.error_code:
        raise ControllerError(response.error_code, response.error_message)
    return [
        Reassignment(
            t.name,
            p.partition_index,
            tuple(p.replicas),
            tuple(p.adding_replicas),
            tuple(p.removing_replicas),
        )
        for t in response.topics
        for p in t.partitions
    ]


@handler(ApiKey.LIST_PARTITION_REASSIGNMENTS, (0, 0), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not ctx.on_controller_listener and not authz.authorize_cluster(ctx, AclOperation.DESCRIBE):
        return {
            "throttle_time": 0,
            "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
            "error_message": "Cluster authorization failed.",
            "topics": [],
        }
    wanted = None
    if request.topics is not None:
        wanted = [(t.name, p) for t in request.topics for p in t.partition_indexes]
    try:
        controller = (
            ctx.broker.local_controller() if ctx.on_controller_listener else ctx.broker.controller
        )
        moves = await controller.list_partition_reassignments(wanted)
    except ControllerError as exc:
        return {
            "throttle_time": 0,
            "error_code": exc.error_code,
            "error_message": exc.message,
            "topics": [],
        }
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for move in moves:
        by_topic.setdefault(move.topic, []).append(
            {
                "partition_index": move.partition,
                "replicas": move.replicas,
                "adding_replicas": move.adding,
                "removing_replicas": move.removing,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "error_message": None,
        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
    }
