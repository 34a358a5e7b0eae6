"""CreateAcls (30), v1-3: add ACLs, forwarded to the controller, which writes one
AccessControlEntryRecord per new ACL. The caller needs ALTER on the cluster
(CLUSTER_AUTHORIZATION_FAILED for every creation otherwise); without an authorizer every
creation gets SECURITY_DISABLED, as in Kafka. A malformed creation (an unknown or ANY resource
type, pattern type, operation or permission, an empty name, a CLUSTER resource not named
``kafka-cluster``, a principal without ``Type:``) gets INVALID_REQUEST naming what was wrong;
the others are still created."""

from __future__ import annotations

from typing import Any

from brook.metadata.acl_control import AclOutcome
from brook.metadata.controller_api import ControllerError
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import AclBinding, AclOperation, binding_of

from .. import authz
from ..controller_channel import call_controller
from ..registry import BROKER, CONTROLLER, RequestContext, handler

REMOTE_VERSION = 3
NO_AUTHORIZER = "No Authorizer is configured."


def request_of(bindings: list[AclBinding]) -> dict[str, Any]:
    return {"creations": [b.creation_fields() for b in bindings]}


def results_of(response: Any) -> list[AclOutcome]:
    return [AclOutcome(int(r.error_code), r.error_message) for r in response.results]


def _response(outcomes: list[AclOutcome]) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "results": [
            {"error_code": o.error_code, "error_message": o.error_message} for o in outcomes
        ],
    }


@handler(ApiKey.CREATE_ACLS, (1, 3), scopes=(BROKER, CONTROLLER))
async def handle(ctx: RequestContext, request: Any) -> dict[str, Any]:
    count = len(request.creations)
    if not authz.enabled(ctx):
        return _response([AclOutcome(Errors.SECURITY_DISABLED, NO_AUTHORIZER)] * count)
    if not authz.authorize_cluster(ctx, AclOperation.ALTER):
        denied = AclOutcome(Errors.CLUSTER_AUTHORIZATION_FAILED, "Cluster authorization failed.")
        return _response([denied] * count)
    bindings = [
        binding_of(
            c.resource_type,
            c.resource_name,
            c.resource_pattern_type,
            c.principal,
            c.host,
            c.operation,
            c.permission_type,
        )
        for c in request.creations
    ]
    try:
        outcomes = await call_controller(
            ctx.broker, lambda c: c.create_acls(bindings), local=ctx.on_controller_listener
        )
    except ControllerError as exc:
        outcomes = [AclOutcome(exc.error_code, exc.message)] * count
    return _response(outcomes)
