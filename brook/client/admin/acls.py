"""The admin client's ACL operations: CreateAcls, DescribeAcls, DeleteAcls (sent to any
broker, which forwards changes to the controller). ACLs are ``brook.security.acl``'s
``AclBinding`` and ``AclBindingFilter``, the same values the broker keeps, with Kafka's codes.
Only a lost connection or a timeout is retried: a broker's answer about an ACL is final."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import KafkaError
from brook.security.acl import AclBinding, AclBindingFilter, binding_of

from .core import AdminCore, Outcome, item_error, retry_transport

__all__ = ["create_acls", "delete_acls", "describe_acls"]


async def create_acls(
    core: AdminCore, acls: Iterable[AclBinding], *, timeout_ms: int | None = None
) -> None:
    """Create ACLs; AdminError names each one the broker refused and why."""
    wanted = {acl: acl for acl in acls}
    deadline = core.deadline(timeout_ms)

    async def attempt(pending: dict[AclBinding, AclBinding], deadline: float) -> Outcome:
        order = list(pending)
        data = {"creations": [a.creation_fields() for a in order]}
        resp = await core.send_any(ApiKey.CREATE_ACLS, data)
        out: Outcome = {}
        for acl, result in zip(order, resp.results, strict=True):
            code = int(result.error_code)
            out[acl] = item_error(code, f"ACL {acl}", result.error_message) if code else None
        return out

    await core.per_item(wanted, attempt, deadline, retry_transport)


async def describe_acls(
    core: AdminCore, acl_filter: AclBindingFilter, *, timeout_ms: int | None = None
) -> list[AclBinding]:
    """Every ACL the filter matches."""
    deadline = core.deadline(timeout_ms)

    async def attempt() -> Any:
        resp = await core.send_any(ApiKey.DESCRIBE_ACLS, acl_filter.wire_fields())
        code = int(resp.error_code)
        if code:
            raise KafkaError(code, resp.error_message or "DescribeAcls")
        return resp

    resp = await core.call(attempt, deadline)
    return [
        binding_of(
            r.resource_type,
            r.resource_name,
            r.pattern_type,
            a.principal,
            a.host,
            a.operation,
            a.permission_type,
        )
        for r in resp.resources
        for a in r.acls
    ]


async def delete_acls(
    core: AdminCore, filters: Iterable[AclBindingFilter], *, timeout_ms: int | None = None
) -> dict[AclBindingFilter, list[AclBinding]]:
    """Delete every ACL each filter matches; returns the ACLs each removed."""
    wanted = {f: f for f in filters}
    deadline = core.deadline(timeout_ms)

    async def attempt(pending: dict[AclBindingFilter, Any], deadline: float) -> Outcome:
        order = list(pending)
        resp = await core.send_any(
            ApiKey.DELETE_ACLS, {"filters": [f.wire_fields() for f in order]}
        )
        out: Outcome = {}
        for f, result in zip(order, resp.filter_results, strict=True):
            code = int(result.error_code)
            if code:
                out[f] = item_error(code, "ACL filter", result.error_message)
                continue
            out[f] = [
                binding_of(
                    m.resource_type,
                    m.resource_name,
                    m.pattern_type,
                    m.principal,
                    m.host,
                    m.operation,
                    m.permission_type,
                )
                for m in result.matching_acls
            ]
        return out

    return await core.per_item(wanted, attempt, deadline, retry_transport)
