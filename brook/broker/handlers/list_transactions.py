"""ListTransactions (66), v0-1: the transactional ids this node coordinates (KIP-664), filtered
by Kafka's state names (unknown ones are returned as such), producer ids and (v1) a minimum
running time (now - start > the filter, as Kafka's coordinator: an id whose start is -1
passes); only the ids the caller may DESCRIBE are listed. COORDINATOR_LOAD_IN_PROGRESS
while one of its ``__transaction_state`` partitions is loading.
"""

from __future__ import annotations

import time
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler
from ..txn.state import TxnState


@handler(ApiKey.LIST_TRANSACTIONS, (0, 1))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    coordinator = ctx.broker.txn_coordinator
    states = list(request.state_filters)
    unknown = [s for s in states if TxnState.from_kafka_name(s) is None]
    if coordinator.loading:
        return {
            "throttle_time": 0,
            "error_code": Errors.COORDINATOR_LOAD_IN_PROGRESS,
            "unknown_state_filters": unknown,
            "transaction_states": [],
        }
    found = coordinator.manager.list_transactions(
        [s for s in states if s not in unknown], [int(p) for p in request.producer_id_filters]
    )
    duration = int(getattr(request, "duration_filter", -1))
    if duration >= 0:
        # Kafka's rule, exactly: kept when now - start > duration, so an id with no
        # transaction started (start -1) is kept too.
        now = int(time.time() * 1000)
        found = [m for m in found if now - m.start_ms > duration]
    visible = authz.allowed_names(
        ctx,
        AclOperation.DESCRIBE,
        ResourceType.TRANSACTIONAL_ID,
        (m.transactional_id for m in found),
    )
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "unknown_state_filters": unknown,
        "transaction_states": [
            {
                "transactional_id": m.transactional_id,
                "producer_id": m.producer_id,
                "transaction_state": m.state.kafka_name,
            }
            for m in found
            if m.transactional_id in visible
        ],
    }
