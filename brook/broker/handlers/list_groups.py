"""ListGroups (16), v0-5: the groups this broker coordinates, filtered by state (v4+,
case-insensitive) and type (v5+: every group is "classic"). COORDINATOR_LOAD_IN_PROGRESS
comes with the groups already loaded.

DESCRIBE on the cluster lists every group; without it, only the groups the caller may
describe.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.LIST_GROUPS, (0, 5))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    error, groups = ctx.broker.group_coordinator.list_groups(
        getattr(request, "states_filter", ()), getattr(request, "types_filter", ())
    )
    if not authz.authorize_cluster(ctx, AclOperation.DESCRIBE):
        visible = authz.allowed_names(
            ctx, AclOperation.DESCRIBE, ResourceType.GROUP, (g[0] for g in groups)
        )
        groups = [g for g in groups if g[0] in visible]
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
