"""ACLs as Kafka defines them: resource patterns, entries, bindings and filters.

The codes are Kafka's (``ResourceType``, ``PatternType``, ``AclOperation``,
``AclPermissionType``), since they travel in CreateAcls / DescribeAcls / DeleteAcls and in the
metadata log's AccessControlEntryRecord. A filter matches bindings as Kafka's
``AclBindingFilter`` does: ANY matches every value, a null name / principal / host matches
every one, and a MATCH pattern filter matches every pattern that would apply to its name (the
literal name, the literal wildcard ``*``, and every prefix of it).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(enum.IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


# The operations each resource type has (Kafka's ResourceType -> supported AclOperations),
# which is what authorized-operation bitfields are made of.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE),
    ResourceType.CLUSTER: (
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}


def _enum_name(value: enum.IntEnum) -> str:
    return value.name


@dataclass(frozen=True, slots=True)
class AclBinding:
    """One ACL: a resource pattern and an entry (who, from where, what, allow or deny)."""

    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def creation_fields(self) -> dict[str, Any]:
        """The ACL as a CreateAcls request's creation carries it."""
        return {
            "resource_type": int(self.resource_type),
            "resource_name": self.resource_name,
            "resource_pattern_type": int(self.pattern_type),
            "principal": self.principal,
            "host": self.host,
            "operation": int(self.operation),
            "permission_type": int(self.permission),
        }

    def __str__(self) -> str:
        return (
            f"(pattern=ResourcePattern(resourceType={_enum_name(self.resource_type)}, "
            f"name={self.resource_name}, patternType={_enum_name(self.pattern_type)}), "
            f"entry=(principal={self.principal}, host={self.host}, "
            f"operation={_enum_name(self.operation)}, "
            f"permissionType={_enum_name(self.permission)}))"
        )


def _code(enum_type: type[enum.IntEnum], value: int) -> enum.IntEnum:
    """Kafka's ``fromCode``: a code it does not know is UNKNOWN."""
    try:
        return enum_type(value)
    except ValueError:
        return enum_type(0)


def binding_of(
    resource_type: int,
    resource_name: str,
    pattern_type: int,
    principal: str,
    host: str,
    operation: int,
    permission: int,
) -> AclBinding:
    """An AclBinding from wire codes; unknown codes become UNKNOWN (``new_acl_error``)."""
    return AclBinding(
        _code(ResourceType, resource_type),  # type: ignore[arg-type]
        resource_name,
        _code(PatternType, pattern_type),  # type: ignore[arg-type]
        principal,
        host,
        _code(AclOperation, operation),  # type: ignore[arg-type]
        _code(AclPermissionType, permission),  # type: ignore[arg-type]
    )


def new_acl_error(binding: AclBinding) -> str | None:
    """Why an ACL cannot be created (INVALID_REQUEST), as Kafka's CreateAcls handler and
    AclControlManager.validateNewAcl refuse it, or None."""
    if binding.resource_type in (ResourceType.UNKNOWN, ResourceType.ANY):
        return f"Invalid resourceType {binding.resource_type.name}"
    if binding.pattern_type not in (PatternType.LITERAL, PatternType.PREFIXED):
        return f"Invalid patternType {binding.pattern_type.name}"
    if binding.operation in (AclOperation.UNKNOWN, AclOperation.ANY):
        return f"Invalid operation {binding.operation.name}"
    if binding.permission not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        return f"Invalid permissionType {binding.permission.name}"
    if binding.resource_type == ResourceType.CLUSTER and binding.resource_name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not binding.resource_name:
        return "Invalid empty resource name"
    if ":" not in binding.principal:
        return (
            f"Could not parse principal from `{binding.principal}` (no colon is present "
            "separating the principal type from the principal name)"
        )
    return None


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """DescribeAcls' and DeleteAcls' filter; None name / principal / host match anything."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    @classmethod
    def of(
        cls,
        resource_type: int,
        resource_name: str | None,
        pattern_type: int,
        principal: str | None,
        host: str | None,
        operation: int,
        permission: int,
    ) -> AclBindingFilter:
        return cls(
            _code(ResourceType, resource_type),  # type: ignore[arg-type]
            resource_name,
            _code(PatternType, pattern_type),  # type: ignore[arg-type]
            principal,
            host,
            _code(AclOperation, operation),  # type: ignore[arg-type]
            _code(AclPermissionType, permission),  # type: ignore[arg-type]
        )

    def wire_fields(self) -> dict[str, Any]:
        """The filter as DescribeAcls' request and DeleteAcls' filters carry it."""
        return {
            "resource_type_filter": int(self.resource_type),
            "resource_name_filter": self.resource_name,
            "pattern_type_filter": int(self.pattern_type),
            "principal_filter": self.principal,
            "host_filter": self.host,
            "operation": int(self.operation),
            "permission_type": int(self.permission),
        }

    def error(self) -> str | None:
        """Why this filter is malformed (INVALID_REQUEST): one of its codes is unknown."""
        for label, value in (
            ("resourceType", self.resource_type),
            ("patternType", self.pattern_type),
            ("operation", self.operation),
            ("permissionType", self.permission),
        ):
            if value == 0:
                return f"Invalid {label}: the filter contains an UNKNOWN element"
        return None

    def matches(self, acl: AclBinding) -> bool:
        if self.resource_type != ResourceType.ANY and self.resource_type != acl.resource_type:
            return False
        if not self._pattern_matches(acl):
            return False
        if self.principal is not None and self.principal != acl.principal:
            return False
        if self.host is not None and self.host != acl.host:
            return False
        if self.operation != AclOperation.ANY and self.operation != acl.operation:
            return False
        return self.permission == AclPermissionType.ANY or self.permission == acl.permission

    def _pattern_matches(self, acl: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if acl.pattern_type == PatternType.LITERAL:
                return acl.resource_name in (self.resource_name, WILDCARD)
            if acl.pattern_type == PatternType.PREFIXED:
                return self.resource_name.startswith(acl.resource_name)
            return False
        if self.pattern_type != PatternType.ANY and self.pattern_type != acl.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == acl.resource_name
