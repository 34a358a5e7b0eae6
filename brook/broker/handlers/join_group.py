"""JoinGroup (11), v0-9: joins (or rejoins) a classic group and answers once the rebalance
completes. MEMBER_ID_REQUIRED only for v4+ dynamic members; v0 uses the session timeout as the
rebalance timeout; v9 static leaders may be told to skip assignment. Join reasons are ignored.

Needs READ on the group (GROUP_AUTHORIZATION_FAILED).
"""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.build import to_ms
from brook.protocol.errors import Errors
from brook.security.acl import AclOperation, ResourceType

from .. import authz
from ..registry import RequestContext, handler


@handler(ApiKey.JOIN_GROUP, (0, 9))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    version = ctx.api_version
    session_timeout = to_ms(request.session_timeout)
    if not authz.authorize(ctx, AclOperation.READ, ResourceType.GROUP, request.group_id):
        return {
            "throttle_time": 0,
            "error_code": Errors.GROUP_AUTHORIZATION_FAILED,
            "generation_id": -1,
            "protocol_type": None,
            "protocol_name": None if version >= 7 else "",
            "leader": "",
            "skip_assignment": False,
            "member_id": "",
            "members": [],
        }
    instance_id = getattr(request, "group_instance_id", None)
    result = await ctx.broker.group_coordinator.join_group(
        request.group_id,
        member_id=request.member_id,
        group_instance_id=instance_id,
        client_id=ctx.client_id or "",
        client_host=client_host(ctx),
        session_timeout_ms=session_timeout,
        rebalance_timeout_ms=to_ms(request.rebalance_timeout) if version >= 1 else session_timeout,
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        require_known_member_id=version >= 4 and instance_id is None,
        support_skip_assignment=version >= 9,
    )
    protocol_name = result.protocol_name
    if protocol_name is None and version < 7:
        protocol_name = ""  # not nullable before v7
    return {
        "throttle_time": 0,
        "error_code": result.error,
        "generation_id": result.generation_id,
        "protocol_type": result.protocol_type,
        "protocol_name": protocol_name,
        "leader": result.leader_id,
        "skip_assignment": result.skip_assignment,
        "member_id": result.member_id,
        "members": [
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "metadata": m.metadata,
            }
            for m in result.members
        ],
    }


def client_host(ctx: RequestContext) -> str:
    """The client's address as Kafka reports it (``InetAddress.toString``: "/127.0.0.1")."""
    peer = ctx.connection.peer
    host = peer.rsplit(":", 1)[0] if ":" in peer else peer
    return "/" + host.strip("[]")
