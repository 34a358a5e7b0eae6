"""DescribeGroups (15), v0-5: state, protocol and members of each group; member metadata and
assignments only while Stable, as Kafka. An unknown group is "Dead" with no error (v6's
GROUP_ID_NOT_FOUND is not served). Authorized operations (v3+) are all group operations.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey

from ..registry import RequestContext, handler
from .common import GROUP_OPERATIONS, INT32_MIN


@handler(ApiKey.DESCRIBE_GROUPS, (0, 5))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    coordinator = ctx.broker.group_coordinator
    with_ops = bool(getattr(request, "include_authorized_operations", False))
    groups = []
    for group_id in request.groups:
        error, desc = coordinator.describe_group(group_id)
        groups.append(
            {
                "error_code": error,
                "group_id": group_id,
                "group_state": desc.state,
                "protocol_type": desc.protocol_type,
                "protocol_data": desc.protocol,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in desc.members
                ],
                "authorized_operations": GROUP_OPERATIONS if with_ops else INT32_MIN,
            }
        )
    return {"throttle_time": 0, "groups": groups}
