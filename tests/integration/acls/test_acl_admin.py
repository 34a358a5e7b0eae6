"""CreateAcls / DescribeAcls / DeleteAcls through confluent-kafka's AdminClient, and what
malformed or unauthorized requests get."""

from __future__ import annotations

import pytest
from acl_support import Secured
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from rawclient import RawClient

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap})


def _binding(name: str, op: AclOperation, pattern: ResourcePatternType) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC, name, pattern, "User:alice", "*", op, AclPermissionType.ALLOW
    )


EVERYTHING = AclBindingFilter(
    ResourceType.ANY,
    None,
    ResourcePatternType.ANY,
    None,
    None,
    AclOperation.ANY,
    AclPermissionType.ANY,
)


def test_acls_are_created_described_and_deleted(secured: Secured) -> None:
    admin = _admin(secured.admin)
    read = _binding("orders", AclOperation.READ, ResourcePatternType.LITERAL)
    write = _binding("logs-", AclOperation.WRITE, ResourcePatternType.PREFIXED)
    for future in admin.create_acls([read, write]).values():
        assert future.result(15) is None
    described = admin.describe_acls(EVERYTHING).result(15)
    assert set(described) == {read, write}
    only_prefixed = AclBindingFilter(
        ResourceType.TOPIC,
        None,
        ResourcePatternType.PREFIXED,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    futures = admin.delete_acls([only_prefixed])
    deleted = futures[only_prefixed].result(15)
    assert deleted == [write]
    assert admin.describe_acls(EVERYTHING).result(15) == [read]


ANY_FILTER = {
    "resource_type_filter": 1,
    "resource_name_filter": None,
    "pattern_type_filter": 1,
    "principal_filter": None,
    "host_filter": None,
    "operation": 1,
    "permission_type": 1,
}


def test_a_caller_without_alter_on_the_cluster_cannot_touch_acls(secured: Secured) -> None:
    admin = _admin(secured.alice)
    read = _binding("orders", AclOperation.READ, ResourcePatternType.LITERAL)
    with pytest.raises(KafkaException) as created:
        admin.create_acls([read])[read].result(15)
    assert created.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    # (librdkafka's DescribeAcls parser drops the response's top-level error: ask directly)
    with RawClient(secured.alice) as raw:
        described = raw.request(ApiKey.DESCRIBE_ACLS, 3, ANY_FILTER)
    assert described.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
    with pytest.raises(KafkaException) as deleted:
        admin.delete_acls([EVERYTHING])[EVERYTHING].result(15)
    assert deleted.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    assert _admin(secured.admin).describe_acls(EVERYTHING).result(15) == []


def test_malformed_creations_get_invalid_request_each_and_the_rest_are_created(
    secured: Secured,
) -> None:
    good = {
        "resource_type": 2,
        "resource_name": "t",
        "resource_pattern_type": 3,
        "principal": "User:alice",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
    }
    bad = [
        {**good, "resource_type": 42},
        {**good, "resource_pattern_type": 2},
        {**good, "operation": 1},
        {**good, "permission_type": 0},
        {**good, "principal": "alice"},
        {**good, "resource_name": ""},
        {**good, "resource_type": 4, "resource_name": "other"},
    ]
    with RawClient(secured.admin) as raw:
        response = raw.request(ApiKey.CREATE_ACLS, 3, {"creations": [*bad, good]})
        codes = [r.error_code for r in response.results]
        assert codes == [Errors.INVALID_REQUEST] * len(bad) + [Errors.NONE]
        assert all(r.error_message for r in response.results[:-1])
        broken_filter = {**ANY_FILTER, "pattern_type_filter": 0}
        described = raw.request(ApiKey.DESCRIBE_ACLS, 3, broken_filter)
        assert described.error_code == Errors.INVALID_REQUEST
        deleted = raw.request(ApiKey.DELETE_ACLS, 3, {"filters": [broken_filter]})
        assert deleted.filter_results[0].error_code == Errors.INVALID_REQUEST
    assert _admin(secured.admin).describe_acls(EVERYTHING).result(15) == [
        AclBinding(
            ResourceType.TOPIC,
            "t",
            ResourcePatternType.LITERAL,
            "User:alice",
            "*",
            AclOperation.READ,
            AclPermissionType.ALLOW,
        )
    ]


def test_without_an_authorizer_acl_requests_get_security_disabled(brook_session: object) -> None:
    with RawClient(brook_session.bootstrap) as raw:  # type: ignore[attr-defined]
        response = raw.request(ApiKey.DESCRIBE_ACLS, 3, ANY_FILTER)
    assert response.error_code == Errors.SECURITY_DISABLED
