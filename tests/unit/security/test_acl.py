"""ACL bindings and filters: Kafka's validation of a new ACL and its filter matching."""

from __future__ import annotations

import pytest

from brook.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    binding_of,
    new_acl_error,
)

GOOD = AclBinding(
    ResourceType.TOPIC,
    "orders",
    PatternType.LITERAL,
    "User:alice",
    "*",
    AclOperation.READ,
    AclPermissionType.ALLOW,
)


def test_a_well_formed_acl_is_accepted() -> None:
    assert new_acl_error(GOOD) is None


@pytest.mark.parametrize(
    ("codes", "expected"),
    [
        ((99, "t", 3, "User:a", "*", 3, 3), "Invalid resourceType UNKNOWN"),
        ((1, "t", 3, "User:a", "*", 3, 3), "Invalid resourceType ANY"),
        ((2, "t", 2, "User:a", "*", 3, 3), "Invalid patternType MATCH"),
        ((2, "t", 3, "User:a", "*", 1, 3), "Invalid operation ANY"),
        ((2, "t", 3, "User:a", "*", 77, 3), "Invalid operation UNKNOWN"),
        ((2, "t", 3, "User:a", "*", 3, 1), "Invalid permissionType ANY"),
        ((2, "", 3, "User:a", "*", 3, 3), "Invalid empty resource name"),
        ((4, "c", 3, "User:a", "*", 7, 3), "The only valid name for the CLUSTER resource"),
        ((2, "t", 3, "alice", "*", 3, 3), "Could not parse principal"),
    ],
)
def test_a_malformed_acl_is_refused_naming_what_is_wrong(codes: tuple, expected: str) -> None:
    error = new_acl_error(binding_of(*codes))
    assert error is not None and error.startswith(expected)


def test_filters_match_as_kafkas() -> None:
    prefixed = AclBinding(
        ResourceType.TOPIC,
        "ord",
        PatternType.PREFIXED,
        "User:bob",
        "*",
        AclOperation.WRITE,
        AclPermissionType.DENY,
    )
    everything = AclBindingFilter.of(1, None, 1, None, None, 1, 1)
    assert everything.matches(GOOD) and everything.matches(prefixed)
    literal_only = AclBindingFilter.of(2, "orders", 3, None, None, 1, 1)
    assert literal_only.matches(GOOD) and not literal_only.matches(prefixed)
    applying = AclBindingFilter.of(2, "orders", 2, None, None, 1, 1)  # MATCH
    assert applying.matches(GOOD) and applying.matches(prefixed)
    by_principal = AclBindingFilter.of(1, None, 1, "User:bob", None, 1, 1)
    assert by_principal.matches(prefixed) and not by_principal.matches(GOOD)
    denies = AclBindingFilter.of(1, None, 1, None, None, 1, 2)
    assert denies.matches(prefixed) and not denies.matches(GOOD)
    assert AclBindingFilter.of(42, None, 1, None, None, 1, 1).error() is not None
    assert everything.error() is None
