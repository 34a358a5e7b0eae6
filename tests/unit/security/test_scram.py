"""SCRAM's server side against RFC 7677's SCRAM-SHA-256 example, Brook's client against its
server for both mechanisms, and every refusal answered with Kafka's one message."""

from __future__ import annotations

import base64

import pytest

from brook.security.sasl_mechanism import SaslFailure
from brook.security.scram import (
    SCRAM_SHA_256,
    SCRAM_SHA_512,
    ScramClient,
    ScramCredential,
    ScramMechanism,
    ScramServer,
    new_credential,
)

# RFC 7677 section 3
SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
MESSAGE = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-256"
)


def rfc_server() -> ScramServer:
    cred = new_credential(SCRAM_SHA_256, "pencil", 4096, SALT)
    return ScramServer(SCRAM_SHA_256, {"user": cred}.get, nonce=SERVER_NONCE)


def test_rfc7677_exchange() -> None:
    server = rfc_server()
    first = server.evaluate(CLIENT_FIRST)
    assert first.challenge == SERVER_FIRST and first.user is None
    final = server.evaluate(CLIENT_FINAL)
    assert final.challenge == SERVER_FINAL and final.user == "user"


@pytest.mark.parametrize("mech", [SCRAM_SHA_256, SCRAM_SHA_512])
def test_client_and_server_agree(mech: ScramMechanism) -> None:
    creds = {"al,ice=": new_credential(mech, "s3cret", 8192)}
    server = ScramServer(mech, creds.get)
    client = ScramClient(mech, "al,ice=", "s3cret")
    challenge = server.evaluate(client.first()).challenge
    done = server.evaluate(client.final(challenge))
    assert done.user == "al,ice="
    client.verify(done.challenge)


def _refused(server: ScramServer, *tokens: bytes) -> SaslFailure:
    with pytest.raises(SaslFailure) as failure:
        for token in tokens:
            server.evaluate(token)
    return failure.value


@pytest.mark.parametrize(
    ("tokens", "reason"),
    [
        ([b"n,,n=nobody,r=abc"], "unknown user"),
        ([b"garbage"], "malformed"),
        ([b"n,a=admin,n=user,r=abc"], "authorization id"),
        ([b"n,,n=user,r=abc,tokenauth=true"], "extensions"),
        ([CLIENT_FIRST, CLIENT_FINAL.replace(b"p=dH", b"p=eH")], "invalid credentials"),
        ([CLIENT_FIRST, CLIENT_FINAL.replace(b"r=rOpr", b"r=xOpr")], "nonce"),
        ([CLIENT_FIRST, CLIENT_FINAL.replace(b"c=biws", b"c=eSws")], "channel binding"),
    ],
)
def test_refusals_share_kafkas_message(tokens: list[bytes], reason: str) -> None:
    failure = _refused(rfc_server(), *tokens)
    assert failure.message == MESSAGE
    assert reason in failure.reason
    assert "pencil" not in failure.reason


def test_too_few_iterations_is_refused() -> None:
    weak = new_credential(SCRAM_SHA_256, "pencil", 4096, SALT)
    weak = ScramCredential(weak.salt, weak.stored_key, weak.server_key, 1000)
    failure = _refused(ScramServer(SCRAM_SHA_256, {"user": weak}.get), CLIENT_FIRST)
    assert "fewer than 4096" in failure.reason
