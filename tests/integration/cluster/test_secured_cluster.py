"""A real 3-node ``brook cluster`` whose inter-broker (INTERNAL) and controller listeners use
SASL_SSL with PLAIN (``--internal-listener`` and Kafka's settings as overrides): the quorum
forms, brokers register, RF-3 partitions replicate with acks=all across the secured links,
and a node restarted logs in again; no node-to-node connection is refused on the way."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from quorum_support import FAST, wait_for
from security_certs import make_tls_files
from support import local_cluster

from brook.cli.local_cluster import LocalCluster

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="broker-secret" user_broker="broker-secret";'
)


def secured_overrides(directory: Path) -> dict[str, str]:
    tls = make_tls_files(directory)
    return {
        **FAST,
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,CONTROLLER:SASL_SSL"
        ),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.server_pem),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca_pem),
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": JAAS,
        "listener.name.controller.plain.sasl.jaas.config": JAAS,
    }


# With Kafka's authorizer on: the nodes log in as User:broker, a super user, so the
# controller listener must serve the SASL exchange to a connection not yet authenticated
# (User:ANONYMOUS, which may do nothing); the test's PLAINTEXT clients are User:broker too
# (the test-only listener principal).
AUTHORIZED = {
    "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
    "super.users": "User:broker",
    "brook.test.listener.principals": "PLAINTEXT=User:broker",
}


@pytest.fixture(scope="module", params=["no authorizer", "authorizer"])
def cluster(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[LocalCluster]:
    base = tmp_path_factory.mktemp("secured")
    overrides = secured_overrides(base / "tls")
    if request.param == "authorizer":
        overrides.update(AUTHORIZED)
    with local_cluster(base / "c", nodes=3, overrides=overrides, internal_listener=True) as c:
        yield c


def test_quorum_and_replication_over_sasl_ssl(cluster: LocalCluster) -> None:
    props = (cluster.directory / "node-1" / "server.properties").read_text()
    assert "inter.broker.listener.name=INTERNAL" in props
    assert "INTERNAL://" in props
    quorum = cluster.wait_metadata_caught_up()
    assert {v.replica_id for v in quorum.voters} == {1, 2, 3}

    topic = f"secured-{uuid.uuid4().hex[:6]}"
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    values = [f"v{i}".encode() for i in range(60)]
    for v in values:
        producer.produce(topic, v)
    assert producer.flush(60) == 0

    def in_sync() -> bool:
        meta = admin.list_topics(topic, timeout=10)
        return all(len(p.isrs) == 3 for p in meta.topics[topic].partitions.values())

    wait_for("every replica in the ISR", in_sync)

    # a follower restarted logs in again and catches up over INTERNAL
    cluster.restart(3)
    cluster.wait_metadata_caught_up()
    for v in values:
        producer.produce(topic, v)
    assert producer.flush(60) == 0
    wait_for("every replica back in the ISR", in_sync)

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    got = 0
    deadline = time.monotonic() + 60
    while got < 2 * len(values) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got += 1
    consumer.close()
    assert got == 2 * len(values)
    for node in cluster.nodes:
        log = node.log_path.read_text()
        assert "broker-secret" not in log
        assert "cannot log in" not in log
        # every node-to-node connection authenticated before its first request
        assert "before SASL authentication" not in log
        assert "TLS handshake" not in log
        assert "refused" not in log


def test_transaction_markers_travel_the_secured_inter_broker_links(cluster: LocalCluster) -> None:
    """The transaction coordinator sends WriteTxnMarkers to the other partition leaders over the
    inter-broker listener: it logs in there as the replica fetchers do, so a committed
    transaction spanning every broker becomes visible under read_committed."""
    cluster.wait_metadata_caught_up()
    topic = f"secured-txn-{uuid.uuid4().hex[:6]}"
    bootstrap = cluster.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)

    def led_by_every_broker() -> bool:
        meta = admin.list_topics(topic, timeout=10)
        parts = meta.topics[topic].partitions.values()
        return len(parts) == 3 and {p.leader for p in parts} == {1, 2, 3}

    wait_for("a leader on every broker", led_by_every_broker)
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"secured-{uuid.uuid4().hex}"}
    )
    producer.init_transactions(60)
    producer.begin_transaction()
    for p in range(3):
        producer.produce(topic, f"committed-{p}".encode(), partition=p)
    producer.commit_transaction(60)

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": topic,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < 3 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert sorted(got) == [f"committed-{p}".encode() for p in range(3)]
    for node in cluster.nodes:
        assert "before SASL authentication" not in node.log_path.read_text()
