"""Kafka's StandardAuthorizer as a plain object: ACLs in, ALLOWED or DENIED out.

The rules are those of Kafka's ``StandardAuthorizerData``:

- a super user (``super.users``) may do anything;
- the ACLs that apply to a resource are its literal ACLs, the literal wildcard ``*`` of its
  type, and every prefixed ACL whose prefix starts its name;
- among those, an ACL counts when its principal is the caller's or ``User:*`` and its host is
  the caller's address or ``*``;
- a DENY of the operation (or of ALL) wins over everything; an ALLOW of the operation, of ALL,
  or of an operation that implies it (READ, WRITE, DELETE and ALTER imply DESCRIBE;
  ALTER_CONFIGS implies DESCRIBE_CONFIGS) allows; a DENY is never widened by implication;
- a resource no ACL applies to at all (whoever it names) is allowed only with
  ``allow.everyone.if.no.acl.found``; otherwise anything not allowed is denied.

The node builds one from its metadata image's ACLs and rebuilds it when they change, so every
node of a cluster decides the same way.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from .acl import (
    SUPPORTED_OPERATIONS,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from .principal import KafkaPrincipal

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
BROOK_AUTHORIZER = "brook.security.authorizer.StandardAuthorizer"
AUTHORIZER_CLASSES = (STANDARD_AUTHORIZER, BROOK_AUTHORIZER)

_IMPLIES_DESCRIBE = frozenset(
    {
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    }
)
# Decisions remembered per authorizer (one per ACL set); forgotten all at once when full.
_MAX_DECISIONS = 100_000
_IMPLIES_DESCRIBE_CONFIGS = frozenset({AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS})


def parse_super_users(text: str | None) -> frozenset[str]:
    """``super.users``: principals separated by semicolons (``User:admin;User:alice``)."""
    if not text:
        return frozenset()
    return frozenset(p.strip() for p in text.split(";") if p.strip())


@dataclass(frozen=True, slots=True)
class Caller:
    """Who asks, and from which address."""

    principal: KafkaPrincipal
    host: str


def _grants(acl: AclBinding, operation: AclOperation) -> bool:
    """Whether ``acl`` (of either permission) speaks about ``operation``."""
    if acl.operation == AclOperation.ALL or acl.operation == operation:
        return True
    if acl.permission != AclPermissionType.ALLOW:
        return False
    if operation == AclOperation.DESCRIBE:
        return acl.operation in _IMPLIES_DESCRIBE
    if operation == AclOperation.DESCRIBE_CONFIGS:
        return acl.operation in _IMPLIES_DESCRIBE_CONFIGS
    return False


@dataclass
class _TypeIndex:
    """One resource type's ACLs by name: a resource's prefixed ACLs are found by looking up
    each prefix of its name (as many lookups as its name has characters, whatever the
    number of ACLs)."""

    literal: dict[str, list[AclBinding]] = field(default_factory=lambda: defaultdict(list))
    prefixed: dict[str, list[AclBinding]] = field(default_factory=lambda: defaultdict(list))


class StandardAuthorizer:
    def __init__(
        self,
        acls: Iterable[AclBinding],
        super_users: Iterable[str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.super_users = frozenset(super_users)
        self.allow_if_no_acl = allow_everyone_if_no_acl_found
        self._decisions: dict[tuple[Caller, AclOperation, ResourceType, str], bool] = {}
        self._index: dict[ResourceType, _TypeIndex] = defaultdict(_TypeIndex)
        for acl in acls:
            index = self._index[acl.resource_type]
            if acl.pattern_type == PatternType.PREFIXED:
                index.prefixed[acl.resource_name].append(acl)
            else:
                index.literal[acl.resource_name].append(acl)

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        return str(principal) in self.super_users

    def _applying(self, resource_type: ResourceType, name: str) -> list[AclBinding]:
        index = self._index.get(resource_type)
        if index is None:
            return []
        found = list(index.literal.get(name, ()))
        if name != WILDCARD:
            found.extend(index.literal.get(WILDCARD, ()))
        if index.prefixed:
            for end in range(1, len(name) + 1):
                found.extend(index.prefixed.get(name[:end], ()))
        return found

    @staticmethod
    def _concerns(acl: AclBinding, caller: Caller) -> bool:
        if acl.principal != WILDCARD_PRINCIPAL and acl.principal != str(caller.principal):
            return False
        return acl.host == WILDCARD or acl.host == caller.host

    def authorize(
        self, caller: Caller, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        """Memoized: a decision depends only on the ACLs, which this object never changes
        (the node builds a new one when they change)."""
        key = (caller, operation, resource_type, name)
        decided = self._decisions.get(key)
        if decided is None:
            decided = self._decide(caller, operation, resource_type, name)
            if len(self._decisions) >= _MAX_DECISIONS:
                self._decisions.clear()
            self._decisions[key] = decided
        return decided

    def _decide(
        self, caller: Caller, operation: AclOperation, resource_type: ResourceType, name: str
    ) -> bool:
        if self.is_super_user(caller.principal):
            return True
        applying = self._applying(resource_type, name)
        if not applying:
            return self.allow_if_no_acl
        allowed = False
        for acl in applying:
            if not self._concerns(acl, caller) or not _grants(acl, operation):
                continue
            if acl.permission == AclPermissionType.DENY:
                return False
            allowed = True
        return allowed

    def authorized_operations(self, caller: Caller, resource_type: ResourceType, name: str) -> int:
        """Kafka's bitfield of the operations ``caller`` may do on the resource (bit = code)."""
        bits = 0
        for op in SUPPORTED_OPERATIONS[resource_type]:
            if self.authorize(caller, op, resource_type, name):
                bits |= 1 << op
        return bits

    def authorize_any(
        self, caller: Caller, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """Kafka's ``authorizeByResourceType``: may ``caller`` do ``operation`` on at least one
        resource of the type? (InitProducerId without a transactional id asks WRITE on any
        topic.) An allowing ACL counts unless a DENY covers everything it names: a literal
        wildcard deny, a deny of the same literal name, or a prefixed deny that starts its
        name."""
        if self.is_super_user(caller.principal):
            return True
        index = self._index.get(resource_type)
        acls: list[AclBinding] = []
        if index is not None:
            for group in (index.prefixed, index.literal):
                for entries in group.values():
                    acls.extend(entries)
        mine = [a for a in acls if self._concerns(a, caller) and _grants(a, operation)]
        denies = [a for a in mine if a.permission == AclPermissionType.DENY]
        deny_literal = {d.resource_name for d in denies if d.pattern_type == PatternType.LITERAL}
        if WILDCARD in deny_literal:
            return False
        deny_prefixes = [d.resource_name for d in denies if d.pattern_type == PatternType.PREFIXED]
        for allow in mine:
            if allow.permission != AclPermissionType.ALLOW:
                continue
            if any(allow.resource_name.startswith(p) for p in deny_prefixes):
                continue
            if allow.pattern_type == PatternType.LITERAL and allow.resource_name in deny_literal:
                continue
            return True
        # No ACL allows anything of the type: a resource no ACL applies to may still be open.
        return self.authorize(caller, operation, resource_type, "hardcode")
