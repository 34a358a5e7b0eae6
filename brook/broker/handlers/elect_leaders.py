"""ElectLeaders (43), v0-2: preferred (0) or unclean (1) leader election, for listed partitions
or (null) all of them. v0 is always preferred.

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

REMOTE_VERSION = 2


def request_of(
    election_type: int, partitions: list[tuple[str, int]] | None, timeout_ms: int
) -> dict:
    topic_partitions = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = {}
        for topic, p in partitions:
            by_topic.setdefault(topic, []).append(p)
        topic_partitions = [{"topic": t, "partitions": tuple(ps)} for t, ps in by_topic.items()]
    return {
        "election_type": election_type,
        "topic_partitions": topic_partitions,
        "timeout": timeout_ms,
    }


def results_of(response: Any) -> list[tuple[str, int, Outcome]]:
    if response.error_code:
        raise ControllerError(response.error_code)
    return [
        (t.topic, p.partition_id, Outcome(p.error_code, p.error_message))
        for t in response.replica_election_results
        for p in t.partition_result
    ]


def _refused(request: Any) -> dict[str, Any]:
    """Kafka's answer without ALTER on the cluster: the top-level error, and (for v0, which
    has none) the same error on every partition asked for."""
    results = [
        {
            "topic": t.topic,
            "partition_result": [
                {
                    "partition_id": p,
                    "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
                    "error_message": "Cluster authorization failed.",
                }
                for p in t.partitions
            ],
        }
        for t in request.topic_partitions or ()
    ]
    return {
        "throttle_time": 0,
        "error_code": Errors.CLUSTER_AUTHORIZATION_FAILED,
        "replica_election_results": results,
    }


@handler(ApiKey.ELECT_LEADERS, (0, 2), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    election_type = getattr(request, "election_type", 0)
    if not ctx.on_controller_listener and not authz.authorize_cluster(ctx, AclOperation.ALTER):
        return _refused(request)
    partitions = None
    if request.topic_partitions is not None:
        partitions = [(t.topic, p) for t in request.topic_partitions for p in t.partitions]
    try:
        results = await call_controller(
            ctx.broker,
            lambda c: c.elect_leaders(election_type, partitions),
            to_ms(request.timeout),
            local=ctx.on_controller_listener,
        )
    except ControllerError as exc:
        return {
            "throttle_time": 0,
            "error_code": exc.error_code,
            "replica_election_results": [],
        }
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for topic, p, outcome in results:
        by_topic.setdefault(topic, []).append(
            {
                "partition_id": p,
                "error_code": outcome.error_code,
                "error_message": outcome.error_message,
            }
        )
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "replica_election_results": [
            {"topic": t, "partition_result": results} for t, results in by_topic.items()
        ],
    }
