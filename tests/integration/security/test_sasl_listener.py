"""SASL/PLAIN listeners on a real broker, configured with Kafka's own example settings; the
protocol as a raw client speaks it (SaslHandshake v0 and v1, SaslAuthenticate), and every kind
of bad input answered as Kafka answers it, logged once with the client's address and without
the password, while an authenticated client keeps being served."""

from __future__ import annotations

import re
import struct
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rawclient import RawClient
from support import BrookProcess, free_port

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" '
    'user_alice="alice-secret";'
)
AV3 = {"client_software_name": "raw", "client_software_version": "1"}
MD12 = {
    "topics": None,
    "allow_auto_topic_creation": False,
    "include_topic_authorized_operations": False,
}


def kafka_example(port: int, listener: str = "SASL_PLAINTEXT") -> dict[str, str]:
    """The single-node SASL settings of Kafka's documentation, unchanged."""
    return {
        "listeners": f"{listener}://127.0.0.1:{port}",
        "sasl.enabled.mechanisms": "PLAIN",
        f"listener.name.{listener.lower()}.plain.sasl.jaas.config": JAAS,
        "security.inter.broker.protocol": listener,
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
    }


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrookProcess]:
    port = free_port()
    data = tmp_path_factory.mktemp("sasl") / "data"
    with BrookProcess(data, kafka_example(port), port=port, log_level="DEBUG") as b:
        yield b


def login(client: RawClient, user: str, password: str, version: int = 2) -> object:
    hs = client.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert hs.error_code == Errors.NONE, hs
    token = b"\0" + user.encode() + b"\0" + password.encode()
    return client.request(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token})


def metadata_ok(client: RawClient) -> bool:
    response = client.request(ApiKey.METADATA, 12, MD12)
    return len(response.brokers) == 1


@pytest.fixture
def served(broker: BrookProcess) -> Iterator[RawClient]:
    """An authenticated client that must stay served through every bad input."""
    with RawClient(broker.bootstrap) as client:
        assert login(client, "alice", "alice-secret").error_code == Errors.NONE
        yield client
        assert metadata_ok(client)


def log_size(broker: BrookProcess) -> int:
    return broker.log_path.stat().st_size


def log_lines(
    broker: BrookProcess, pattern: str, since: int = 0, timeout: float = 10.0
) -> list[str]:
    """Lines of the broker's log written after byte ``since`` that match ``pattern`` (an
    ephemeral port may have been used by an earlier connection of the module's broker)."""
    deadline = time.monotonic() + timeout
    while True:
        with broker.log_path.open("rb") as f:
            f.seek(since)
            text = f.read().decode(errors="replace")
        lines = [line for line in text.splitlines() if re.search(pattern, line)]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


def test_plain_login_then_requests_are_served(broker: BrookProcess, served: RawClient) -> None:
    since = log_size(broker)
    with RawClient(broker.bootstrap) as c:
        assert c.request(ApiKey.API_VERSIONS, 3, AV3).error_code == Errors.NONE
        answer = login(c, "admin", "admin-secret")
        assert answer.error_code == Errors.NONE and answer.error_message is None
        assert metadata_ok(c)
        port = c.sock.getsockname()[1]
    assert log_lines(
        broker, rf"127\.0\.0\.1:{port} .*authenticated with PLAIN as User:admin", since
    )
    # once authenticated, another handshake is Kafka's ILLEGAL_SASL_STATE
    again = served.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert again.error_code == Errors.ILLEGAL_SASL_STATE


def test_wrong_password(broker: BrookProcess, served: RawClient) -> None:
    since = log_size(broker)
    with RawClient(broker.bootstrap) as c:
        port = c.sock.getsockname()[1]
        answer = login(c, "alice", "guess-one")
        assert answer.error_code == Errors.SASL_AUTHENTICATION_FAILED
        assert answer.error_message == "Authentication failed: Invalid username or password"
        assert c.is_closed()
    lines = log_lines(broker, rf"127\.0\.0\.1:{port}\b", since)
    assert len(lines) == 1, lines
    assert "SASL authentication" in lines[0] and "guess-one" not in lines[0]
    assert "guess-one" not in broker.log_path.read_text()


def test_unknown_mechanism(broker: BrookProcess, served: RawClient) -> None:
    with RawClient(broker.bootstrap) as c:
        answer = c.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
        assert answer.error_code == Errors.UNSUPPORTED_SASL_MECHANISM
        assert list(answer.mechanisms) == ["PLAIN"]
        assert c.is_closed()


def test_authenticate_before_handshake(broker: BrookProcess, served: RawClient) -> None:
    with RawClient(broker.bootstrap) as c:
        answer = c.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"\0alice\0alice-secret"})
        assert answer.error_code == Errors.ILLEGAL_SASL_STATE
        assert c.is_closed()


@pytest.mark.parametrize("after_handshake", [False, True])
def test_request_before_authentication_closes_the_connection(
    broker: BrookProcess, served: RawClient, after_handshake: bool
) -> None:
    since = log_size(broker)
    with RawClient(broker.bootstrap) as c:
        port = c.sock.getsockname()[1]
        if after_handshake:
            c.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        c.request(
            ApiKey.METADATA,
            12,
            MD12,
            expect_response=False,
        )
        assert c.is_closed()
    lines = log_lines(broker, rf"127\.0\.0\.1:{port}\b", since)
    assert len(lines) == 1 and "before SASL authentication" in lines[0], lines


def test_huge_token_is_refused(broker: BrookProcess, served: RawClient) -> None:
    with RawClient(broker.bootstrap) as c:
        c.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        # a frame above sasl.server.max.receive.size (512 KiB): only its size is sent
        c.send_bytes(struct.pack(">i", 100 * 1024 * 1024))
        assert c.is_closed()


def test_v0_handshake_takes_raw_tokens(broker: BrookProcess, served: RawClient) -> None:
    with RawClient(broker.bootstrap) as c:
        hs = c.request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
        assert hs.error_code == Errors.NONE
        token = b"alice\0alice\0alice-secret"
        c.send_bytes(struct.pack(">i", len(token)) + token)
        assert c.recv_frame() == b""  # PLAIN's empty server token
        assert metadata_ok(c)
    with RawClient(broker.bootstrap) as c:
        c.request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
        token = b"\0alice\0wrong"
        c.send_bytes(struct.pack(">i", len(token)) + token)
        assert c.is_closed()


def test_sasl_requests_on_a_plaintext_listener(brook_session: BrookProcess) -> None:
    with RawClient(brook_session.bootstrap) as c:
        hs = c.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert hs.error_code == Errors.ILLEGAL_SASL_STATE
        auth = c.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": b"x"})
        assert auth.error_code == Errors.ILLEGAL_SASL_STATE
        assert metadata_ok(c)


def test_gssapi_default_and_missing_jaas_are_refused_at_start(tmp_path: Path) -> None:
    port = free_port()
    settings = kafka_example(port)
    del settings["sasl.enabled.mechanisms"]
    b = BrookProcess(tmp_path / "a", settings, port=port)
    with pytest.raises(RuntimeError, match="GSSAPI"):
        b.start(timeout=20)
    settings = kafka_example(port)
    del settings["listener.name.sasl_plaintext.plain.sasl.jaas.config"]
    b = BrookProcess(tmp_path / "b", settings, port=port)
    with pytest.raises(RuntimeError, match=r"plain\.sasl\.jaas\.config"):
        b.start(timeout=20)
