"""Kafka's StandardAuthorizer rules, one table row at a time."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brook.security.acl import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)
from brook.security.authorizer import Caller, StandardAuthorizer, parse_super_users
from brook.security.principal import KafkaPrincipal

Op = AclOperation
ALICE = Caller(KafkaPrincipal("User", "alice"), "10.0.0.1")
BOB = Caller(KafkaPrincipal("User", "bob"), "10.0.0.2")
TOPIC = ResourceType.TOPIC


def acl(
    name: str,
    op: AclOperation,
    *,
    principal: str = "User:alice",
    host: str = "*",
    allow: bool = True,
    prefixed: bool = False,
    rtype: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(
        rtype,
        name,
        PatternType.PREFIXED if prefixed else PatternType.LITERAL,
        principal,
        host,
        op,
        AclPermissionType.ALLOW if allow else AclPermissionType.DENY,
    )


def authorizer(*acls: AclBinding, supers: str = "", open_: bool = False) -> StandardAuthorizer:
    return StandardAuthorizer(acls, parse_super_users(supers), open_)


# (acls, caller, operation, topic, expected)
RULES = [
    ([acl("t", Op.READ)], ALICE, Op.READ, "t", True),
    ([acl("t", Op.READ)], ALICE, Op.WRITE, "t", False),
    ([acl("t", Op.READ)], BOB, Op.READ, "t", False),
    ([acl("t", Op.READ)], ALICE, Op.READ, "other", False),
    # implications: READ/WRITE/DELETE/ALTER imply DESCRIBE, ALTER_CONFIGS implies DESCRIBE_CONFIGS
    ([acl("t", Op.READ)], ALICE, Op.DESCRIBE, "t", True),
    ([acl("t", Op.WRITE)], ALICE, Op.DESCRIBE, "t", True),
    ([acl("t", Op.DELETE)], ALICE, Op.DESCRIBE, "t", True),
    ([acl("t", Op.ALTER)], ALICE, Op.DESCRIBE, "t", True),
    ([acl("t", Op.CREATE)], ALICE, Op.DESCRIBE, "t", False),
    ([acl("t", Op.DESCRIBE)], ALICE, Op.READ, "t", False),
    ([acl("t", Op.ALTER_CONFIGS)], ALICE, Op.DESCRIBE_CONFIGS, "t", True),
    ([acl("t", Op.DESCRIBE_CONFIGS)], ALICE, Op.ALTER_CONFIGS, "t", False),
    ([acl("t", Op.ALL)], ALICE, Op.DELETE, "t", True),
    # a deny is not widened by implication: DENY READ leaves DESCRIBE to the allows
    ([acl("t", Op.ALL), acl("t", Op.READ, allow=False)], ALICE, Op.DESCRIBE, "t", True),
    ([acl("t", Op.ALL), acl("t", Op.READ, allow=False)], ALICE, Op.READ, "t", False),
    ([acl("t", Op.READ), acl("t", Op.ALL, allow=False)], ALICE, Op.READ, "t", False),
    # prefixed and wildcard patterns
    ([acl("orders-", Op.WRITE, prefixed=True)], ALICE, Op.WRITE, "orders-eu", True),
    ([acl("orders-", Op.WRITE, prefixed=True)], ALICE, Op.WRITE, "order", False),
    ([acl("*", Op.READ)], ALICE, Op.READ, "anything", True),
    ([acl("*", Op.READ, prefixed=True)], ALICE, Op.READ, "anything", False),
    ([acl("t", Op.READ, principal="User:*")], BOB, Op.READ, "t", True),
    # deny wins, whichever pattern carries it
    ([acl("t", Op.READ), acl("t", Op.READ, allow=False)], ALICE, Op.READ, "t", False),
    ([acl("t", Op.READ), acl("*", Op.READ, allow=False)], ALICE, Op.READ, "t", False),
    (
        [acl("t", Op.READ), acl("t", Op.READ, prefixed=True, allow=False)],
        ALICE,
        Op.READ,
        "t",
        False,
    ),
    (
        [
            acl("*", Op.READ, principal="User:*"),
            acl("t", Op.READ, principal="User:bob", allow=False),
        ],
        BOB,
        Op.READ,
        "t",
        False,
    ),
    # host matching: the ACL's host is the client's address or *
    ([acl("t", Op.READ, host="10.0.0.1")], ALICE, Op.READ, "t", True),
    ([acl("t", Op.READ, host="10.0.0.9")], ALICE, Op.READ, "t", False),
    (
        [acl("t", Op.READ), acl("t", Op.READ, host="10.0.0.9", allow=False)],
        ALICE,
        Op.READ,
        "t",
        True,
    ),
    # another resource type does not apply
    ([acl("t", Op.READ, rtype=ResourceType.GROUP)], ALICE, Op.READ, "t", False),
]


@pytest.mark.parametrize(("acls", "who", "op", "topic", "expected"), RULES)
def test_rule_table(
    acls: list[AclBinding], who: Caller, op: AclOperation, topic: str, expected: bool
) -> None:
    assert authorizer(*acls).authorize(who, op, TOPIC, topic) is expected


def test_super_users_may_do_anything_even_against_a_deny() -> None:
    auth = authorizer(acl("t", Op.ALL, principal="User:bob", allow=False), supers="User:x;User:bob")
    assert auth.authorize(BOB, Op.DELETE, TOPIC, "t")
    assert auth.authorize(BOB, Op.CLUSTER_ACTION, ResourceType.CLUSTER, "kafka-cluster")
    assert not auth.authorize(ALICE, Op.READ, TOPIC, "t")


def test_no_acl_found_is_denied_unless_allow_everyone_is_set() -> None:
    assert not authorizer().authorize(ALICE, Op.READ, TOPIC, "t")
    assert authorizer(open_=True).authorize(ALICE, Op.READ, TOPIC, "t")
    # an ACL naming someone else still applies to the resource: no "no ACL found" fallback
    other = acl("t", Op.READ, principal="User:bob")
    assert not authorizer(other, open_=True).authorize(ALICE, Op.READ, TOPIC, "t")
    assert authorizer(other, open_=True).authorize(ALICE, Op.READ, TOPIC, "u")


def test_authorized_operations_bitfield_is_kafkas() -> None:
    auth = authorizer(acl("t", Op.READ), acl("t", Op.ALTER_CONFIGS))
    bits = auth.authorized_operations(ALICE, TOPIC, "t")
    expected = {Op.READ, Op.DESCRIBE, Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS}
    assert bits == sum(1 << op for op in expected)


def test_authorize_any_finds_an_allowed_topic_unless_a_deny_covers_it() -> None:
    write = acl("logs-", Op.WRITE, prefixed=True)
    assert authorizer(write).authorize_any(ALICE, Op.WRITE, TOPIC)
    assert not authorizer(write).authorize_any(BOB, Op.WRITE, TOPIC)
    assert not authorizer(write, acl("*", Op.WRITE, allow=False)).authorize_any(
        ALICE, Op.WRITE, TOPIC
    )
    assert not authorizer(write, acl("log", Op.WRITE, prefixed=True, allow=False)).authorize_any(
        ALICE, Op.WRITE, TOPIC
    )
    assert authorizer(open_=True).authorize_any(ALICE, Op.WRITE, TOPIC)
    assert not authorizer().authorize_any(ALICE, Op.WRITE, TOPIC)


def _reference(acls: list[AclBinding], who: Caller, op: AclOperation, name: str) -> bool:
    """Kafka's rules written out plainly over every ACL (no index)."""
    implied = {
        Op.DESCRIBE: {Op.READ, Op.WRITE, Op.DELETE, Op.ALTER},
        Op.DESCRIBE_CONFIGS: {Op.ALTER_CONFIGS},
    }
    applying = [
        a
        for a in acls
        if a.resource_type == TOPIC
        and (
            (a.pattern_type == PatternType.LITERAL and a.resource_name in (name, "*"))
            or (a.pattern_type == PatternType.PREFIXED and name.startswith(a.resource_name))
        )
    ]
    if not applying:
        return False
    mine = [
        a
        for a in applying
        if a.principal in (str(who.principal), "User:*") and a.host in (who.host, "*")
    ]
    if any(a.permission == AclPermissionType.DENY and a.operation in (op, Op.ALL) for a in mine):
        return False
    return any(
        a.permission == AclPermissionType.ALLOW
        and (a.operation in (op, Op.ALL) or a.operation in implied.get(op, set()))
        for a in mine
    )


_names = st.sampled_from(["", "o", "or", "ord", "orders", "orders-eu", "*", "x"])
_acls = st.builds(
    AclBinding,
    st.sampled_from([TOPIC, ResourceType.GROUP]),
    _names.filter(bool),
    st.sampled_from([PatternType.LITERAL, PatternType.PREFIXED]),
    st.sampled_from(["User:alice", "User:bob", "User:*"]),
    st.sampled_from(["*", "10.0.0.1", "10.0.0.2"]),
    st.sampled_from([op for op in Op if op not in (Op.UNKNOWN, Op.ANY)]),
    st.sampled_from([AclPermissionType.ALLOW, AclPermissionType.DENY]),
)


@settings(max_examples=300, deadline=None)
@given(
    acls=st.lists(_acls, max_size=8),
    who=st.sampled_from([ALICE, BOB]),
    op=st.sampled_from([op for op in Op if op not in (Op.UNKNOWN, Op.ANY, Op.ALL)]),
    name=_names.filter(lambda n: n not in ("", "*")),
)
def test_the_indexed_authorizer_decides_as_the_plain_rules(
    acls: list[AclBinding], who: Caller, op: AclOperation, name: str
) -> None:
    assert authorizer(*acls).authorize(who, op, TOPIC, name) is _reference(acls, who, op, name)
