"""DeleteGroups (42), v0-2: removes Empty groups and their offsets (tombstones in
``__consumer_offsets``); NON_EMPTY_GROUP while members remain, GROUP_ID_NOT_FOUND when unknown.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey

from ..registry import RequestContext, handler


@handler(ApiKey.DELETE_GROUPS, (0, 2))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    names = list(dict.fromkeys(request.groups_names))
    results = await ctx.broker.group_coordinator.delete_groups(names)
    return {
        "throttle_time": 0,
        "results": [{"group_id": name, "error_code": results[name]} for name in names],
    }
