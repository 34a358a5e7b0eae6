"""DescribeGroups (15), v0-5: state, protocol and members of each group; member metadata and
assignments only while Stable, as Kafka. An unknown group is "Dead" with no error (v6's
GROUP_ID_NOT_FOUND is not served). Authorized operations (v3+) are all group operations.

Each group needs DESCRIBE (GROUP_AUTHORIZATION_FAILED, nothing else about it); authorized
operations, when asked, are what the authorizer allows.
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler
from .common import INT32_MIN


@handler(ApiKey.DESCRIBE_GROUPS, (0, 5))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    coordinator = ctx.broker.group_coordinator
    with_ops = bool(getattr(request, "include_authorized_operations", False))
    groups = []
    for group_id in request.groups:
        if not authz.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_denied(group_id))
            continue
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
                "authorized_operations": (
                    authz.authorized_operations(ctx, ResourceType.GROUP, group_id)
                    if with_ops
                    else INT32_MIN
                ),
            }
        )
    return {"throttle_time": 0, "groups": groups}


def _denied(group_id: str) -> dict[str, Any]:
    return {
        "error_code": Errors.GROUP_AUTHORIZATION_FAILED,
        "group_id": group_id,
        "group_state": "",
        "protocol_type": "",
        "protocol_data": "",
        "members": [],
        "authorized_operations": INT32_MIN,
    }
