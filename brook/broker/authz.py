"""What handlers ask before they act: may this request's principal do this?

``NodeAuthorizer`` is the node's ``authorizer.class.name``: None when it is empty (every
request allowed, as Kafka without an authorizer), else a ``StandardAuthorizer`` over the ACLs
of this node's metadata image, rebuilt when they change (``MetadataImage.acls_version``), so
every node decides from the same committed ACLs. Handlers call the helpers below with their
``RequestContext``: the principal is read only through ``ctx.principal``, and the host is the
client's address.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.acl import CLUSTER_NAME, SUPPORTED_OPERATIONS, AclOperation, ResourceType
from brook.security.authorizer import Caller, StandardAuthorizer, parse_super_users

from .refusals import refusal_response

if TYPE_CHECKING:
    from brook.metadata.image import MetadataImage

    from .registry import RequestContext

audit = logging.getLogger("brook.authorizer")

# Without an authorizer Kafka reports every operation of the type as allowed.
_ALL_ALLOWED = {rtype: sum(1 << op for op in ops) for rtype, ops in SUPPORTED_OPERATIONS.items()}


class NodeAuthorizer:
    def __init__(self, config: Any, image_of: Any) -> None:
        """``image_of``: a callable returning the node's current metadata image."""
        self.super_users = parse_super_users(config["super.users"])
        self.allow_if_no_acl = bool(config["allow.everyone.if.no.acl.found"])
        self._image_of = image_of
        # the image (itself, not its id, which a new image could reuse) and ACL version built from
        self._built: tuple[MetadataImage, int] | None = None
        self._authorizer: StandardAuthorizer | None = None

    def current(self) -> StandardAuthorizer:
        image: MetadataImage = self._image_of()
        built = self._built
        if (
            self._authorizer is None
            or built is None
            or built[0] is not image
            or built[1] != image.acls_version
        ):
            self._authorizer = StandardAuthorizer(
                image.acls.values(), self.super_users, self.allow_if_no_acl
            )
            self._built = (image, image.acls_version)
        return self._authorizer


def node_authorizer(config: Any, image_of: Any) -> NodeAuthorizer | None:
    return NodeAuthorizer(config, image_of) if config["authorizer.class.name"] else None


def caller(ctx: RequestContext) -> Caller:
    host = ctx.connection.peer.rpartition(":")[0] or ctx.connection.peer
    return Caller(ctx.principal, host.strip("[]"))


def enabled(ctx: RequestContext) -> bool:
    return ctx.broker.authorizer is not None


def _denied(who: Caller, op: AclOperation, rtype: ResourceType, name: str) -> None:
    """Kafka's authorizer log line for a denial (at DEBUG on ``brook.authorizer``)."""
    audit.debug(
        "Principal = %s is Denied operation = %s from host = %s on resource = %s:%s",
        who.principal,
        op.name,
        who.host,
        rtype.name,
        name,
    )


def authorize(ctx: RequestContext, op: AclOperation, rtype: ResourceType, name: str) -> bool:
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    who = caller(ctx)
    allowed = authorizer.current().authorize(who, op, rtype, name)
    if not allowed:
        _denied(who, op, rtype, name)
    return allowed


def authorize_cluster(ctx: RequestContext, op: AclOperation) -> bool:
    return authorize(ctx, op, ResourceType.CLUSTER, CLUSTER_NAME)


def authorize_any(ctx: RequestContext, op: AclOperation, rtype: ResourceType) -> bool:
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return True
    return authorizer.current().authorize_any(caller(ctx), op, rtype)


def allowed_names(
    ctx: RequestContext, op: AclOperation, rtype: ResourceType, names: Iterable[str]
) -> set[str]:
    """The names among ``names`` the caller may do ``op`` on (each asked once)."""
    authorizer = ctx.broker.authorizer
    unique = set(names)
    if authorizer is None:
        return unique
    current, who = authorizer.current(), caller(ctx)
    allowed = {n for n in unique if current.authorize(who, op, rtype, n)}
    for name in unique - allowed:
        _denied(who, op, rtype, name)
    return allowed


def authorized_operations(ctx: RequestContext, rtype: ResourceType, name: str) -> int:
    """Kafka's bitfield of what the caller may do on the resource."""
    authorizer = ctx.broker.authorizer
    if authorizer is None:
        return _ALL_ALLOWED[rtype]
    return authorizer.current().authorized_operations(caller(ctx), rtype, name)


def cluster_operations(ctx: RequestContext) -> int:
    """The cluster's authorized operations as Metadata and DescribeCluster report them: 0 for
    a caller without DESCRIBE on the cluster, as Kafka answers."""
    if not authorize_cluster(ctx, AclOperation.DESCRIBE):
        return 0
    return authorized_operations(ctx, ResourceType.CLUSTER, CLUSTER_NAME)


# Served on the controller listener whoever asks: what a client needs to authenticate.
ALWAYS_SERVED = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})


def controller_listener_refusal(ctx: RequestContext) -> str | None:
    """Why a request on the controller listener is refused, or None. Brook forwards admin
    requests and sends its inter-node RPCs there as the node itself (no Envelope carrying the
    client's principal), having authorized the client on the broker listener; so the
    listener serves principals with CLUSTER_ACTION on the cluster (DescribeQuorum: DESCRIBE),
    as Kafka's ControllerApis asks of brokers and controllers. ApiVersions and the SASL
    exchange (which comes before there is a principal to authorize) are always served."""
    if ctx.scope != "controller" or ctx.broker.authorizer is None:
        return None
    if ctx.api_key in ALWAYS_SERVED:
        return None
    op = (
        AclOperation.DESCRIBE
        if ctx.api_key == ApiKey.DESCRIBE_QUORUM
        else AclOperation.CLUSTER_ACTION
    )
    if authorize_cluster(ctx, op):
        return None
    return f"{ctx.principal} may not {op.name} on the cluster (needed on the controller listener)"


def refused_whole(api_key: int, version: int, request: Any, reason: str) -> dict[str, Any]:
    """The controller listener's answer to a request ``controller_listener_refusal``
    refused: CLUSTER_AUTHORIZATION_FAILED, as Kafka's ControllerApis answers."""
    return refusal_response(api_key, version, request, Errors.CLUSTER_AUTHORIZATION_FAILED, reason)
