"""ACLs on a 3-node ``brook cluster``: an ACL created through one node is in every node's
metadata image, so every node allows what it allows and denies what it does not.

The nodes talk to each other as super users: the test-only
``brook.test.listener.principals`` makes every connection of the controller listener
User:admin (a super user), and every connection of the broker listener User:alice, who
starts with only what the cluster needs of her (CLUSTER_ACTION for the replicas' fetches,
ALTER and CREATE on the cluster), granted through the active controller's listener."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)
from quorum_support import FAST, wait_for
from rawclient import RawClient
from support import local_cluster

from brook.cli.cluster_config import CONTROLLER_LISTENER, HOST
from brook.cli.local_cluster import LocalCluster
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

OVERRIDES = {
    **FAST,
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:admin",
    "brook.test.listener.principals": "CONTROLLER=User:admin,PLAINTEXT=User:alice",
}
CLUSTER_OPS = (9, 7, 5)  # CLUSTER_ACTION, ALTER, CREATE


def _grant_cluster_ops(cluster: LocalCluster) -> None:
    """Through the controller listener of whichever node is the active controller."""
    creations = [
        {
            "resource_type": 4,
            "resource_name": "kafka-cluster",
            "resource_pattern_type": 3,
            "principal": "User:alice",
            "host": "*",
            "operation": op,
            "permission_type": 3,
        }
        for op in CLUSTER_OPS
    ]

    def granted() -> bool:
        for node in cluster.nodes:
            address = f"{HOST}:{node.ports[CONTROLLER_LISTENER]}"
            with RawClient(address) as raw:
                answer = raw.request(ApiKey.CREATE_ACLS, 3, {"creations": creations})
            if all(r.error_code == Errors.NONE for r in answer.results):
                return True
        return False

    wait_for("the cluster ACLs granted by the active controller", granted)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    directory = tmp_path_factory.mktemp("acls") / "c"
    with local_cluster(directory, nodes=3, overrides=OVERRIDES) as c:
        _grant_cluster_ops(c)
        c.wait_metadata_caught_up()
        yield c


def _describe_code(address: str, topic: str) -> int:
    request = {
        "topics": [{"name": topic, "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False,
    }
    with RawClient(address) as raw:
        return int(raw.request(ApiKey.METADATA, 12, request).topics[0].error_code)


def test_an_acl_created_through_one_node_is_enforced_on_every_node(cluster: LocalCluster) -> None:
    topic = f"acl-{uuid.uuid4().hex[:6]}"
    first, *others = cluster.brokers
    admin = AdminClient({"bootstrap.servers": first.broker_address})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    cluster.wait_metadata_caught_up()
    for node in cluster.brokers:
        assert _describe_code(node.broker_address, topic) == Errors.TOPIC_AUTHORIZATION_FAILED

    read = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )
    via = AdminClient({"bootstrap.servers": others[0].broker_address})
    assert via.create_acls([read])[read].result(30) is None
    cluster.wait_metadata_caught_up()
    for node in cluster.brokers:
        assert _describe_code(node.broker_address, topic) == Errors.NONE, node.node_id

    # acks=all through the leader: the followers (User:alice with CLUSTER_ACTION) replicate
    write = AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        "User:alice",
        "*",
        AclOperation.WRITE,
        AclPermissionType.ALLOW,
    )
    assert via.create_acls([write])[write].result(30) is None
    producer = Producer(
        {"bootstrap.servers": cluster.bootstrap_servers, "acks": "all", "message.timeout.ms": 30000}
    )
    delivered: list[object] = []
    for i in range(3):
        producer.produce(topic, b"v", partition=i, on_delivery=lambda e, _m: delivered.append(e))
    assert producer.flush(40) == 0
    assert delivered == [None, None, None]

    deny = AclBinding(
        ResourceType.TOPIC,
        topic[:4],
        ResourcePatternType.PREFIXED,
        "User:alice",
        "*",
        AclOperation.DESCRIBE,
        AclPermissionType.DENY,
    )
    assert via.create_acls([deny])[deny].result(30) is None
    cluster.wait_metadata_caught_up()
    for node in cluster.brokers:
        assert _describe_code(node.broker_address, topic) == Errors.TOPIC_AUTHORIZATION_FAILED


def test_the_controller_listener_serves_only_principals_with_cluster_action(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Brook forwards to the controller as the node itself, so the controller listener asks
    CLUSTER_ACTION of whoever connects (ApiVersions excepted): anyone else gets
    CLUSTER_AUTHORIZATION_FAILED, as from Kafka's ControllerApis, with the refusal logged,
    and the connection and the node go on serving."""
    overrides = {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "brook.test.listener.principals": "CONTROLLER=User:mallory",
    }
    directory = tmp_path_factory.mktemp("acl-controller") / "c"
    with local_cluster(directory, nodes=1, overrides=overrides) as single:
        node = single.nodes[0]
        address = f"{HOST}:{node.ports[CONTROLLER_LISTENER]}"
        with RawClient(address) as raw:
            versions = raw.request(
                ApiKey.API_VERSIONS,
                3,
                {"client_software_name": "t", "client_software_version": "1"},
            )
            assert versions.error_code == Errors.NONE
            topic = {
                "name": "t",
                "num_partitions": 1,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
            created = raw.request(
                ApiKey.CREATE_TOPICS,
                7,
                {"topics": [topic], "timeout": 1000, "validate_only": False},
            )
            assert [(t.name, t.error_code) for t in created.topics] == [
                ("t", Errors.CLUSTER_AUTHORIZATION_FAILED)
            ]
            quorum = raw.request(
                ApiKey.DESCRIBE_QUORUM,
                2,
                {
                    "topics": [
                        {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
                    ]
                },
            )
            assert quorum.error_code == Errors.CLUSTER_AUTHORIZATION_FAILED
        log = node.log_path.read_text()
        assert "User:mallory may not CLUSTER_ACTION on the cluster" in log
        # the broker listener (User:ANONYMOUS, no ACL) still answers, with its own refusal
        assert _describe_code(node.broker_address, "t") == Errors.TOPIC_AUTHORIZATION_FAILED
