"""SyncGroup (14), v0-5: the leader hands in the assignment, every member gets its own once it
is written to ``__consumer_offsets``. v5 requires and checks the protocol type and name
(INCONSISTENT_GROUP_PROTOCOL otherwise).

Needs READ on the group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..group.model import SyncResult
from ..registry import RequestContext, handler


@handler(ApiKey.SYNC_GROUP, (0, 5))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    protocol_type = getattr(request, "protocol_type", None)
    protocol_name = getattr(request, "protocol_name", None)
    if not authz.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        result = SyncResult(Errors.GROUP_AUTHORIZATION_FAILED)
    elif ctx.api_version >= 5 and (protocol_type is None or protocol_name is None):
        result = SyncResult(Errors.INCONSISTENT_GROUP_PROTOCOL)
    else:
        result = await ctx.broker.group_coordinator.sync_group(
            request.group_id,
            member_id=request.member_id,
            group_instance_id=getattr(request, "group_instance_id", None),
            generation_id=request.generation_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments={a.member_id: bytes(a.assignment) for a in request.assignments},
        )
    return {
        "throttle_time": 0,
        "error_code": result.error,
        "protocol_type": result.protocol_type,
        "protocol_name": result.protocol_name,
        "assignment": result.assignment,
    }
