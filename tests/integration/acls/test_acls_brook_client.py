"""Brook's own client against the authorizer: its Admin manages ACLs, its producer and
consumer are refused with Kafka's codes until the ACLs allow them."""

from __future__ import annotations

import time
import uuid

from acl_support import Secured

from brook import Producer
from brook.client.admin import Admin, NewTopic
from brook.client.consumer.consumer import Consumer
from brook.protocol.errors import Errors, KafkaError
from brook.security.acl import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
)


def _allow(topic: str, op: AclOperation) -> AclBinding:
    return AclBinding(
        ResourceType.TOPIC,
        topic,
        PatternType.LITERAL,
        "User:alice",
        "*",
        op,
        AclPermissionType.ALLOW,
    )


def _send(bootstrap: str, topic: str) -> int:
    config = {
        "bootstrap.servers": bootstrap,
        "delivery.timeout.ms": 10000,
        "request.timeout.ms": 5000,
        "max.block.ms": 10000,
    }
    with Producer(config) as producer:
        try:  # the idempotent producer also needs WRITE on some topic (or IDEMPOTENT_WRITE)
            future = producer.send(topic, b"v")
            producer.flush(15)
            future.result(15)
        except KafkaError as exc:
            return exc.code
    return Errors.NONE


def test_brook_admin_producer_and_consumer_under_acls(secured: Secured) -> None:
    topic = f"bc-{uuid.uuid4().hex[:6]}"
    with Admin({"bootstrap.servers": secured.admin}) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
        assert _send(secured.alice, topic) == Errors.TOPIC_AUTHORIZATION_FAILED

        admin.create_acls([_allow(topic, AclOperation.WRITE), _allow(topic, AclOperation.READ)])
        mine = AclBindingFilter(
            ResourceType.TOPIC,
            topic,
            PatternType.ANY,
            None,
            None,
            AclOperation.ANY,
            AclPermissionType.ANY,
        )
        assert {a.operation for a in admin.describe_acls(mine)} == {
            AclOperation.WRITE,
            AclOperation.READ,
        }
        assert _send(secured.alice, topic) == Errors.NONE

        consumer_config = {"bootstrap.servers": secured.alice, "auto.offset.reset": "earliest"}
        with Consumer(consumer_config) as consumer:
            consumer.assign([(topic, 0)])
            values: list[bytes | None] = []
            deadline = time.monotonic() + 30
            while not values and time.monotonic() < deadline:
                values += [r.value for r in consumer.poll(500)]
        assert values == [b"v"]

        removed = admin.delete_acls([mine])
        assert len(removed[mine]) == 2
        assert admin.describe_acls(mine) == []
    with Admin({"bootstrap.servers": secured.alice}) as alice:
        try:
            alice.create_acls([_allow(topic, AclOperation.ALL)])
        except KafkaError as exc:
            assert exc.code == Errors.CLUSTER_AUTHORIZATION_FAILED
        else:
            raise AssertionError("User:alice created an ACL without ALTER on the cluster")
