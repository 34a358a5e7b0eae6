"""kafka-python's KafkaAdminClient against the authorizer: its create_acls / describe_acls /
delete_acls, and its producer and consumer denied, then allowed, as User:alice."""

from __future__ import annotations

import time
import uuid

import pytest
from acl_support import Secured
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import TopicAuthorizationFailedError


def _allow(topic: str, op: ACLOperation) -> ACL:
    return ACL(
        "User:alice",
        "*",
        op,
        ACLPermissionType.ALLOW,
        ResourcePattern(ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL),
    )


def test_kafka_python_manages_acls_and_its_clients_obey_them(secured: Secured) -> None:
    topic = f"kp-{uuid.uuid4().hex[:6]}"
    admin = KafkaAdminClient(bootstrap_servers=secured.admin)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        producer = KafkaProducer(bootstrap_servers=secured.alice, max_block_ms=5000)
        with pytest.raises(TopicAuthorizationFailedError):
            producer.send(topic, b"denied").get(timeout=10)
        producer.close()

        result = admin.create_acls(
            [_allow(topic, ACLOperation.WRITE), _allow(topic, ACLOperation.READ)]
        )
        assert not result["failed"] and len(result["succeeded"]) == 2
        everything = ACLFilter(
            principal=None,
            host=None,
            operation=ACLOperation.ANY,
            permission_type=ACLPermissionType.ANY,
            resource_pattern=ResourcePatternFilter(
                ResourceType.TOPIC, topic, ACLResourcePatternType.ANY
            ),
        )
        acls, error = admin.describe_acls(everything)
        assert error.errno == 0
        assert {a.operation for a in acls} == {ACLOperation.WRITE, ACLOperation.READ}

        producer = KafkaProducer(bootstrap_servers=secured.alice)
        producer.send(topic, b"allowed").get(timeout=10)
        producer.close()
        # no group: assigned partitions need READ on the topic only
        consumer = KafkaConsumer(bootstrap_servers=secured.alice, auto_offset_reset="earliest")
        consumer.assign([TopicPartition(topic, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 30
        while not values and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                values += [r.value for r in records]
        assert values == [b"allowed"]
        consumer.close()

        deleted = admin.delete_acls([everything])
        ((_, removed, _),) = deleted
        assert len(removed) == 2
        assert admin.describe_acls(everything)[0] == []
    finally:
        admin.close()
