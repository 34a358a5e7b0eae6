"""Heartbeat (12), v0-4: keeps a member's session; REBALANCE_IN_PROGRESS tells it to rejoin,
ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID / FENCED_INSTANCE_ID (v3+, static members) fence it.

Needs READ on the group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.HEARTBEAT, (0, 4))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not authz.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {"throttle_time": 0, "error_code": Errors.GROUP_AUTHORIZATION_FAILED}
    error = ctx.broker.group_coordinator.heartbeat(
        request.group_id,
        member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        generation_id=request.generation_id,
    )
    return {"throttle_time": 0, "error_code": error}
