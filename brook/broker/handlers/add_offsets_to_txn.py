"""AddOffsetsToTxn (25), v0-3: a transactional producer that will commit a consumer group's
offsets adds the group's ``__consumer_offsets`` partition to its transaction.

The transactional id needs WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), the group READ
(GROUP_AUTHORIZATION_FAILED); then the coordinator's answer, PRODUCER_FENCED as
INVALID_PRODUCER_EPOCH below v2. The offsets themselves (TxnOffsetCommit) are not served yet.
"""

from __future__ import annotations

from typing import Any

from brook.broker.group.store import OFFSETS_TOPIC
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler
from .txn_common import client_error, coordinator


@handler(ApiKey.ADD_OFFSETS_TO_TXN, (0, 3))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    tid = request.transactional_id
    if not authz.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        error = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    elif not authz.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        error = Errors.GROUP_AUTHORIZATION_FAILED
    else:
        groups = ctx.broker.group_coordinator
        offsets_partition = (OFFSETS_TOPIC, groups.partition_for(request.group_id))
        error = await coordinator(ctx).add_partitions(
            tid, int(request.producer_id), int(request.producer_epoch), [offsets_partition]
        )
        error = client_error(error, "add_offsets", ctx.api_version)
    return {"throttle_time": 0, "error_code": error}
