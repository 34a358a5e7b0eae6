"""EndTxn (26), v0-4: commit or abort the producer's transaction. The coordinator writes
PrepareCommit / PrepareAbort to ``__transaction_state`` and answers; the markers go to every
partition of the transaction afterwards, then CompleteCommit / CompleteAbort is written.

The transactional id needs WRITE (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Kafka's errors:
INVALID_TXN_STATE (nothing begun, or the other outcome already decided),
CONCURRENT_TRANSACTIONS (a retry while markers are out), PRODUCER_FENCED (INVALID_PRODUCER_EPOCH
below v2), INVALID_PRODUCER_ID_MAPPING, NOT_COORDINATOR. v5 (transaction version 2) is not
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


@handler(ApiKey.END_TXN, (0, 4))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    tid = request.transactional_id
    if not authz.authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, tid):
        error = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    else:
        error = await coordinator(ctx).end_txn(
            tid, int(request.producer_id), int(request.producer_epoch), bool(request.committed)
        )
        error = client_error(error, "end_txn", ctx.api_version)
    return {"throttle_time": 0, "error_code": error}
