"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka runs them: the credential
(salt, stored key, server key, iterations: never the password) and the server side of the
exchange (client-first, server-first, client-final, server-final).

Kafka's limits: 4096 to 16384 iterations. Every authentication failure is answered with
Kafka's one message, so a client learns nothing about which users exist; the reason is only
logged.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from .sasl_mechanism import MechanismServer, SaslFailure, Step

MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384


@dataclass(frozen=True, slots=True)
class ScramMechanism:
    name: str
    wire_id: int  # AlterUserScramCredentials' and the metadata record's mechanism id
    hash_name: str


SCRAM_SHA_256 = ScramMechanism("SCRAM-SHA-256", 1, "sha256")
SCRAM_SHA_512 = ScramMechanism("SCRAM-SHA-512", 2, "sha512")
MECHANISMS = {m.name: m for m in (SCRAM_SHA_256, SCRAM_SHA_512)}
BY_ID = {m.wire_id: m for m in MECHANISMS.values()}


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hmac(mech: ScramMechanism, key: bytes, data: bytes) -> bytes:
    return hmac.new(key, data, mech.hash_name).digest()


def salted_password(mech: ScramMechanism, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(mech.hash_name, password.encode("utf-8"), salt, iterations)


def credential_from_salted(
    mech: ScramMechanism, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    """What the server keeps of a salted password (AlterUserScramCredentials sends that)."""
    client_key = _hmac(mech, salted, b"Client Key")
    stored_key = hashlib.new(mech.hash_name, client_key).digest()
    server_key = _hmac(mech, salted, b"Server Key")
    return ScramCredential(salt, stored_key, server_key, iterations)


def new_credential(
    mech: ScramMechanism, password: str, iterations: int = MIN_ITERATIONS, salt: bytes | None = None
) -> ScramCredential:
    salt = salt if salt is not None else os.urandom(32)
    return credential_from_salted(
        mech, salted_password(mech, password, salt, iterations), salt, iterations
    )


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text.encode("ascii"), validate=True)


def decode_saslname(name: str) -> str:
    """RFC 5802's ``=2C`` and ``=3D`` escapes; any other ``=`` is malformed."""
    if re.search(r"=(?!2C|3D)", name):
        raise ValueError("invalid escape in user name")
    return name.replace("=2C", ",").replace("=3D", "=")


_CLIENT_FIRST = re.compile(
    r"(?P<gs2>[ny]),(?:a=(?P<authzid>[^,]*))?,(?P<bare>n=(?P<name>[^,]*),r=(?P<nonce>[^,]*)(?P<ext>.*))",
    re.S,
)
_CLIENT_FINAL = re.compile(
    r"(?P<without>c=(?P<cbind>[^,]*),r=(?P<nonce>[^,]*)(?:,[^p][^,]*)*),p=(?P<proof>[^,]*)", re.S
)

Lookup = Callable[[str], ScramCredential | None]


class ScramServer(MechanismServer):
    """One SCRAM exchange, server side."""

    def __init__(self, mech: ScramMechanism, lookup: Lookup, nonce: str | None = None) -> None:
        self.mechanism = mech.name
        self._mech = mech
        self._lookup = lookup
        # letters and digits only, as Kafka's (older librdkafka mangles a nonce with '+' or '/')
        self._nonce = nonce if nonce is not None else os.urandom(16).hex()
        self._state = "first"
        self._user = ""
        self._auth_prefix = ""
        self._gs2 = ""
        self._full_nonce = ""
        self._credential: ScramCredential | None = None

    def _fail(self, reason: str) -> SaslFailure:
        self._state = "failed"
        return SaslFailure(
            "Authentication failed during authentication due to invalid credentials with SASL "
            f"mechanism {self._mech.name}",
            reason,
        )

    def evaluate(self, token: bytes) -> Step:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise self._fail("a SCRAM message not in UTF-8") from None
        if self._state == "first":
            return self._client_first(text)
        if self._state == "final":
            return self._client_final(text)
        raise self._fail("a SCRAM message after the exchange ended")

    def _client_first(self, text: str) -> Step:
        m = _CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise self._fail("a malformed SCRAM client-first message")
        try:
            user = decode_saslname(m.group("name"))
        except ValueError:
            raise self._fail("a malformed SCRAM user name") from None
        if m.group("ext"):
            # Kafka's only extension is delegation-token authentication, not served here
            raise self._fail(f"SCRAM extensions from user {user!r}")
        authzid = m.group("authzid")
        if authzid and authzid != user:
            raise self._fail(f"authorization id different from user {user!r}")
        credential = self._lookup(user)
        if credential is None:
            raise self._fail(f"unknown user {user!r}")
        if credential.iterations < MIN_ITERATIONS:
            raise self._fail(f"user {user!r} has fewer than {MIN_ITERATIONS} iterations")
        self._user = user
        self._credential = credential
        self._gs2 = text[: m.start("bare")]
        self._full_nonce = m.group("nonce") + self._nonce
        server_first = f"r={self._full_nonce},s={_b64(credential.salt)},i={credential.iterations}"
        self._auth_prefix = f"{m.group('bare')},{server_first}"
        self._state = "final"
        return Step(server_first.encode())

    def _client_final(self, text: str) -> Step:
        m = _CLIENT_FINAL.fullmatch(text)
        credential = self._credential
        assert credential is not None
        if m is None:
            raise self._fail(f"a malformed SCRAM client-final message from user {self._user!r}")
        # Kafka checks that the nonce ends with the server-first one (not equality): older
        # librdkafka (Debian's kcat) sends the client nonce twice
        if not m.group("nonce").endswith(self._full_nonce):
            raise self._fail(f"a wrong SCRAM nonce from user {self._user!r}")
        try:
            cbind = _unb64(m.group("cbind")).decode("utf-8")
            proof = _unb64(m.group("proof"))
        except (ValueError, UnicodeDecodeError):
            raise self._fail(f"malformed base64 from user {self._user!r}") from None
        if cbind != self._gs2:
            raise self._fail(f"a wrong SCRAM channel binding from user {self._user!r}")
        auth_message = f"{self._auth_prefix},{m.group('without')}".encode()
        signature = _hmac(self._mech, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise self._fail(f"invalid credentials (user {self._user!r})")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        stored = hashlib.new(self._mech.hash_name, client_key).digest()
        if not hmac.compare_digest(stored, credential.stored_key):
            raise self._fail(f"invalid credentials (user {self._user!r})")
        server_signature = _hmac(self._mech, credential.server_key, auth_message)
        self._state = "done"
        return Step(f"v={_b64(server_signature)}".encode(), self._user)


class ScramClient:
    """The client side of one exchange (Brook's client, inter-broker connections, tests)."""

    def __init__(self, mech: ScramMechanism, user: str, password: str) -> None:
        self._mech = mech
        self._password = password
        escaped = user.replace("=", "=3D").replace(",", "=2C")
        self._nonce = _b64(os.urandom(24)).rstrip("=")
        self._first_bare = f"n={escaped},r={self._nonce}"
        self._auth_message = b""
        self._server_key = b""

    def first(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8")
        fields = dict(part.split("=", 1) for part in text.split(","))
        nonce, salt, iterations = fields["r"], _unb64(fields["s"]), int(fields["i"])
        if not nonce.startswith(self._nonce):
            raise ValueError("the server's SCRAM nonce does not extend the client's")
        salted = salted_password(self._mech, self._password, salt, iterations)
        without_proof = f"c={_b64(b'n,,')},r={nonce}"
        self._auth_message = f"{self._first_bare},{text},{without_proof}".encode()
        client_key = _hmac(self._mech, salted, b"Client Key")
        stored_key = hashlib.new(self._mech.hash_name, client_key).digest()
        signature = _hmac(self._mech, stored_key, self._auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_key = _hmac(self._mech, salted, b"Server Key")
        return f"{without_proof},p={_b64(proof)}".encode()

    def verify(self, server_final: bytes) -> None:
        text = server_final.decode("utf-8")
        if not text.startswith("v="):
            raise ValueError(f"SCRAM authentication failed: {text}")
        expected = _hmac(self._mech, self._server_key, self._auth_message)
        if not hmac.compare_digest(_unb64(text[2:]), expected):
            raise ValueError("the server's SCRAM signature is wrong")
