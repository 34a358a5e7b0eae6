"""LeaveGroup (13), v0-5: one member (v0-2) or a batch (v3+, also by group.instance.id alone
for administrative removal) leaves and the group rebalances. v0-2 report the first member
error as the top-level one; leave reasons (v5) are ignored.

Needs READ on the group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.LEAVE_GROUP, (0, 5))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if ctx.api_version >= 3:
        members = [(m.member_id, m.group_instance_id) for m in request.members]
    else:
        members = [(request.member_id, None)]
    if not authz.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        top, errors = Errors.GROUP_AUTHORIZATION_FAILED, []
    else:
        top, errors = ctx.broker.group_coordinator.leave_group(request.group_id, members)
    if ctx.api_version < 3:
        first = next((e for e in errors if e != Errors.NONE), Errors.NONE)
        return {"throttle_time": 0, "error_code": top or first}
    return {
        "throttle_time": 0,
        "error_code": top,
        "members": [
            {"member_id": member_id, "group_instance_id": instance_id, "error_code": error}
            for (member_id, instance_id), error in zip(members, errors, strict=False)
        ],
    }
