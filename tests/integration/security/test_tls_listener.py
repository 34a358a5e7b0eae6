"""TLS listeners on a real broker: Kafka's PEM settings, mTLS with the certificate's subject
as the principal, TLS versions, and what bad TLS input gets (the connection closed, the
failure logged once with the client's address) while other clients keep being served."""

from __future__ import annotations

import datetime
import re
import ssl
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from rawclient import ConnectionClosed, RawClient
from security_certs import ClientCert, TlsFiles, make_tls_files
from support import BrookProcess, free_port

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))


def ssl_broker(data: Path, tls: TlsFiles, client_auth: str = "none", **extra: str) -> BrookProcess:
    port = free_port()
    overrides = {"listeners": f"SSL://127.0.0.1:{port}", **tls.broker_settings("SSL", client_auth)}
    overrides.update({k.replace("_", "."): v for k, v in extra.items()})
    return BrookProcess(data, overrides, port=port, log_level="DEBUG")


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles) -> Iterator[BrookProcess]:
    with ssl_broker(tmp_path_factory.mktemp("ssl") / "data", tls) as b:
        yield b


@pytest.fixture(scope="module")
def mtls_broker(tmp_path_factory: pytest.TempPathFactory, tls: TlsFiles) -> Iterator[BrookProcess]:
    with ssl_broker(tmp_path_factory.mktemp("mtls") / "data", tls, "required") as b:
        yield b


AV3 = {"client_software_name": "raw", "client_software_version": "1"}


def client_context(tls: TlsFiles, cert: ClientCert | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(tls.ca_pem))
    if cert is not None:
        ctx.load_cert_chain(str(cert.cert), str(cert.key))
    return ctx


def api_versions_ok(bootstrap: str, ctx: ssl.SSLContext) -> bool:
    with RawClient(bootstrap, tls=ctx) as c:
        return c.request(ApiKey.API_VERSIONS, 3, AV3).error_code == Errors.NONE


def confluent_settings(broker: BrookProcess, tls: TlsFiles, cert: ClientCert | None = None):
    settings = {
        "bootstrap.servers": broker.bootstrap,
        "security.protocol": "SSL",
        "ssl.ca.location": str(tls.ca_pem),
    }
    if cert is not None:
        settings["ssl.certificate.location"] = str(cert.cert)
        settings["ssl.key.location"] = str(cert.key)
    return settings


def produce_and_consume(settings: dict[str, str], topic: str, values: list[bytes]) -> list[bytes]:
    producer = Producer(settings)
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer({**settings, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < len(values) and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is not None and msg.error() is None:
                got.append(msg.value())
    finally:
        consumer.close()
    return got


def log_size(broker: BrookProcess) -> int:
    return broker.log_path.stat().st_size


def log_since(broker: BrookProcess, since: int) -> str:
    with broker.log_path.open("rb") as f:
        f.seek(since)
        return f.read().decode(errors="replace")


def wait_for_log(broker: BrookProcess, pattern: str, since: int = 0, timeout: float = 20.0) -> str:
    """The first match of ``pattern`` in what the broker logged after byte ``since``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = re.search(pattern, log_since(broker, since))
        if found:
            return found.group(0)
        time.sleep(0.1)
    raise AssertionError(f"{pattern!r} not in the broker's log:\n{broker.log()}")


def test_confluent_kafka_produces_and_consumes_over_ssl(
    broker: BrookProcess, tls: TlsFiles, unique_topic: str
) -> None:
    # More than the 1 MiB a stored span is read at a time: fetches of stored records go
    # through the TLS transport chunk by chunk.
    values = [bytes([i % 251]) * 50_000 + str(i).encode() for i in range(80)]
    assert produce_and_consume(confluent_settings(broker, tls), unique_topic, values) == values


def test_plaintext_client_on_ssl_port_is_closed_and_logged_once(
    broker: BrookProcess, tls: TlsFiles
) -> None:
    since = log_size(broker)
    with RawClient(broker.bootstrap) as plain:
        port = plain.sock.getsockname()[1]
        plain.request(ApiKey.API_VERSIONS, 3, AV3, expect_response=False)
        assert plain.is_closed(10)
    line = wait_for_log(
        broker, rf"TLS handshake with 127\.0\.0\.1:{port} on listener SSL failed.*", since
    )
    assert line.count("TLS handshake") == 1
    assert log_since(broker, since).count(f"127.0.0.1:{port} ") == 1
    # every other client is still served
    assert api_versions_ok(broker.bootstrap, client_context(tls))


def test_untrusted_server_certificate_is_refused_by_the_client(
    broker: BrookProcess, tls: TlsFiles, tmp_path: Path
) -> None:
    other = make_tls_files(tmp_path / "other")
    with pytest.raises(ssl.SSLCertVerificationError):
        RawClient(broker.bootstrap, tls=client_context(other))
    assert api_versions_ok(broker.bootstrap, client_context(tls))


def test_mtls_principal_is_the_certificate_subject(
    mtls_broker: BrookProcess, tls: TlsFiles, unique_topic: str
) -> None:
    alice = tls.client_cert("alice", organization="Acme, Inc.", unit="Ops")
    since = log_size(mtls_broker)
    settings = confluent_settings(mtls_broker, tls, alice)
    assert produce_and_consume(settings, unique_topic, [b"a", b"b"]) == [b"a", b"b"]
    # Java's X500Principal.getName(): last RDN first, the comma in O escaped
    wait_for_log(mtls_broker, re.escape(r"as User:CN=alice,OU=Ops,O=Acme\, Inc."), since)


@pytest.mark.parametrize("case", ["no certificate", "untrusted CA", "expired"])
def test_mtls_required_refuses_bad_client_certificates(
    mtls_broker: BrookProcess, tls: TlsFiles, tmp_path: Path, case: str
) -> None:
    import trustme

    cert: ClientCert | None
    if case == "no certificate":
        cert = None
    elif case == "untrusted CA":
        cert = tls.client_cert("mallory", ca=trustme.CA())
    else:
        past = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)
        cert = tls.client_cert("expired-bob", not_after=past)
    ctx = client_context(tls, cert)
    since = log_size(mtls_broker)
    # TLS 1.3: the server's refusal of the client certificate arrives after the client's
    # side of the handshake, at the first read
    with (
        pytest.raises((ssl.SSLError, OSError, ConnectionClosed)),
        RawClient(mtls_broker.bootstrap, tls=ctx) as c,
    ):
        c.request(ApiKey.API_VERSIONS, 3, AV3)
    wait_for_log(mtls_broker, r"TLS handshake with 127\.0\.0\.1:\d+ on listener SSL failed", since)
    good = tls.client_cert("carol")
    assert api_versions_ok(mtls_broker.bootstrap, client_context(tls, good))


def test_requested_client_auth_accepts_clients_without_a_certificate(
    tmp_path: Path, tls: TlsFiles
) -> None:
    with ssl_broker(tmp_path / "data", tls, "requested") as b:
        assert api_versions_ok(b.bootstrap, client_context(tls))
        wait_for_log(b, r"as User:ANONYMOUS")
        dave = tls.client_cert("dave")
        assert api_versions_ok(b.bootstrap, client_context(tls, dave))
        wait_for_log(b, re.escape("as User:CN=dave,OU=Clients,O=Brook Tests"))


def test_enabled_protocols_bound_the_tls_version(tmp_path: Path, tls: TlsFiles) -> None:
    with ssl_broker(tmp_path / "data", tls, ssl_enabled_protocols="TLSv1.3") as b:
        old = client_context(tls)
        old.maximum_version = ssl.TLSVersion.TLSv1_2
        with pytest.raises(ssl.SSLError):
            RawClient(b.bootstrap, tls=old)
        with RawClient(b.bootstrap, tls=client_context(tls)) as c:
            assert c.sock.version() == "TLSv1.3"  # type: ignore[attr-defined]


def test_inline_pem_key_store_and_per_listener_settings(tmp_path: Path, tls: TlsFiles) -> None:
    """KIP-651's inline PEM (certificate chain and key as values), given for one listener
    with listener.name.<l>. as Kafka's per-listener override; a broken unprefixed key store
    shows the listener's own settings win."""
    ssl_port, plain_port = free_port(), free_port()
    text = tls.server_pem.read_text()
    key = text[: re.search(r"-----END [A-Z ]*PRIVATE KEY-----", text).end()]  # type: ignore[union-attr]
    chain = text[len(key) :].strip()
    overrides = {
        "listeners": f"SECURE://127.0.0.1:{ssl_port},PLAINTEXT://127.0.0.1:{plain_port}",
        "listener.security.protocol.map": "SECURE:SSL,PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(tmp_path / "missing.pem"),
        "listener.name.secure.ssl.keystore.location": "",
        "listener.name.secure.ssl.keystore.certificate.chain": chain,
        "listener.name.secure.ssl.keystore.key": key,
    }
    with BrookProcess(tmp_path / "data", overrides, port=ssl_port) as b:
        assert api_versions_ok(b.bootstrap, client_context(tls))
        with RawClient(f"127.0.0.1:{plain_port}") as plain:
            assert plain.request(ApiKey.API_VERSIONS, 3, AV3).error_code == Errors.NONE
