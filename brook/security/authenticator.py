"""One connection's SASL authentication as Kafka's SaslServerAuthenticator runs it, as a
plain state machine (the connection is its shell).

    HANDSHAKE_OR_VERSIONS --ApiVersions--> HANDSHAKE --SaslHandshake--> AUTHENTICATE
           |                                   ^                           |  (v1: SaslAuthenticate
           +------------SaslHandshake----------+---------------------------+   framing; v0: raw
                                                                              tokens) --> COMPLETE
    any failure --> FAILED (the connection closes once the answer is sent)

Before authentication only ApiVersions and SaslHandshake are accepted; any other request
closes the connection, as Kafka does. SaslAuthenticate before a handshake is answered
ILLEGAL_SASL_STATE, an unknown mechanism UNSUPPORTED_SASL_MECHANISM with the enabled list,
a failed authentication SASL_AUTHENTICATION_FAILED with Kafka's message; each of these
closes the connection after its answer. Once COMPLETE every request goes to its handler
(where SaslHandshake and SaslAuthenticate are ILLEGAL_SASL_STATE, as in KafkaApis).
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from .principal import USER_TYPE, KafkaPrincipal
from .sasl_mechanism import MechanismServer, SaslFailure


class State(enum.Enum):
    HANDSHAKE_OR_VERSIONS = "handshake_or_versions"
    HANDSHAKE = "handshake"
    AUTHENTICATE = "authenticate"
    RAW_TOKEN = "raw_token"  # after SaslHandshake v0: tokens without Kafka framing
    COMPLETE = "complete"
    FAILED = "failed"


class Gate(enum.Enum):
    """What the connection does with a request in the current state."""

    SERVE = "serve"  # its handler answers it
    CLOSE = "close"  # not allowed before authentication: close without an answer


@dataclass(frozen=True, slots=True)
class Answer:
    """An answer to SaslHandshake or SaslAuthenticate: its error, message, and data; with
    ``close`` the connection closes once it is sent."""

    error: int
    message: str | None = None
    mechanisms: tuple[str, ...] = ()
    token: bytes = b""
    close: bool = False
    # for the broker's log, once: why authentication failed (never a secret)
    log_reason: str | None = None


MechanismFactory = Callable[[str], MechanismServer]


class SaslAuthenticator:
    def __init__(self, mechanisms: list[str], make_server: MechanismFactory) -> None:
        self.enabled = tuple(mechanisms)
        self._make_server = make_server
        self.state = State.HANDSHAKE_OR_VERSIONS
        self.mechanism: str | None = None
        self.principal: KafkaPrincipal | None = None
        self._server: MechanismServer | None = None

    @property
    def complete(self) -> bool:
        return self.state is State.COMPLETE

    @property
    def expects_raw_token(self) -> bool:
        return self.state is State.RAW_TOKEN

    def gate(self, api_key: int) -> Gate:
        """Whether a request of ``api_key`` is served in this state (a request other than
        ApiVersions and the SASL ones before authentication closes the connection)."""
        if self.state is State.COMPLETE:
            return Gate.SERVE
        if self.state is State.FAILED:
            return Gate.CLOSE
        if api_key == ApiKey.API_VERSIONS:
            if self.state is State.HANDSHAKE_OR_VERSIONS:
                self.state = State.HANDSHAKE
            return Gate.SERVE
        if api_key in (ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE):
            return Gate.SERVE
        self.state = State.FAILED
        return Gate.CLOSE

    def handshake(self, mechanism: str, version: int) -> Answer:
        if self.state not in (State.HANDSHAKE_OR_VERSIONS, State.HANDSHAKE):
            return self._fail(
                Errors.ILLEGAL_SASL_STATE,
                "Unexpected SaslHandshake request during SASL authentication",
                "a second SaslHandshake",
                mechanisms=self.enabled,
            )
        if mechanism not in self.enabled:
            return self._fail(
                Errors.UNSUPPORTED_SASL_MECHANISM,
                None,
                f"unsupported SASL mechanism {mechanism[:64]!r}",
                mechanisms=self.enabled,
            )
        self.mechanism = mechanism
        self._server = self._make_server(mechanism)
        self.state = State.AUTHENTICATE if version >= 1 else State.RAW_TOKEN
        return Answer(Errors.NONE, mechanisms=self.enabled)

    def authenticate(self, token: bytes) -> Answer:
        """A SaslAuthenticate token (or a raw one after a v0 handshake)."""
        if self.state not in (State.AUTHENTICATE, State.RAW_TOKEN) or self._server is None:
            return self._fail(
                Errors.ILLEGAL_SASL_STATE,
                "Unexpected Kafka request of type SASL_AUTHENTICATE during SASL handshake.",
                "SaslAuthenticate before SaslHandshake",
            )
        try:
            step = self._server.evaluate(token)
        except SaslFailure as exc:
            return self._fail(
                Errors.SASL_AUTHENTICATION_FAILED,
                exc.message,
                f"{self.mechanism} authentication failed: {exc.reason}",
            )
        if step.user is not None:
            self.state = State.COMPLETE
            self.principal = KafkaPrincipal(USER_TYPE, step.user)
            self._server = None
        return Answer(Errors.NONE, token=step.challenge)

    def _fail(
        self,
        error: int,
        message: str | None,
        reason: str,
        mechanisms: tuple[str, ...] = (),
    ) -> Answer:
        self.state = State.FAILED
        self._server = None
        return Answer(error, message, mechanisms, close=True, log_reason=reason)
