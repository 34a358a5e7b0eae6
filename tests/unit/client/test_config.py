"""Client config tables: defaults, unknown keys, wrong types, enums and cross-key rules."""

from __future__ import annotations

from typing import Any

import pytest

from brook.client.config import (
    ADMIN_CONFIG,
    CONSUMER_CONFIG,
    PRODUCER_CONFIG,
    acks_value,
    parse_admin_config,
    parse_bootstrap,
    parse_consumer_config,
    parse_producer_config,
    resolve_deserializer,
    resolve_serializer,
)
from brook.config.defs import ConfigError

BOOT = {"bootstrap.servers": "127.0.0.1:9092"}


def test_producer_defaults() -> None:
    cfg = parse_producer_config(BOOT)
    expected = {
        "bootstrap.servers": ["127.0.0.1:9092"],
        "acks": "all",
        "enable.idempotence": True,
        "retries": 2**31 - 1,
        "retry.backoff.ms": 100,
        "retry.backoff.max.ms": 1000,
        "delivery.timeout.ms": 120000,
        "request.timeout.ms": 30000,
        "linger.ms": 5,
        "batch.size": 16384,
        "buffer.memory": 33554432,
        "max.block.ms": 60000,
        "max.request.size": 1048576,
        "max.in.flight.requests.per.connection": 5,
        "compression.type": "none",
        "compression.gzip.level": -1,
        "compression.lz4.level": 9,
        "compression.zstd.level": 3,
        "metadata.max.age.ms": 300000,
        "client.id": "",
        "socket.connection.setup.timeout.ms": 10000,
        "socket.connection.setup.timeout.max.ms": 30000,
        "reconnect.backoff.ms": 50,
        "reconnect.backoff.max.ms": 1000,
        "connections.max.idle.ms": 540000,
        "key.serializer": None,
        "value.serializer": None,
        "partitioner.class": None,
        "partitioner.adaptive.partitioning.enable": True,
        "partitioner.availability.timeout.ms": 0,
        "partitioner.ignore.keys": False,
        "brook.leader.discovery.enable": True,
    }
    assert {k: cfg[k] for k in expected} == expected


def test_consumer_defaults() -> None:
    cfg = parse_consumer_config(BOOT)
    expected = {
        "group.id": None,
        "group.instance.id": None,
        "fetch.min.bytes": 1,
        "fetch.max.wait.ms": 500,
        "fetch.max.bytes": 52428800,
        "max.partition.fetch.bytes": 1048576,
        "auto.offset.reset": "latest",
        "enable.auto.commit": True,
        "auto.commit.interval.ms": 5000,
        "isolation.level": "read_uncommitted",
        "check.crcs": True,
        "max.poll.records": 500,
        "max.poll.interval.ms": 300000,
        "session.timeout.ms": 45000,
        "heartbeat.interval.ms": 3000,
        "client.rack": "",
        "key.deserializer": None,
        "value.deserializer": None,
        "brook.fetch.sessions.enable": True,
        "default.api.timeout.ms": 60000,
    }
    assert {k: cfg[k] for k in expected} == expected
    assert cfg["partition.assignment.strategy"][0].endswith("RangeAssignor")


def test_admin_defaults() -> None:
    cfg = parse_admin_config(BOOT)
    assert cfg["default.api.timeout.ms"] == 60000
    assert cfg["connections.max.idle.ms"] == 300000
    assert cfg["request.timeout.ms"] == 30000


def test_common_keys_declared_once() -> None:
    for name in ("retry.backoff.ms", "request.timeout.ms", "bootstrap.servers", "client.id"):
        assert PRODUCER_CONFIG.key(name) is CONSUMER_CONFIG.key(name) is ADMIN_CONFIG.key(name)
    for table in (PRODUCER_CONFIG, CONSUMER_CONFIG, ADMIN_CONFIG):
        assert all(key.doc for key in table), table.component


@pytest.mark.parametrize(
    ("parse", "component"),
    [
        (parse_producer_config, "producer"),
        (parse_consumer_config, "consumer"),
        (parse_admin_config, "admin"),
    ],
)
def test_unknown_key_named(parse: Any, component: str) -> None:
    with pytest.raises(ConfigError, match=rf"Unknown {component} configuration 'lingr\.ms'"):
        parse({**BOOT, "lingr.ms": 5})


def test_consumer_keys_rejected_by_producer() -> None:
    with pytest.raises(ConfigError, match=r"'group.id'"):
        parse_producer_config({**BOOT, "group.id": "g"})


@pytest.mark.parametrize(
    ("key", "value", "form"),
    [
        ("batch.size", "big", "int"),
        ("linger.ms", 1.5, "long"),
        ("enable.idempotence", "yes", "boolean"),
        ("batch.size", True, "int"),
        ("linger.ms", None, "long"),
        ("batch.size", -1, ">= 0"),
        ("compression.lz4.level", 18, r"\[1, 17\]"),
        ("compression.gzip.level", 0, "-1 or >= 1"),
    ],
)
def test_wrong_value_names_key_and_form(key: str, value: Any, form: str) -> None:
    with pytest.raises(ConfigError, match=rf"{key}.*{form}|{form}.*{key}"):
        parse_producer_config({**BOOT, key: value})


def test_values_from_properties_strings() -> None:
    cfg = parse_producer_config({**BOOT, "linger.ms": "20", "enable.idempotence": "false"})
    assert cfg["linger.ms"] == 20 and cfg["enable.idempotence"] is False
    assert cfg.explicit == {"bootstrap.servers", "linger.ms", "enable.idempotence"}


@pytest.mark.parametrize(
    ("given", "stored", "wire"),
    [
        ("all", "all", -1),
        ("ALL", "all", -1),
        ("-1", "all", -1),
        (-1, "all", -1),
        (0, "0", 0),
        ("1", "1", 1),
    ],
)
def test_acks_forms(given: Any, stored: str, wire: int) -> None:
    cfg = parse_producer_config({**BOOT, "acks": given, "enable.idempotence": wire == -1})
    assert cfg["acks"] == stored
    assert acks_value(cfg["acks"]) == wire


def test_acks_rejects_other_values() -> None:
    with pytest.raises(ConfigError, match=r"acks.*all, -1, 0, 1"):
        parse_producer_config({**BOOT, "acks": "2"})


@pytest.mark.parametrize(
    ("key", "good", "bad"),
    [
        ("compression.type", "zstd", "brotli"),
        ("auto.offset.reset", "EARLIEST", "beginning"),
        ("isolation.level", "read_committed", "serializable"),
    ],
)
def test_enums(key: str, good: str, bad: str) -> None:
    parse = parse_producer_config if key == "compression.type" else parse_consumer_config
    assert parse({**BOOT, key: good})[key] == good.lower()
    with pytest.raises(ConfigError, match=rf"Invalid value {bad} for configuration {key}"):
        parse({**BOOT, key: bad})


def test_bootstrap_servers_required_and_checked() -> None:
    with pytest.raises(
        ConfigError,
        match=r"Missing required producer configuration "
        "'bootstrap.servers'",
    ):
        parse_producer_config({})
    with pytest.raises(ConfigError, match=r"bootstrap.servers.*'localhost'.*host:port"):
        parse_admin_config({"bootstrap.servers": "localhost"})
    with pytest.raises(ConfigError, match=r"bootstrap.servers"):
        parse_admin_config({"bootstrap.servers": ""})
    assert parse_bootstrap(["a:1", " [::1]:9092", "PLAINTEXT://b:2"]) == [
        ("a", 1),
        ("::1", 9092),
        ("b", 2),
    ]


def test_idempotence_turned_off_implicitly_like_java() -> None:
    assert parse_producer_config({**BOOT, "acks": "1"})["enable.idempotence"] is False
    assert parse_producer_config({**BOOT, "retries": 0})["enable.idempotence"] is False
    cfg = parse_producer_config({**BOOT, "max.in.flight.requests.per.connection": 6})
    assert cfg["enable.idempotence"] is False


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"acks": "1"}, "acks to all"),
        ({"retries": 0}, "retries"),
        ({"max.in.flight.requests.per.connection": 6}, "max.in.flight"),
    ],
)
def test_idempotence_explicit_conflicts(extra: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_producer_config({**BOOT, "enable.idempotence": True, **extra})


def test_delivery_timeout_floor() -> None:
    cfg = parse_producer_config({**BOOT, "linger.ms": 100000, "request.timeout.ms": 30000})
    assert cfg["delivery.timeout.ms"] == 130000
    with pytest.raises(ConfigError, match=r"delivery.timeout.ms.*linger.ms"):
        parse_producer_config({**BOOT, "delivery.timeout.ms": 1000})


def test_serializers() -> None:
    def ser(value: Any) -> bytes:
        return b"x"

    cfg = parse_producer_config({**BOOT, "key.serializer": ser, "value.serializer": None})
    assert cfg["key.serializer"] is ser and cfg["value.serializer"] is None
    java = "org.apache.kafka.common.serialization.StringSerializer"
    parse_producer_config({**BOOT, "value.serializer": java})
    assert resolve_serializer("value.serializer", java)("hé") == "hé".encode()
    assert resolve_serializer("key.serializer", "json:dumps") is not None
    with pytest.raises(ConfigError, match=r"value.serializer.*callable"):
        parse_producer_config({**BOOT, "value.serializer": 42})
    with pytest.raises(ConfigError, match=r"key.serializer.*cannot load"):
        parse_producer_config({**BOOT, "key.serializer": "no_such_module_x:f"})
    deser = "org.apache.kafka.common.serialization.StringDeserializer"
    assert resolve_deserializer("value.deserializer", deser)(b"ok") == "ok"
    parse_consumer_config({**BOOT, "value.deserializer": deser, "key.deserializer": bytes})


def test_partitioner_class_forms() -> None:
    class Custom:
        def partition(self, *args: Any) -> int:
            return 0

    for value in (None, "pkg.mod:Custom", Custom, Custom()):
        parse_producer_config({**BOOT, "partitioner.class": value})
    with pytest.raises(ConfigError, match=r"partitioner.class"):
        parse_producer_config({**BOOT, "partitioner.class": 3})


def test_security_protocols_and_their_settings() -> None:
    from brook.client.security import ClientSecurity

    assert ClientSecurity.from_config(parse_admin_config({**BOOT})) is None
    for protocol in ("plaintext", "SSL", "sasl_plaintext", "SASL_SSL"):
        parse_admin_config({**BOOT, "security.protocol": protocol})
    with pytest.raises(ConfigError, match=r"security.protocol"):
        parse_admin_config({**BOOT, "security.protocol": "KERBEROS"})
    sasl = parse_admin_config(
        {
            **BOOT,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            'required username="bob" password="pw";',
        }
    )
    security = ClientSecurity.from_config(sasl)
    assert security is not None and security.tls is None
    assert (security.mechanism, security.username, security.password) == (
        "SCRAM-SHA-512",
        "bob",
        "pw",
    )
    with pytest.raises(ConfigError, match=r"sasl.username"):
        ClientSecurity.from_config(
            parse_admin_config({**BOOT, "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN"})
        )
    with pytest.raises(ConfigError, match=r"GSSAPI"):
        ClientSecurity.from_config(
            parse_admin_config(
                {**BOOT, "security.protocol": "SASL_PLAINTEXT", "sasl.username": "a"}
            )
        )


def test_group_instance_id_needs_group_id() -> None:
    with pytest.raises(ConfigError, match=r"group.instance.id requires group.id"):
        parse_consumer_config({**BOOT, "group.instance.id": "i-1"})


def test_config_must_be_a_dict() -> None:
    with pytest.raises(ConfigError, match="must be a dict"):
        parse_admin_config(["bootstrap.servers"])  # type: ignore[arg-type]
