"""DeleteGroups (42), v0-2: removes Empty groups and their offsets (tombstones in
``__consumer_offsets``); NON_EMPTY_GROUP while members remain, GROUP_ID_NOT_FOUND when unknown.

Each group needs DELETE (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.DELETE_GROUPS, (0, 2))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    names = list(dict.fromkeys(request.groups_names))
    allowed = authz.allowed_names(ctx, AclOperation.DELETE, ResourceType.GROUP, names)
    results = {name: Errors.GROUP_AUTHORIZATION_FAILED for name in names if name not in allowed}
    deletable = [name for name in names if name in allowed]
    if deletable:
        results.update(await ctx.broker.group_coordinator.delete_groups(deletable))
    return {
        "throttle_time": 0,
        "results": [{"group_id": name, "error_code": results[name]} for name in names],
    }
