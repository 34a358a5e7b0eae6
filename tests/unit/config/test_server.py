"""The server table: Kafka's names and defaults, listeners, derived topic defaults."""

from __future__ import annotations

import re

import pytest

from brook.config.defs import ConfigError
from brook.config.server import (
    is_sole_voter,
    listener_value,
    log_dirs,
    node_id,
    parse_listener,
    parse_server_config,
    security_protocols,
    topic_defaults,
)
from brook.config.server import voters as voters_of


def test_defaults_match_kafka() -> None:
    cfg = parse_server_config({})
    assert cfg["num.partitions"] == 1
    assert cfg["log.segment.bytes"] == 1073741824
    assert cfg["message.max.bytes"] == 1048588
    assert cfg["socket.request.max.bytes"] == 104857600
    assert cfg["max.incremental.fetch.session.cache.slots"] == 1000
    assert cfg["auto.create.topics.enable"] is True
    assert topic_defaults(cfg)["retention.ms"] == 168 * 3600 * 1000


def test_retention_fallbacks_follow_kafka_precedence() -> None:
    assert (
        topic_defaults(parse_server_config({"log.retention.hours": "1"}))["retention.ms"] == 3600000
    )
    cfg = parse_server_config({"log.retention.hours": "1", "log.retention.minutes": "2"})
    assert topic_defaults(cfg)["retention.ms"] == 120000
    cfg = parse_server_config({"log.retention.minutes": "2", "log.retention.ms": "5"})
    assert topic_defaults(cfg)["retention.ms"] == 5
    assert topic_defaults(parse_server_config({"log.roll.hours": "2"}))["segment.ms"] == 7200000


def test_kafka_sample_server_properties_are_accepted() -> None:
    props = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.bootstrap.servers": "localhost:9093",
        "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
        "inter.broker.listener.name": "PLAINTEXT",
        "advertised.listeners": "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        "num.network.threads": "3",
        "num.io.threads": "8",
        "socket.send.buffer.bytes": "102400",
        "socket.receive.buffer.bytes": "102400",
        "socket.request.max.bytes": "104857600",
        "log.dirs": "/tmp/kraft-combined-logs",
        "num.partitions": "1",
        "num.recovery.threads.per.data.dir": "1",
        "offsets.topic.replication.factor": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "log.retention.hours": "168",
        "log.segment.bytes": "1073741824",
        "log.retention.check.interval.ms": "300000",
    }
    cfg = parse_server_config(props)
    assert node_id(cfg) == 1
    assert log_dirs(cfg) == ["/tmp/kraft-combined-logs"]


def test_bad_listener_and_unknown_key() -> None:
    with pytest.raises(ConfigError, match=r"NAME://host:port"):
        parse_server_config({"listeners": "localhost:9092"})
    with pytest.raises(ConfigError, match=r"'log\.dirz'"):
        parse_server_config({"log.dirz": "/x"})
    assert parse_listener("PLAINTEXT://[::1]:9092") == ("PLAINTEXT", "::1", 9092)


@pytest.mark.parametrize(
    ("props", "named"),
    [
        ({"listeners": "SSL://127.0.0.1:9093"}, "ssl.keystore.location"),
        (
            {
                "listeners": "SECURE://:9093",
                "listener.security.protocol.map": "SECURE:SASL_PLAINTEXT",
            },
            "GSSAPI",
        ),
        (
            {"listeners": "SECURE://:9093", "listener.security.protocol.map": "SECURE:KERBEROS"},
            "KERBEROS",
        ),
        ({"listeners": "INTERNAL://:9093"}, "listener.security.protocol.map"),
    ],
)
def test_settings_brook_cannot_serve_yet_are_refused_not_ignored(
    props: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        parse_server_config(props)


@pytest.mark.parametrize(
    ("props", "named"),
    [
        # a broker-only node must know its controllers
        ({"process.roles": "broker"}, "controller.quorum.voters must name"),
        # a controller must be one of the voters
        ({"node.id": "3", "controller.quorum.voters": "1@h:9093,2@h:9094"}, "must be one of"),
        # a voter of a quorum of several needs its controller listener
        (
            {"node.id": "2", "controller.quorum.voters": "1@h:9093,2@h:9094"},
            "controller.listener.names must contain",
        ),
        (
            {
                "process.roles": "broker",
                "controller.quorum.voters": "1@h:9093",
                "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            },
            "must not contain",
        ),
        (
            {
                "process.roles": "controller",
                "controller.quorum.voters": "1@h:9093",
                "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093",
            },
            "must only contain controller listeners",
        ),
        ({"controller.quorum.voters": "one@h:9093"}, "id@host:port"),
    ],
)
def test_roles_voters_and_listeners_are_checked_as_kafka_does(
    props: dict[str, str], named: str
) -> None:
    with pytest.raises(ConfigError, match=named):
        parse_server_config(props)


def test_cluster_node_configurations() -> None:
    voters = "1@127.0.0.1:9093,2@127.0.0.1:9095,3@127.0.0.1:9097"
    combined = parse_server_config(
        {
            "node.id": "2",
            "controller.quorum.voters": voters,
            "listeners": "PLAINTEXT://127.0.0.1:9094,CONTROLLER://127.0.0.1:9095",
        }
    )
    assert not is_sole_voter(combined) and len(voters_of(combined)) == 3
    broker = parse_server_config(
        {
            "node.id": "4",
            "process.roles": "broker",
            "controller.quorum.voters": voters,
            "listeners": "PLAINTEXT://127.0.0.1:9098",
        }
    )
    assert not is_sole_voter(broker)
    controller = parse_server_config(
        {
            "node.id": "1",
            "process.roles": "controller",
            "controller.quorum.voters": voters,
            "listeners": "CONTROLLER://127.0.0.1:9093",
        }
    )
    assert voters_of(controller)[1] == ("127.0.0.1", 9093)
    # make run's node: a lone combined node is its own quorum
    assert is_sole_voter(parse_server_config({}))


def test_plaintext_listeners_under_any_name_and_a_quorum_of_itself() -> None:
    cfg = parse_server_config(
        {
            "node.id": "4",
            "listeners": "INTERNAL://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
            "listener.security.protocol.map": "INTERNAL:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "controller.quorum.voters": "4@127.0.0.1:9093",
        }
    )
    assert node_id(cfg) == 4


def test_queued_max_request_bytes_is_bounded_by_default_and_checked_as_kafka_does() -> None:
    assert parse_server_config({})["queued.max.request.bytes"] == 256 * 1024 * 1024
    assert parse_server_config({"queued.max.request.bytes": "-1"})["queued.max.request.bytes"] == -1
    ok = {"queued.max.request.bytes": "1048576", "socket.request.max.bytes": "1048576"}
    assert parse_server_config(ok)["queued.max.request.bytes"] == 1048576
    with pytest.raises(ConfigError, match=r"queued\.max\.request\.bytes.*socket\.request\.max"):
        parse_server_config({"queued.max.request.bytes": "1000"})
    with pytest.raises(ConfigError, match=r"queued\.max\.request\.bytes"):
        parse_server_config({"socket.request.max.bytes": str(512 * 1024 * 1024)})


def test_each_cleaner_thread_gets_at_least_a_megabyte_of_dedupe_buffer() -> None:
    """Kafka's rule (KafkaConfig): log.cleaner.dedupe.buffer.size / log.cleaner.threads
    above 1 MiB, unless the cleaner is off."""
    cfg = parse_server_config({"log.cleaner.threads": "2"})
    assert cfg["log.cleaner.dedupe.buffer.size"] == 134217728
    small = {"log.cleaner.threads": "2", "log.cleaner.dedupe.buffer.size": str(2 * 1024 * 1024)}
    with pytest.raises(ConfigError, match=r"log\.cleaner\.dedupe\.buffer\.size.*2 threads"):
        parse_server_config(small)
    assert parse_server_config({**small, "log.cleaner.threads": "1"})
    assert parse_server_config({**small, "log.cleaner.enable": "false"})


def _ssl(**extra: str) -> dict[str, str]:
    return {
        "listeners": "SSL://127.0.0.1:9093",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "/etc/kafka/server.pem",
        **{k.replace("_", "."): v for k, v in extra.items()},
    }


def test_ssl_listener_with_a_pem_key_store_is_accepted() -> None:
    cfg = parse_server_config(_ssl())
    assert security_protocols(cfg)["SSL"] == "SSL"
    assert cfg["ssl.enabled.protocols"] == ["TLSv1.2", "TLSv1.3"]
    assert cfg["ssl.client.auth"] == "none"


@pytest.mark.parametrize(
    ("props", "named"),
    [
        ({**_ssl(), "ssl.keystore.type": "JKS"}, "ssl.keystore.type"),
        ({**_ssl(), "ssl.keystore.password": "x"}, "ssl.keystore.password"),
        (_ssl(ssl_client_auth="required"), "trust store"),
        (_ssl(ssl_client_auth="sometimes"), "ssl.client.auth"),
        (_ssl(ssl_enabled_protocols="TLSv1.1"), "ssl.enabled.protocols"),
        ({**_ssl(), "ssl.keystore.key": "-----BEGIN"}, "go together"),
        ({**_ssl(), "listener.name.ssl.ssl.bogus": "1"}, "listener.name.ssl.ssl.bogus"),
        ({**_ssl(), "listener.name.ssl.ssl.client.auth": "maybe"}, "ssl.client.auth"),
    ],
)
def test_bad_tls_settings_are_refused_by_name(props: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(named)):
        parse_server_config(props)


def test_listener_prefixed_settings_override_the_unprefixed_ones() -> None:
    props = {
        "listeners": "INTERNAL://127.0.0.1:9093,EXTERNAL://127.0.0.1:9094",
        "listener.security.protocol.map": "INTERNAL:SSL,EXTERNAL:SSL,CONTROLLER:PLAINTEXT",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": "/etc/kafka/shared.pem",
        "listener.name.INTERNAL.ssl.keystore.location": "/etc/kafka/internal.pem",
        "listener.name.internal.ssl.client.auth": "requested",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": "/etc/kafka/ca.pem",
    }
    cfg = parse_server_config(props)
    assert listener_value(cfg, "INTERNAL", "ssl.keystore.location") == "/etc/kafka/internal.pem"
    assert listener_value(cfg, "EXTERNAL", "ssl.keystore.location") == "/etc/kafka/shared.pem"
    assert listener_value(cfg, "INTERNAL", "ssl.client.auth") == "requested"
    assert listener_value(cfg, "EXTERNAL", "ssl.client.auth") == "none"


def test_a_cluster_node_needs_its_login_for_secured_links() -> None:
    """A node logs in to the others' SASL controller and inter-broker listeners with the
    username and password of that listener's JAAS configuration for the link's mechanism."""
    with_login = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="n" password="p" user_n="p";'
    )
    users_only = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_n="p";'
    cluster = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": "1@127.0.0.1:9093,2@127.0.0.1:9095",
        "listeners": "PLAINTEXT://:9092,CONTROLLER://:9093,INTERNAL://:9094",
        "listener.security.protocol.map": (
            "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT"
        ),
        "inter.broker.listener.name": "INTERNAL",
        "sasl.enabled.mechanisms": "PLAIN",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "sasl.mechanism.controller.protocol": "PLAIN",
        "listener.name.controller.plain.sasl.jaas.config": with_login,
        "listener.name.internal.plain.sasl.jaas.config": with_login,
    }
    parse_server_config(cluster)
    with pytest.raises(ConfigError, match=r"listener INTERNAL .*sasl\.mechanism\.inter\.broker"):
        parse_server_config(
            {**cluster, "listener.name.internal.plain.sasl.jaas.config": users_only}
        )
    with pytest.raises(ConfigError, match=r"sasl\.mechanism\.controller\.protocol=GSSAPI"):
        parse_server_config({**cluster, "sasl.mechanism.controller.protocol": "GSSAPI"})
    # a lone node may name a SASL listener for inter-broker traffic (Kafka's example)
    parse_server_config(
        {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:9092",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": users_only,
            "security.inter.broker.protocol": "SASL_PLAINTEXT",
        }
    )
