"""The per-connection SASL state machine alone: what is accepted before authentication, the
handshake, the answers to each kind of bad input (Kafka's codes and messages), success."""

from __future__ import annotations

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.security.authenticator import Gate, SaslAuthenticator, State
from brook.security.principal import KafkaPrincipal
from brook.security.sasl_plain import PlainServer

USERS = {"alice": "alice-secret", "admin": "admin-secret"}


def auth(*mechanisms: str) -> SaslAuthenticator:
    return SaslAuthenticator(list(mechanisms or ["PLAIN"]), lambda m: PlainServer(USERS))


def test_only_api_versions_and_sasl_requests_before_authentication() -> None:
    a = auth()
    assert a.gate(ApiKey.API_VERSIONS) is Gate.SERVE
    assert a.state is State.HANDSHAKE
    assert a.gate(ApiKey.SASL_HANDSHAKE) is Gate.SERVE
    assert a.gate(ApiKey.METADATA) is Gate.CLOSE
    assert a.state is State.FAILED
    assert a.gate(ApiKey.API_VERSIONS) is Gate.CLOSE


def test_plain_handshake_then_authenticate_sets_the_principal() -> None:
    a = auth("PLAIN", "SCRAM-SHA-256")
    answer = a.handshake("PLAIN", 1)
    assert (answer.error, answer.mechanisms, answer.close) == (
        Errors.NONE,
        ("PLAIN", "SCRAM-SHA-256"),
        False,
    )
    assert a.state is State.AUTHENTICATE
    b = auth()
    b.handshake("PLAIN", 1)
    done = b.authenticate(b"\0alice\0alice-secret")
    assert done.error == Errors.NONE and not done.close
    assert b.complete and b.principal == KafkaPrincipal("User", "alice")
    assert b.gate(ApiKey.PRODUCE) is Gate.SERVE


def test_v0_handshake_expects_raw_tokens() -> None:
    a = auth()
    a.handshake("PLAIN", 0)
    assert a.expects_raw_token
    assert a.authenticate(b"alice\0alice\0alice-secret").error == Errors.NONE
    assert a.complete and not a.expects_raw_token


def test_authenticate_before_handshake_is_illegal_sasl_state() -> None:
    a = auth()
    answer = a.authenticate(b"\0alice\0alice-secret")
    assert answer.error == Errors.ILLEGAL_SASL_STATE and answer.close
    assert answer.message == (
        "Unexpected Kafka request of type SASL_AUTHENTICATE during SASL handshake."
    )
    assert a.state is State.FAILED and a.principal is None


def test_unknown_mechanism_lists_the_enabled_ones() -> None:
    a = auth("PLAIN", "SCRAM-SHA-512")
    answer = a.handshake("GSSAPI", 1)
    assert answer.error == Errors.UNSUPPORTED_SASL_MECHANISM and answer.close
    assert answer.mechanisms == ("PLAIN", "SCRAM-SHA-512")
    assert "GSSAPI" in (answer.log_reason or "")


def test_wrong_password_is_kafkas_message_and_logs_no_secret() -> None:
    a = auth()
    a.handshake("PLAIN", 1)
    answer = a.authenticate(b"\0alice\0not-the-password")
    assert answer.error == Errors.SASL_AUTHENTICATION_FAILED and answer.close
    assert answer.message == "Authentication failed: Invalid username or password"
    assert "not-the-password" not in (answer.log_reason or "")
    assert "alice" in (answer.log_reason or "")
    assert a.state is State.FAILED and a.principal is None


def test_second_handshake_is_illegal_sasl_state() -> None:
    a = auth()
    a.handshake("PLAIN", 1)
    assert a.handshake("PLAIN", 1).error == Errors.ILLEGAL_SASL_STATE
