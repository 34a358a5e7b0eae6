"""``brook acls`` without a broker: kafka-acls.sh's flags into ACLs, as AclCommand expands
them."""

from __future__ import annotations

import pytest

from brook.cli.acls import acls_to_add, build_parser, operation_of, resources
from brook.cli.common import CommandError
from brook.security.acl import AclOperation, AclPermissionType, PatternType, ResourceType

Op = AclOperation


def _args(*argv: str):  # type: ignore[no-untyped-def]
    return build_parser().parse_args(list(argv))


def _ops(args, kind: ResourceType) -> set[AclOperation]:  # type: ignore[no-untyped-def]
    return {
        a.operation
        for pattern, acls in acls_to_add(args).items()
        for a in acls
        if pattern[0] == kind
    }


def test_producer_is_write_describe_create_and_idempotent_write() -> None:
    args = _args(
        "--add",
        "--allow-principal",
        "User:a",
        "--producer",
        "--topic",
        "t",
        "--transactional-id",
        "tx",
        "--idempotent",
    )
    assert _ops(args, ResourceType.TOPIC) == {Op.WRITE, Op.DESCRIBE, Op.CREATE}
    assert _ops(args, ResourceType.TRANSACTIONAL_ID) == {Op.WRITE, Op.DESCRIBE}
    assert _ops(args, ResourceType.CLUSTER) == {Op.IDEMPOTENT_WRITE}


def test_consumer_is_read_describe_on_topics_and_read_on_groups() -> None:
    args = _args(
        "--add", "--allow-principal", "User:a", "--consumer", "--topic", "t", "--group", "g"
    )
    assert _ops(args, ResourceType.TOPIC) == {Op.READ, Op.DESCRIBE}
    assert _ops(args, ResourceType.GROUP) == {Op.READ}


def test_principals_hosts_and_operations_multiply() -> None:
    args = _args(
        "--add",
        "--allow-principal",
        "User:a",
        "--allow-principal",
        "User:b",
        "--allow-host",
        "10.0.0.1",
        "--allow-host",
        "10.0.0.2",
        "--deny-principal",
        "User:c",
        "--operation",
        "Read",
        "--operation",
        "cluster_action",
        "--topic",
        "t",
    )
    acls = acls_to_add(args)[(ResourceType.TOPIC, "t", PatternType.LITERAL)]
    allows = [a for a in acls if a.permission == AclPermissionType.ALLOW]
    denies = [a for a in acls if a.permission == AclPermissionType.DENY]
    assert len(allows) == 2 * 2 * 2
    assert {(a.principal, a.host) for a in denies} == {("User:c", "*")}


def test_defaults_and_pattern_types() -> None:
    args = _args("--add", "--allow-principal", "User:a", "--topic", "t")
    (acl,) = acls_to_add(args)[(ResourceType.TOPIC, "t", PatternType.LITERAL)]
    assert (acl.host, acl.operation) == ("*", Op.ALL)
    listing = _args("--list", "--topic", "t")
    assert resources(listing) == [(ResourceType.TOPIC, "t", PatternType.ANY)]
    with pytest.raises(CommandError, match="not valid when adding"):
        resources(_args("--add", "--resource-pattern-type", "match", "--topic", "t"))


def test_bad_input_is_named() -> None:
    with pytest.raises(CommandError, match="Invalid operation: Fly"):
        operation_of("Fly")
    with pytest.raises(CommandError, match="Invalid operation: Any"):
        operation_of("Any")
    with pytest.raises(CommandError, match="--allow-principal, --deny-principal"):
        acls_to_add(_args("--add", "--topic", "t"))
