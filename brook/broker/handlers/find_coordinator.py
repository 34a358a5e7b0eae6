"""FindCoordinator (10), v0-6 (v4+ batched): the leader of the group's ``__consumer_offsets``
partition, creating the topic on first use; for a transactional id (key type 1) the leader of
its ``__transaction_state`` partition, likewise; other key types INVALID_REQUEST.

A group key needs DESCRIBE on the group (GROUP_AUTHORIZATION_FAILED), a transactional id
DESCRIBE on it (TRANSACTIONAL_ID_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler

GROUP_KEY, TRANSACTION_KEY = 0, 1

_MESSAGES = {
    Errors.NONE: "NONE",
    Errors.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    Errors.INVALID_REQUEST: "Unknown coordinator type.",
    Errors.GROUP_AUTHORIZATION_FAILED: "Group authorization failed.",
    Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED: "Transactional Id authorization failed.",
}


@handler(ApiKey.FIND_COORDINATOR, (0, 6))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    key_type = int(getattr(request, "key_type", GROUP_KEY))
    keys = list(request.coordinator_keys) if ctx.api_version >= 4 else [request.key]
    coordinators = [await _find(ctx, key, key_type) for key in keys]
    if ctx.api_version >= 4:
        return {"throttle_time": 0, "coordinators": coordinators}
    return {"throttle_time": 0, **coordinators[0]}


async def _find(ctx: RequestContext, key: str, key_type: int) -> dict[str, Any]:
    if key_type == GROUP_KEY and not authz.authorize(
        ctx, AclOperation.DESCRIBE, ResourceType.GROUP, key
    ):
        error, node_id = Errors.GROUP_AUTHORIZATION_FAILED, -1
    elif key_type == TRANSACTION_KEY and not authz.authorize(
        ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key
    ):
        error, node_id = Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, -1
    elif key_type == GROUP_KEY:
        error, node_id = await ctx.broker.group_coordinator.find_coordinator(key)
    elif key_type == TRANSACTION_KEY:
        error, node_id = await ctx.broker.txn_coordinator.find_coordinator(key)
    else:
        error, node_id = Errors.INVALID_REQUEST, -1
    endpoint = ctx.broker.image.alive_endpoint(node_id, ctx.listener) if not error else None
    if not error and endpoint is None:
        error = Errors.COORDINATOR_NOT_AVAILABLE
    return {
        "key": key,
        "node_id": node_id if endpoint is not None else -1,
        "host": endpoint.host if endpoint is not None else "",
        "port": endpoint.port if endpoint is not None else -1,
        "error_code": error,
        "error_message": _MESSAGES.get(error),
    }
