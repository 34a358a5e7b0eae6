"""ListGroups (16), v0-5: the groups this broker coordinates, filtered by state (v4+,
case-insensitive) and type (v5+: every group is "classic"). COORDINATOR_LOAD_IN_PROGRESS
comes with the groups already loaded.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey

from ..registry import RequestContext, handler


@handler(ApiKey.LIST_GROUPS, (0, 5))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    error, groups = ctx.broker.group_coordinator.list_groups(
        getattr(request, "states_filter", ()), getattr(request, "types_filter", ())
    )
    return {
        "throttle_time": 0,
        "error_code": error,
        "groups": [
            {
                "group_id": group_id,
                "protocol_type": protocol_type,
                "group_state": state,
                "group_type": "classic",
            }
            for group_id, protocol_type, state in groups
        ],
    }
