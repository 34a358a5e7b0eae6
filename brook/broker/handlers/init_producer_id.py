"""InitProducerId (22), v0-5, for idempotent producers: a fresh producer id at epoch 0 from
this broker's block of ids (blocks are allocated through the controller, so ids are never
reused, even across restarts). Transactions are not supported: a transactional id gets
COORDINATOR_NOT_AVAILABLE, as from a broker without a transaction coordinator.

A transactional id needs WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent
producer IDEMPOTENT_WRITE on the cluster or WRITE on at least one topic, as Kafka 3+
(CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


def _refused(code: int) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": code, "producer_id": -1, "producer_epoch": -1}


@handler(ApiKey.INIT_PRODUCER_ID, (0, 5))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if request.transactional_id is not None and not authz.authorize(
        ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, request.transactional_id
    ):
        return _refused(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    if request.transactional_id is None and not (
        authz.authorize_cluster(ctx, AclOperation.IDEMPOTENT_WRITE)
        or authz.authorize_any(ctx, AclOperation.WRITE, ResourceType.TOPIC)
    ):
        return _refused(Errors.CLUSTER_AUTHORIZATION_FAILED)
    if request.transactional_id is not None:
        return {
            "throttle_time": 0,
            "error_code": Errors.COORDINATOR_NOT_AVAILABLE,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    try:
        producer_id = await ctx.broker.producer_ids.next_id()
    except KafkaError:
        # No block of ids can be committed (the metadata log's directory is offline): Kafka's
        # broker answers this while it has no block, and the client retries.
        return {
            "throttle_time": 0,
            "error_code": Errors.COORDINATOR_LOAD_IN_PROGRESS,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "producer_id": producer_id,
        "producer_epoch": 0,
    }
