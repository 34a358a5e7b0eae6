"""DeleteAcls (31), v1-3: remove every ACL each filter matches, forwarded to the controller,
which writes a RemoveAccessControlEntryRecord per ACL. The caller needs ALTER on the cluster
(CLUSTER_AUTHORIZATION_FAILED for every filter otherwise); without an authorizer every filter
gets SECURITY_DISABLED. A filter with an unknown code gets INVALID_REQUEST; each other filter
answers with the ACLs it removed."""

from __future__ import annotations

from typing import Any

from brook.metadata.acl_control import AclDeletion
from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclBindingFilter, AclOperation, binding_of

from .. import authz
from ..controller_channel import call_controller
from ..registry import BROKER, CONTROLLER, RequestContext, handler
from .create_acls import NO_AUTHORIZER

REMOTE_VERSION = 3


def filter_of_wire(f: Any) -> AclBindingFilter:
    return AclBindingFilter.of(
        f.resource_type_filter,
        f.resource_name_filter,
        f.pattern_type_filter,
        f.principal_filter,
        f.host_filter,
        f.operation,
        f.permission_type,
    )


def request_of(filters: list[AclBindingFilter]) -> dict[str, Any]:
    return {"filters": [f.wire_fields() for f in filters]}


def results_of(response: Any) -> list[AclDeletion]:
    return [
        AclDeletion(
            int(r.error_code),
            r.error_message,
            [
                binding_of(
                    m.resource_type,
                    m.resource_name,
                    m.pattern_type,
                    m.principal,
                    m.host,
                    m.operation,
                    m.permission_type,
                )
                for m in r.matching_acls
            ],
        )
        for r in response.filter_results
    ]


def _response(results: list[AclDeletion]) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "filter_results": [
            {
                "error_code": r.error_code,
                "error_message": r.error_message,
                "matching_acls": [
                    {
                        "error_code": 0,
                        "error_message": None,
                        "resource_type": int(acl.resource_type),
                        "resource_name": acl.resource_name,
                        "pattern_type": int(acl.pattern_type),
                        "principal": acl.principal,
                        "host": acl.host,
                        "operation": int(acl.operation),
                        "permission_type": int(acl.permission),
                    }
                    for acl in r.removed
                ],
            }
            for r in results
        ],
    }


@handler(ApiKey.DELETE_ACLS, (1, 3), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    count = len(request.filters)
    if not authz.enabled(ctx):
        return _response([AclDeletion(Errors.SECURITY_DISABLED, NO_AUTHORIZER)] * count)
    if not authz.authorize_cluster(ctx, AclOperation.ALTER):
        denied = AclDeletion(Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
        return _response([denied] * count)
    filters = [filter_of_wire(f) for f in request.filters]
    try:
        results = await call_controller(
            ctx.broker, lambda c: c.delete_acls(filters), local=ctx.on_controller_listener
        )
    except ControllerError as exc:
        results = [AclDeletion(exc.error_code, exc.message) for _ in filters]
    return _response(results)
