"""SASL/PLAIN on the broker (RFC 4616), as Kafka's PlainSaslServer: one client message
``authzid NUL authcid NUL passwd``, checked against the listener's JAAS ``user_<name>``
entries. The failure messages are Kafka's, so a client shows what a Kafka broker would."""

from __future__ import annotations

import hmac

from .sasl_mechanism import MechanismServer, SaslFailure, Step


class PlainServer(MechanismServer):
    mechanism = "PLAIN"

    def __init__(self, users: dict[str, str]) -> None:
        self._users = users
        self._done = False

    def evaluate(self, token: bytes) -> Step:
        if self._done:
            raise SaslFailure("PLAIN authentication already complete", "a second PLAIN token")
        self._done = True
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailure(
                "Invalid SASL/PLAIN response: not UTF-8", "a PLAIN token not in UTF-8"
            ) from None
        parts = text.split("\0")
        if len(parts) != 3:
            raise SaslFailure(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}",
                "a malformed PLAIN token",
            )
        authzid, username, password = parts
        if not username:
            raise SaslFailure("Authentication failed: username not specified", "no username")
        if not password:
            raise SaslFailure(
                "Authentication failed: password not specified", f"no password for {username!r}"
            )
        expected = self._users.get(username)
        if expected is None or not hmac.compare_digest(
            expected.encode("utf-8"), password.encode("utf-8")
        ):
            raise SaslFailure(
                "Authentication failed: Invalid username or password",
                f"invalid username or password (user {username!r})",
            )
        if authzid and authzid != username:
            raise SaslFailure(
                "Authentication failed: Client requested an authorization id that is different "
                "from username",
                f"authorization id different from user {username!r}",
            )
        return Step(b"", username)
