"""SASL/PLAIN's server checks in Kafka's order, with Kafka's messages."""

from __future__ import annotations

import pytest

from brook.security.sasl_mechanism import SaslFailure
from brook.security.sasl_plain import PlainServer

USERS = {"alice": "alice-secret"}


@pytest.mark.parametrize(
    ("token", "message"),
    [
        (b"alice\0alice-secret", "Invalid SASL/PLAIN response: expected 3 tokens, got 2"),
        (b"\0\0alice-secret", "Authentication failed: username not specified"),
        (b"\0alice\0", "Authentication failed: password not specified"),
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password"),
        (b"\0bob\0alice-secret", "Authentication failed: Invalid username or password"),
        (
            b"admin\0alice\0alice-secret",
            "Authentication failed: Client requested an authorization id that is different "
            "from username",
        ),
    ],
)
def test_refusals(token: bytes, message: str) -> None:
    with pytest.raises(SaslFailure) as failure:
        PlainServer(USERS).evaluate(token)
    assert failure.value.message == message
    assert b"alice-secret".decode() not in failure.value.reason


def test_success_names_the_user_and_sends_an_empty_token() -> None:
    step = PlainServer(USERS).evaluate(b"alice\0alice\0alice-secret")
    assert (step.challenge, step.user) == (b"", "alice")
