"""DescribeAcls (29), v1-3: the ACLs one filter matches, from this node's metadata image,
grouped by resource pattern. The caller needs DESCRIBE on the cluster
(CLUSTER_AUTHORIZATION_FAILED); without an authorizer the answer is SECURITY_DISABLED; a
filter with an unknown code is INVALID_REQUEST. A MATCH pattern filter returns every ACL that
applies to the named resource (its literal, the wildcard and every matching prefix)."""

from __future__ import annotations

from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclBinding, AclBindingFilter, AclOperation

from .. import authz
from ..registry import RequestContext, handler
from .create_acls import NO_AUTHORIZER


def _error(code: int, message: str) -> dict[str, Any]:
    return {"throttle_time": 0, "error_code": code, "error_message": message, "resources": []}


def grouped(acls: list[AclBinding]) -> list[dict[str, Any]]:
    by_pattern: dict[tuple[int, str, int], list[AclBinding]] = {}
    for acl in sorted(acls, key=str):
        key = (int(acl.resource_type), acl.resource_name, int(acl.pattern_type))
        by_pattern.setdefault(key, []).append(acl)
    return [
        {
            "resource_type": rtype,
            "resource_name": name,
            "pattern_type": ptype,
            "acls": [
                {
                    "principal": a.principal,
                    "host": a.host,
                    "operation": int(a.operation),
                    "permission_type": int(a.permission),
                }
                for a in entries
            ],
        }
        for (rtype, name, ptype), entries in by_pattern.items()
    ]


@handler(ApiKey.DESCRIBE_ACLS, (1, 3))
def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if not authz.enabled(ctx):
        return _error(Errors.SECURITY_DISABLED, NO_AUTHORIZER)
    if not authz.authorize_cluster(ctx, AclOperation.DESCRIBE):
        return _error(Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
    acl_filter = AclBindingFilter.of(
        request.resource_type_filter,
        request.resource_name_filter,
        request.pattern_type_filter,
        request.principal_filter,
        request.host_filter,
        request.operation,
        request.permission_type,
    )
    problem = acl_filter.error()
    if problem is not None:
        return _error(Errors.INVALID_REQUEST, problem)
    matched = [acl for acl in ctx.broker.image.acls.values() if acl_filter.matches(acl)]
    return {
        "throttle_time": 0,
        "error_code": Errors.NONE,
        "error_message": None,
        "resources": grouped(matched),
    }
