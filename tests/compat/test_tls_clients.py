"""kafka-python, aiokafka and kcat over a TLS listener with mTLS required (the broker checks
each client's certificate): produce and consume through a group, with the clients' own TLS
settings."""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
import time
from collections.abc import Iterator

import pytest
from security_certs import ClientCert, TlsFiles, make_tls_files
from support import BrookProcess, free_port

KCAT = shutil.which("kcat") or shutil.which("kafkacat")


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def client(tls: TlsFiles) -> ClientCert:
    return tls.client_cert("compat-client")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles) -> Iterator[BrookProcess]:
    port = free_port()
    overrides = {"listeners": f"SSL://127.0.0.1:{port}", **tls.broker_settings("SSL", "required")}
    with BrookProcess(tmp_path_factory.mktemp("b") / "data", overrides, port=port) as b:
        yield b


def test_kafka_python_over_mtls(
    broker: BrookProcess, tls: TlsFiles, client: ClientCert, unique_topic: str
) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    settings = {
        "bootstrap_servers": broker.bootstrap,
        "security_protocol": "SSL",
        "ssl_cafile": str(tls.ca_pem),
        "ssl_certfile": str(client.cert),
        "ssl_keyfile": str(client.key),
    }
    producer = KafkaProducer(**settings)
    for i in range(20):
        producer.send(unique_topic, f"kp-{i}".encode())
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        unique_topic,
        group_id=f"g-{unique_topic}",
        auto_offset_reset="earliest",
        **settings,
    )
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < 20 and time.monotonic() < deadline:
        for records in consumer.poll(timeout_ms=500).values():
            got.extend(r.value for r in records)
    consumer.close()
    assert got == [f"kp-{i}".encode() for i in range(20)]


def test_aiokafka_over_mtls(
    broker: BrookProcess, tls: TlsFiles, client: ClientCert, unique_topic: str
) -> None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.helpers import create_ssl_context

    async def run() -> list[bytes]:
        ctx: ssl.SSLContext = create_ssl_context(
            cafile=str(tls.ca_pem), certfile=str(client.cert), keyfile=str(client.key)
        )
        common = {
            "bootstrap_servers": broker.bootstrap,
            "security_protocol": "SSL",
            "ssl_context": ctx,
        }
        producer = AIOKafkaProducer(**common)
        await producer.start()
        try:
            for i in range(20):
                await producer.send_and_wait(unique_topic, f"ak-{i}".encode())
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            unique_topic, group_id=f"g-{unique_topic}", auto_offset_reset="earliest", **common
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) == 20:
                        break
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(run()) == [f"ak-{i}".encode() for i in range(20)]


@pytest.mark.skipif(KCAT is None, reason="kcat is installed by the test command")
def test_kcat_over_mtls(
    broker: BrookProcess, tls: TlsFiles, client: ClientCert, unique_topic: str
) -> None:
    assert KCAT is not None
    tls_args = [
        "-X",
        "security.protocol=ssl",
        "-X",
        f"ssl.ca.location={tls.ca_pem}",
        "-X",
        f"ssl.certificate.location={client.cert}",
        "-X",
        f"ssl.key.location={client.key}",
    ]
    subprocess.run(
        [KCAT, "-b", broker.bootstrap, *tls_args, "-P", "-t", unique_topic],
        input="one\ntwo\nthree\n",
        text=True,
        check=True,
        timeout=60,
    )
    out = subprocess.run(
        [
            KCAT,
            "-b",
            broker.bootstrap,
            *tls_args,
            "-C",
            "-t",
            unique_topic,
            "-e",
            "-o",
            "beginning",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert out.split() == ["one", "two", "three"]
