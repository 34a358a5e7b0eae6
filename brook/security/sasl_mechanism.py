"""What a SASL mechanism's server side is to the authenticator: tokens in, challenges out,
the authenticated user name at the end, or a failure with the message the client is sent
and a reason for the broker's log (neither ever holds a password)."""

from __future__ import annotations

from dataclasses import dataclass


class SaslFailure(Exception):
    """Authentication failed: ``message`` goes to the client (Kafka's wording), ``reason``
    to the log."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Step:
    """The server's answer to one client token; ``user`` is set once authentication is
    complete."""

    challenge: bytes
    user: str | None = None


class MechanismServer:
    mechanism: str = ""

    def evaluate(self, token: bytes) -> Step:
        raise NotImplementedError
