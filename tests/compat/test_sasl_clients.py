"""confluent-kafka, kafka-python, aiokafka and kcat logging in with SASL/PLAIN and
SCRAM-SHA-256/512 over SASL_PLAINTEXT and SASL_SSL (one broker with both listeners; SCRAM
users created with confluent-kafka's AlterUserScramCredentials on a PLAINTEXT listener),
producing and consuming through a group; and shown Kafka's answer to a wrong password."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from security_certs import TlsFiles, make_tls_files
from support import BrookProcess, free_port

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="alice-secret";'
)
PROTOCOLS = ["SASL_PLAINTEXT", "SASL_SSL"]
MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
PASSWORDS = {"PLAIN": "alice-secret", "SCRAM-SHA-256": "alice-256", "SCRAM-SHA-512": "alice-512"}


@dataclass(frozen=True)
class SaslBroker:
    process: BrookProcess
    ports: dict[str, int]
    tls: TlsFiles

    def bootstrap(self, protocol: str) -> str:
        return f"127.0.0.1:{self.ports[protocol]}"


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SaslBroker]:
    tls = make_tls_files(tmp_path_factory.mktemp("tls"))
    ports = {p: free_port() for p in [*PROTOCOLS, "PLAINTEXT"]}
    overrides = {
        "listeners": ",".join(f"{p}://127.0.0.1:{port}" for p, port in ports.items()),
        "sasl.enabled.mechanisms": ",".join(MECHANISMS),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tls.server_pem),
    }
    data = tmp_path_factory.mktemp("b") / "data"
    with BrookProcess(data, overrides, port=ports["SASL_PLAINTEXT"]) as b:
        create_scram_users(f"127.0.0.1:{ports['PLAINTEXT']}")
        yield SaslBroker(b, ports, tls)


def create_scram_users(bootstrap: str) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                "alice",
                ScramCredentialInfo(getattr(ScramMechanism, m.replace("-", "_")), 8192),
                PASSWORDS[m].encode(),
            )
            for m in MECHANISMS[1:]
        ]
    )
    for future in futures.values():
        future.result(30)
    described = admin.describe_user_scram_credentials(["alice"])["alice"].result(30)
    infos = described.scram_credential_infos
    assert sorted((i.mechanism, i.iterations) for i in infos) == [
        (ScramMechanism.SCRAM_SHA_256, 8192),
        (ScramMechanism.SCRAM_SHA_512, 8192),
    ]


PAIRS = [(p, m) for p in PROTOCOLS for m in MECHANISMS]


def pair_id(pair: tuple[str, str]) -> str:
    return f"{pair[0]}-{pair[1]}"


VALUES = [f"v-{i}".encode() for i in range(10)]


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_confluent_kafka(broker: SaslBroker, pair: tuple[str, str], unique_topic: str) -> None:
    from confluent_kafka import Consumer, KafkaException, Producer

    protocol, mechanism = pair
    settings = {
        "bootstrap.servers": broker.bootstrap(protocol),
        "security.protocol": protocol,
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": PASSWORDS[mechanism],
        "ssl.ca.location": str(broker.tls.ca_pem),
    }
    producer = Producer(settings)
    for v in VALUES:
        producer.produce(unique_topic, v)
    assert producer.flush(30) == 0
    consumer = Consumer({**settings, "group.id": unique_topic, "auto.offset.reset": "earliest"})
    consumer.subscribe([unique_topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(VALUES) and time.monotonic() < deadline:
        msg = consumer.poll(1.0)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.close()
    assert got == VALUES
    # a wrong password: librdkafka reports Kafka's message
    errors: list[str] = []
    bad = Producer(
        {**settings, "sasl.password": "nope", "error_cb": lambda e: errors.append(str(e))}
    )
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        bad.poll(0.2)
    # librdkafka shortens SCRAM's longer message in the middle
    expected = "Invalid username or password" if mechanism == "PLAIN" else "invalid credentials"
    assert any("_AUTHENTICATION" in e and expected in e for e in errors), errors
    with pytest.raises(KafkaException):
        bad.list_topics(timeout=2)


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_kafka_python(
    broker: SaslBroker,
    pair: tuple[str, str],
    unique_topic: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka.errors import KafkaError

    protocol, mechanism = pair
    settings = {
        "bootstrap_servers": broker.bootstrap(protocol),
        "security_protocol": protocol,
        "sasl_mechanism": mechanism,
        "sasl_plain_username": "alice",
        "sasl_plain_password": PASSWORDS[mechanism],
        "ssl_cafile": str(broker.tls.ca_pem),
    }
    producer = KafkaProducer(**settings)
    for v in VALUES:
        producer.send(unique_topic, v)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        unique_topic, group_id=unique_topic, auto_offset_reset="earliest", **settings
    )
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < len(VALUES) and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(r.value for r in records)
    consumer.close()
    assert got == VALUES
    # kafka-python logs the broker's answer and gives up bootstrapping
    with pytest.raises(KafkaError):
        KafkaProducer(**{**settings, "sasl_plain_password": "nope", "bootstrap_timeout_ms": 3000})
    expected = (
        "Authentication failed: Invalid username or password"
        if mechanism == "PLAIN"
        else f"due to invalid credentials with SASL mechanism {mechanism}"
    )
    assert expected in caplog.text


@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_aiokafka(broker: SaslBroker, pair: tuple[str, str], unique_topic: str) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    protocol, mechanism = pair

    async def run() -> list[bytes]:
        common = {
            "bootstrap_servers": broker.bootstrap(protocol),
            "security_protocol": protocol,
            "sasl_mechanism": mechanism,
            "sasl_plain_username": "alice",
            "sasl_plain_password": PASSWORDS[mechanism],
        }
        if protocol == "SASL_SSL":
            common["ssl_context"] = create_ssl_context(cafile=str(broker.tls.ca_pem))
        producer = AIOKafkaProducer(**common)
        await producer.start()
        try:
            for v in VALUES:
                await producer.send_and_wait(unique_topic, v)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            unique_topic, group_id=unique_topic, auto_offset_reset="earliest", **common
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) == len(VALUES):
                        break
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == VALUES


@pytest.mark.skipif(KCAT is None, reason="kcat is installed by the test command")
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_kcat(broker: SaslBroker, pair: tuple[str, str], unique_topic: str) -> None:
    assert KCAT is not None
    protocol, mechanism = pair
    args = [
        "-b",
        broker.bootstrap(protocol),
        "-X",
        f"security.protocol={protocol.lower()}",
        "-X",
        f"sasl.mechanisms={mechanism}",
        "-X",
        "sasl.username=alice",
        "-X",
        f"sasl.password={PASSWORDS[mechanism]}",
        "-X",
        f"ssl.ca.location={broker.tls.ca_pem}",
    ]
    subprocess.run(
        [KCAT, *args, "-P", "-t", unique_topic],
        input="one\ntwo\n",
        text=True,
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        [KCAT, *args, "-C", "-t", unique_topic, "-e", "-o", "beginning"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert out.split() == ["one", "two"]
