"""Brook's own producer, consumer and admin over TLS with a client certificate (librdkafka's
file names and Java's PEM keystore names), SASL/PLAIN and SCRAM-SHA-256/512 over
SASL_PLAINTEXT and SASL_SSL; a wrong password fails with the broker's message."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from security_certs import ClientCert, TlsFiles, make_tls_files
from support import BrookProcess, free_port

from brook.client import Admin, Consumer, Producer
from brook.client.admin import NewTopic
from brook.protocol.errors import Errors, KafkaError

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_alice="alice-secret";'
)
PROTOCOLS = ["SSL", "SASL_PLAINTEXT", "SASL_SSL"]


@dataclass(frozen=True)
class Secured:
    ports: dict[str, int]
    tls: TlsFiles
    client: ClientCert


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    tls = make_tls_files(tmp_path_factory.mktemp("tls"))
    ports = {p: free_port() for p in [*PROTOCOLS, "PLAINTEXT"]}
    overrides = {
        "listeners": ",".join(f"{p}://127.0.0.1:{port}" for p, port in ports.items()),
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        **tls.broker_settings(),
        "listener.name.ssl.ssl.client.auth": "required",
    }
    data = tmp_path_factory.mktemp("b") / "data"
    with BrookProcess(data, overrides, port=ports["PLAINTEXT"]):
        yield Secured(ports, tls, tls.client_cert("brook-client"))


def round_trip(settings: dict[str, str]) -> None:
    topic = f"sec-{uuid.uuid4().hex[:8]}"
    with Admin(settings) as admin:
        admin.create_topics([NewTopic(topic, 1, 1)])
    with Producer({**settings, "linger.ms": 0}) as producer:
        for i in range(10):
            producer.send(topic, f"v{i}".encode())
        producer.flush(30)
    with Consumer({**settings, "group.id": topic, "auto.offset.reset": "earliest"}) as consumer:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(got) < 10 and time.monotonic() < deadline:
            got.extend(r.value for r in consumer.poll(500))
    assert got == [f"v{i}".encode() for i in range(10)]


def test_ssl_with_client_certificate_librdkafka_names(broker: Secured) -> None:
    round_trip(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.ports['SSL']}",
            "security.protocol": "SSL",
            "ssl.ca.location": str(broker.tls.ca_pem),
            "ssl.certificate.location": str(broker.client.cert),
            "ssl.key.location": str(broker.client.key),
        }
    )


def test_ssl_with_java_pem_keystore(broker: Secured) -> None:
    round_trip(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.ports['SSL']}",
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(broker.tls.ca_pem),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(broker.client.both),
        }
    )


@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl(broker: Secured, protocol: str, mechanism: str) -> None:
    password = "alice-secret"
    if mechanism != "PLAIN":
        from confluent_kafka.admin import (
            AdminClient,
            ScramCredentialInfo,
            ScramMechanism,
            UserScramCredentialUpsertion,
        )

        password = f"pw-{mechanism}"
        admin = AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.ports['PLAINTEXT']}"})
        mech = getattr(ScramMechanism, mechanism.replace("-", "_"))
        for f in admin.alter_user_scram_credentials(
            [
                UserScramCredentialUpsertion(
                    "alice", ScramCredentialInfo(mech, 4096), password.encode()
                )
            ]
        ).values():
            f.result(30)
    settings = {
        "bootstrap.servers": f"127.0.0.1:{broker.ports[protocol]}",
        "security.protocol": protocol,
        "ssl.ca.location": str(broker.tls.ca_pem),
        "sasl.mechanism": mechanism,
        "sasl.username": "alice",
        "sasl.password": password,
    }
    round_trip(settings)
    with pytest.raises(KafkaError) as failure:
        Admin({**settings, "sasl.password": "wrong"})
    assert failure.value.code == Errors.SASL_AUTHENTICATION_FAILED
