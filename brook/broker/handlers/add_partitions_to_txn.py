"""AddPartitionsToTxn (24), v0-3: a transactional producer adds partitions to its transaction
before producing to them (the coordinator writes Ongoing with them to ``__transaction_state``).

The transactional id needs WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED on every partition);
each topic WRITE (TOPIC_AUTHORIZATION_FAILED); a topic that does not exist
UNKNOWN_TOPIC_OR_PARTITION; when any partition is refused so, the others get
OPERATION_NOT_ATTEMPTED, as in Kafka. Otherwise every partition gets the coordinator's answer
(NOT_COORDINATOR, CONCURRENT_TRANSACTIONS, PRODUCER_FENCED (INVALID_PRODUCER_EPOCH below v2),
INVALID_PRODUCER_ID_MAPPING, ...). v4+ (KIP-890's batched, broker-to-broker form) is not
served.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler
from .txn_common import client_error, coordinator


@handler(ApiKey.ADD_PARTITIONS_TO_TXN, (0, 3))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    tid = request.v3_and_below_transactional_id
    wanted = [(t.name, int(p)) for t in request.v3_and_below_topics for p in t.partitions]
    errors: dict[tuple[str, int], int] = {}
    if not authz.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        errors = dict.fromkeys(wanted, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)
    else:
        names = {t for t, _ in wanted}
        allowed = authz.allowed_names(ctx, AclOperation.WRITE, ResourceType.TOPIC, names)
        image = ctx.broker.image
        for tp in wanted:
            if tp[0] not in allowed:
                errors[tp] = Errors.TOPIC_AUTHORIZATION_FAILED
            elif image.partition(tp[0], tp[1]) is None:
                errors[tp] = Errors.UNKNOWN_TOPIC_OR_PARTITION
        if errors:
            for tp in wanted:
                errors.setdefault(tp, Errors.OPERATION_NOT_ATTEMPTED)
        else:
            error = await coordinator(ctx).add_partitions(
                tid,
                int(request.v3_and_below_producer_id),
                int(request.v3_and_below_producer_epoch),
                wanted,
            )
            error = client_error(error, "add_partitions", ctx.api_version)
            errors = dict.fromkeys(wanted, error)
    by_topic: dict[str, list[dict[str, int]]] = {}
    for (topic, p), code in errors.items():
        by_topic.setdefault(topic, []).append({"partition_index": p, "partition_error_code": code})
    return {
        "throttle_time": 0,
        "results_by_topic_v3_and_below": [
            {"name": topic, "results_by_partition": parts} for topic, parts in by_topic.items()
        ],
    }
