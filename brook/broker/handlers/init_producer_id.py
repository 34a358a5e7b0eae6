"""InitProducerId (22), v0-5, for idempotent producers: a fresh producer id at epoch 0 from
this broker's block of ids (blocks are allocated through the controller, so ids are never
reused, even across restarts). With a transactional id, the transaction coordinator's answer
(v3+: KIP-360's producer id and epoch of a producer recovering; PRODUCER_FENCED as
INVALID_PRODUCER_EPOCH below v4; INVALID_TRANSACTION_TIMEOUT above
``transaction.max.timeout.ms``; CONCURRENT_TRANSACTIONS while it fences an open transaction).

A transactional id needs WRITE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent
producer IDEMPOTENT_WRITE on the cluster or WRITE on at least one topic, as Kafka 3+
(CLUSTER_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms
from brook.protocol.errors import Errors, KafkaError
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler
from .txn_common import client_error


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
        expected = None
        if ctx.api_version >= 3 and int(request.producer_id) >= 0:
            expected = (int(request.producer_id), int(request.producer_epoch))
        error, producer_id, epoch = await ctx.broker.txn_coordinator.init_producer_id(
            request.transactional_id, to_ms(request.transaction_timeout), expected
        )
        return {
            "throttle_time": 0,
            "error_code": client_error(error, "init_producer_id", ctx.api_version),
            "producer_id": producer_id,
            "producer_epoch": epoch,
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
