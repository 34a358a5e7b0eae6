"""The client's TLS and SASL, from the settings librdkafka and Java clients take:
``security.protocol``; ``ssl.ca.location`` / ``ssl.truststore.*`` for the brokers' CA;
``ssl.certificate.location`` + ``ssl.key.location`` (librdkafka) or a PEM
``ssl.keystore.*`` (Java) for a client certificate; ``sasl.mechanism`` (Java) or
``sasl.mechanisms`` (librdkafka) with ``sasl.username`` / ``sasl.password`` or Java's
``sasl.jaas.config``. SASL runs right after the ApiVersions handshake (SaslHandshake v1, then
SaslAuthenticate), PLAIN or SCRAM-SHA-256/512.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brook.config.defs import ConfigError
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError
from brook.security.jaas import parse_jaas
from brook.security.scram import MECHANISMS as SCRAM_MECHANISMS
from brook.security.scram import ScramClient
from brook.security.tls import client_context

if TYPE_CHECKING:
    from .connection import BrokerConnection


@dataclass(frozen=True)
class ClientSecurity:
    tls: ssl.SSLContext | None
    check_hostname: bool
    mechanism: str | None
    username: str | None
    password: str | None

    @classmethod
    def from_config(cls, cfg: Mapping[str, Any]) -> ClientSecurity | None:
        protocol = str(cfg["security.protocol"]).upper()
        if protocol == "PLAINTEXT":
            return None
        tls: ssl.SSLContext | None = None
        check = False
        if protocol in ("SSL", "SASL_SSL"):
            tls, check = _tls(cfg)
        mechanism = username = password = None
        if protocol in ("SASL_PLAINTEXT", "SASL_SSL"):
            mechanism, username, password = _sasl(cfg)
        return cls(tls, check, mechanism, username, password)

    async def authenticate(self, conn: BrokerConnection) -> None:
        """SaslHandshake v1 and SaslAuthenticate until the mechanism is done; a refusal is a
        non-retriable KafkaError with the broker's message."""
        if self.mechanism is None:
            return
        assert self.username is not None and self.password is not None
        hs = await conn.send(ApiKey.SASL_HANDSHAKE, {"mechanism": self.mechanism}, version=1)
        if hs.error_code != Errors.NONE:
            raise KafkaError(
                hs.error_code,
                f"SASL mechanism {self.mechanism} refused by {conn.address}; it offers "
                f"{', '.join(hs.mechanisms) or 'none'}",
            )
        if self.mechanism == "PLAIN":
            token = b"\0" + self.username.encode() + b"\0" + self.password.encode()
            await _step(conn, token)
            return
        client = ScramClient(SCRAM_MECHANISMS[self.mechanism], self.username, self.password)
        server_first = await _step(conn, client.first())
        server_final = await _step(conn, client.final(server_first))
        try:
            client.verify(server_final)
        except ValueError as exc:
            raise KafkaError(Errors.SASL_AUTHENTICATION_FAILED, str(exc)) from None


async def _step(conn: BrokerConnection, token: bytes) -> bytes:
    version = conn.version_for(ApiKey.SASL_AUTHENTICATE, 0, 2)
    answer = await conn.send(ApiKey.SASL_AUTHENTICATE, {"auth_bytes": token}, version=version)
    if answer.error_code != Errors.NONE:
        raise KafkaError(answer.error_code, answer.error_message or "SASL authentication failed")
    return bytes(answer.auth_bytes)


def _tls(cfg: Mapping[str, Any]) -> tuple[ssl.SSLContext, bool]:
    settings = dict(cfg)
    if cfg.get("ssl.ca.location"):
        settings["ssl.truststore.type"] = "PEM"
        settings["ssl.truststore.location"] = cfg["ssl.ca.location"]
    ctx, check = client_context(settings.get, "client")
    cert, key = cfg.get("ssl.certificate.location"), cfg.get("ssl.key.location")
    if cert:
        try:
            ctx.load_cert_chain(cert, key or None, password=cfg.get("ssl.key.password"))
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"cannot load ssl.certificate.location / ssl.key.location: {exc}"
            ) from None
    return ctx, check


def _sasl(cfg: Mapping[str, Any]) -> tuple[str, str, str]:
    mechanism = str(cfg.get("sasl.mechanisms") or cfg["sasl.mechanism"]).upper()
    if mechanism != "PLAIN" and mechanism not in SCRAM_MECHANISMS:
        raise ConfigError(
            f"Invalid value {mechanism} for configuration sasl.mechanism: Brook's client "
            "speaks PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512"
        )
    username, password = cfg.get("sasl.username"), cfg.get("sasl.password")
    jaas = cfg.get("sasl.jaas.config")
    if jaas and not username:
        entry = parse_jaas(jaas)
        username, password = entry.username, entry.password
    if not username or password is None:
        raise ConfigError(
            f"SASL {mechanism} needs sasl.username and sasl.password (or sasl.jaas.config "
            'with username="..." password="...")'
        )
    return mechanism, username, password
