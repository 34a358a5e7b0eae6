"""DescribeTransactions (65), v0: the coordinator's state of each transactional id asked
(KIP-664): Kafka's state name, timeout, start time, producer id and epoch, partitions.

Each id needs DESCRIBE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an id this node does not
coordinate gets NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while its partition loads), an
unknown or expiring one TRANSACTIONAL_ID_NOT_FOUND, an empty one INVALID_REQUEST.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


def _state(tid: str, error: int, meta: Any = None) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    if meta is not None:
        for topic, p in sorted(meta.partitions):
            by_topic.setdefault(topic, []).append(p)
    return {
        "error_code": error,
        "transactional_id": tid,
        "transaction_state": meta.state.kafka_name if meta is not None else "",
        "transaction_timeout": meta.timeout_ms if meta is not None else 0,
        "transaction_start_time": meta.start_ms if meta is not None else 0,
        "producer_id": meta.producer_id if meta is not None else -1,
        "producer_epoch": meta.producer_epoch if meta is not None else -1,
        "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
    }


@handler(ApiKey.DESCRIBE_TRANSACTIONS, (0, 0))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    manager = ctx.broker.txn_coordinator.manager
    states = []
    for tid in request.transactional_ids:
        if not authz.authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, tid):
            states.append(_state(tid, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED))
            continue
        error, meta = manager.describe(tid)
        states.append(_state(tid, error, meta))
    return {"throttle_time": 0, "transaction_states": states}
