"""Authorized operations in Metadata, DescribeGroups and DescribeCluster are what the
authorizer allows the caller (Kafka's bitfield: bit n = operation code n), and
-2147483648 when not asked."""

from __future__ import annotations

from acl_support import Secured, wait_for_coordinator
from rawclient import RawClient, create_topic

from brook.protocol.api import ApiKey

NOT_ASKED = -(2**31)
READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE = 3, 4, 5, 6, 7, 8
CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE = 9, 10, 11, 12


def bits(*ops: int) -> int:
    return sum(1 << op for op in ops)


def _allow(admin: RawClient, rtype: int, name: str, *ops: int) -> None:
    creations = [
        {
            "resource_type": rtype,
            "resource_name": name,
            "resource_pattern_type": 3,
            "principal": "User:alice",
            "host": "*",
            "operation": op,
            "permission_type": 3,
        }
        for op in ops
    ]
    answer = admin.request(ApiKey.CREATE_ACLS, 3, {"creations": creations})
    assert all(r.error_code == 0 for r in answer.results)


def _topic_ops(raw: RawClient, topic: str, asked: bool = True) -> int:
    request = {
        "topics": [{"name": topic, "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": asked,
    }
    return int(raw.request(ApiKey.METADATA, 12, request).topics[0].topic_authorized_operations)


def _cluster_ops(raw: RawClient, asked: bool = True) -> int:
    request = {"include_cluster_authorized_operations": asked, "endpoint_type": 1}
    return int(raw.request(ApiKey.DESCRIBE_CLUSTER, 1, request).cluster_authorized_operations)


def test_topic_operations_follow_the_acls(secured: Secured) -> None:
    with RawClient(secured.admin) as admin, RawClient(secured.alice) as alice:
        create_topic(admin, "ops")
        _allow(admin, 2, "ops", READ, ALTER_CONFIGS)
        assert _topic_ops(alice, "ops") == bits(READ, DESCRIBE, ALTER_CONFIGS, DESCRIBE_CONFIGS)
        assert _topic_ops(alice, "ops", asked=False) == NOT_ASKED
        every = bits(READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS)
        assert _topic_ops(admin, "ops") == every


def test_cluster_operations_need_describe_on_the_cluster(secured: Secured) -> None:
    with RawClient(secured.admin) as admin, RawClient(secured.alice) as alice:
        _allow(admin, 4, "kafka-cluster", IDEMPOTENT_WRITE)
        assert _cluster_ops(alice) == 0  # no DESCRIBE on the cluster: nothing is told
        _allow(admin, 4, "kafka-cluster", ALTER)
        assert _cluster_ops(alice) == bits(ALTER, DESCRIBE, IDEMPOTENT_WRITE)
        assert _cluster_ops(alice, asked=False) == NOT_ASKED


def test_group_operations_in_describe_groups(secured: Secured) -> None:
    with RawClient(secured.admin) as admin, RawClient(secured.alice) as alice:
        wait_for_coordinator(admin, "g")
        _allow(admin, 3, "g", DESCRIBE)
        request = {"groups": ["g"], "include_authorized_operations": True}
        group = alice.request(ApiKey.DESCRIBE_GROUPS, 5, request).groups[0]
        assert (group.error_code, group.authorized_operations) == (0, bits(DESCRIBE))
        _allow(admin, 3, "g", DELETE, READ)
        group = alice.request(ApiKey.DESCRIBE_GROUPS, 5, request).groups[0]
        assert group.authorized_operations == bits(READ, DESCRIBE, DELETE)
        request["include_authorized_operations"] = False
        group = alice.request(ApiKey.DESCRIBE_GROUPS, 5, request).groups[0]
        assert group.authorized_operations == NOT_ASKED


def test_a_missing_topic_alice_may_describe_reports_her_operations(secured: Secured) -> None:
    """Kafka reports authorized operations for every topic the caller may describe, found or
    not; a topic she may not describe reports none."""
    with RawClient(secured.admin) as admin, RawClient(secured.alice) as alice:
        _allow(admin, 2, "ghost", DESCRIBE)
        request = {
            "topics": [{"name": "ghost", "topic_id": None}, {"name": "other", "topic_id": None}],
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": True,
        }
        ghost, other = alice.request(ApiKey.METADATA, 12, request).topics
        assert (ghost.error_code, ghost.topic_authorized_operations) == (3, bits(DESCRIBE))
        assert (other.error_code, other.topic_authorized_operations) == (29, NOT_ASKED)
