"""How this node logs in to another node's listener (Raft, the controller, replication):
TLS with the listener's own stores, then SASL with the mechanism Kafka names for that link
(``sasl.mechanism.controller.protocol`` for the controller listener,
``sasl.mechanism.inter.broker.protocol`` for the inter-broker one) and the ``username`` /
``password`` of the listener's JAAS configuration, as Kafka's brokers log in.

``sasl_login`` is the exchange itself (SaslHandshake v1, SaslAuthenticate v2, PLAIN or SCRAM),
shared with Brook's client.
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from brook.config.defs import Config, ConfigError
from brook.config.server import (
    SASL_PROTOCOLS,
    TLS_PROTOCOLS,
    jaas_config,
    listener_value,
    security_protocols,
)
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from .jaas import parse_jaas
from .scram import MECHANISMS as SCRAM_MECHANISMS
from .scram import ScramClient
from .tls import client_context

# (api_key, version, request dict) -> decoded response
Request = Callable[[int, int, dict[str, Any]], Awaitable[Any]]


@dataclass(frozen=True)
class NodeSecurity:
    tls: ssl.SSLContext | None
    check_hostname: bool
    mechanism: str | None = None
    username: str | None = None
    password: str | None = None

    async def login(self, request: Request, address: str) -> None:
        if self.mechanism is not None:
            assert self.username is not None and self.password is not None
            await sasl_login(request, self.mechanism, self.username, self.password, address)


async def sasl_login(
    request: Request, mechanism: str, username: str, password: str, address: str
) -> None:
    """SaslHandshake v1 then SaslAuthenticate v2 until the mechanism is done; a refusal
    raises KafkaError with the peer's code and message."""
    hs = await request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    if hs.error_code != Errors.NONE:
        raise KafkaError(
            hs.error_code,
            f"SASL mechanism {mechanism} refused by {address}; it offers "
            f"{', '.join(hs.mechanisms) or 'none'}",
        )

    async def step(token: bytes) -> bytes:
        answer = await request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})
        if answer.error_code != Errors.NONE:
            raise KafkaError(
                answer.error_code, answer.error_message or "SASL authentication failed"
            )
        return bytes(answer.auth_bytes)

    if mechanism == "PLAIN":
        await step(b"\0" + username.encode() + b"\0" + password.encode())
        return
    client = ScramClient(SCRAM_MECHANISMS[mechanism], username, password)
    server_first = await step(client.first())
    server_final = await step(client.final(server_first))
    try:
        client.verify(server_final)
    except ValueError as exc:
        raise KafkaError(Errors.SASL_AUTHENTICATION_FAILED, str(exc)) from None


def node_security(cfg: Config, listener: str, *, controller: bool) -> NodeSecurity | None:
    """How this node connects to other nodes' ``listener`` (None: plain text)."""
    protocol = security_protocols(cfg).get(listener.upper(), "PLAINTEXT")
    if protocol == "PLAINTEXT":
        return None
    tls: ssl.SSLContext | None = None
    check = False
    if protocol in TLS_PROTOCOLS:
        tls, check = client_context(
            lambda key: listener_value(cfg, listener, key), f"listener {listener}"
        )
    if protocol not in SASL_PROTOCOLS:
        return NodeSecurity(tls, check)
    key = (
        "sasl.mechanism.controller.protocol"
        if controller
        else ("sasl.mechanism.inter.broker.protocol")
    )
    mechanism = str(cfg[key]).upper()
    text = jaas_config(cfg, listener, mechanism)
    entry = (
        parse_jaas(text, f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config")
        if text
        else None
    )
    if entry is None or not entry.username or entry.password is None:
        raise ConfigError(
            f"listener {listener} uses {protocol}: this node logs in to other nodes with {key}="
            f"{mechanism} and the username and password of "
            f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
        )
    return NodeSecurity(tls, check, mechanism, entry.username, entry.password)
