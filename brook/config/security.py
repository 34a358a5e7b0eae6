"""The TLS and SASL settings of listeners, with Kafka's names and defaults.

They are part of the broker's table (``server.properties``) and may be given per listener as
``listener.name.<listener>.<key>`` (Kafka's ``valuesWithPrefixOverride``: the prefixed value
wins, the unprefixed one is the fallback). JAAS configurations are given per listener and
mechanism: ``listener.name.<listener>.<mechanism>.sasl.jaas.config``. Only Kafka's PEM
stores (KIP-651) are read; a JKS or PKCS12 store is refused by name rather than ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .defs import ConfigError, ConfigKey, Type, at_least, one_of

# A setting's value as one listener (or one client) sees it.
Lookup = Callable[[str], Any]

_K = ConfigKey

TLS_VERSIONS = ("TLSv1.2", "TLSv1.3")
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

SSL_KEYS = [
    _K(
        "ssl.protocol",
        Type.STRING,
        "TLSv1.3",
        one_of(*TLS_VERSIONS),
        "Highest TLS version this node offers when it connects to another node; listeners "
        "accept every version in ssl.enabled.protocols",
    ),
    _K(
        "ssl.enabled.protocols",
        Type.LIST,
        list(TLS_VERSIONS),
        one_of(*TLS_VERSIONS),
        "TLS versions a listener accepts (and this node offers to others)",
    ),
    _K(
        "ssl.keystore.type",
        Type.STRING,
        "JKS",
        None,
        "Format of the key store; Brook reads PEM only (KIP-651), set it to PEM",
    ),
    _K(
        "ssl.keystore.location",
        Type.STRING,
        None,
        None,
        "PEM file holding this node's private key and its certificate chain",
    ),
    _K(
        "ssl.keystore.password",
        Type.PASSWORD,
        None,
        None,
        "Not used with PEM stores (as Kafka, only ssl.key.password may be given)",
    ),
    _K(
        "ssl.keystore.certificate.chain",
        Type.PASSWORD,
        None,
        None,
        "This node's certificate chain in PEM, inline (instead of ssl.keystore.location)",
    ),
    _K(
        "ssl.keystore.key",
        Type.PASSWORD,
        None,
        None,
        "This node's private key in PEM (PKCS#8, possibly encrypted), inline",
    ),
    _K(
        "ssl.key.password",
        Type.PASSWORD,
        None,
        None,
        "Password of an encrypted private key",
    ),
    _K(
        "ssl.truststore.type",
        Type.STRING,
        "JKS",
        None,
        "Format of the trust store; Brook reads PEM only (KIP-651), set it to PEM",
    ),
    _K(
        "ssl.truststore.location",
        Type.STRING,
        None,
        None,
        "PEM file of the certificate authorities trusted to sign peers' certificates",
    ),
    _K(
        "ssl.truststore.password",
        Type.PASSWORD,
        None,
        None,
        "Not used with PEM stores",
    ),
    _K(
        "ssl.truststore.certificates",
        Type.PASSWORD,
        None,
        None,
        "Trusted certificate authorities in PEM, inline (instead of ssl.truststore.location)",
    ),
    _K(
        "ssl.client.auth",
        Type.STRING,
        "none",
        one_of("required", "requested", "none"),
        "Whether a listener asks clients for a certificate: required (mTLS, refused "
        "without a trusted one), requested (checked when given) or none; the principal of "
        "a client with a certificate is its subject (User:CN=...,O=...)",
    ),
    _K(
        "ssl.endpoint.identification.algorithm",
        Type.STRING,
        "https",
        None,
        "https: this node checks the host name of the nodes it connects to against their "
        "certificates; empty: it does not",
    ),
    _K(
        "ssl.principal.mapping.rules",
        Type.STRING,
        "DEFAULT",
        one_of("DEFAULT"),
        "How a certificate's subject becomes a principal; DEFAULT (the subject as RFC 2253 "
        "renders it) is the only rule Brook applies",
    ),
    _K(
        "ssl.cipher.suites",
        Type.LIST,
        [],
        None,
        "Cipher suites in OpenSSL's names (empty: OpenSSL's defaults)",
    ),
    *(
        _K(name, Type.STRING, default, None, "Java's TLS provider settings; no effect", inert=True)
        for name, default in [
            ("ssl.keymanager.algorithm", "SunX509"),
            ("ssl.trustmanager.algorithm", "PKIX"),
            ("ssl.secure.random.implementation", None),
            ("ssl.provider", None),
            ("ssl.engine.factory.class", None),
        ]
    ),
]


def _check_pem(get: Lookup, store: str) -> None:
    kind = get(f"ssl.{store}.type")
    if str(kind).upper() != "PEM":
        raise ConfigError(
            f"Invalid value {kind} for configuration ssl.{store}.type: Brook reads PEM "
            f"stores only (KIP-651); set ssl.{store}.type=PEM"
        )
    if get(f"ssl.{store}.password") is not None:
        raise ConfigError(
            f"ssl.{store}.password cannot be specified with PEM format, only key password "
            "may be specified (ssl.key.password)"
        )


def has_keystore(get: Lookup) -> bool:
    return bool(get("ssl.keystore.location") or get("ssl.keystore.certificate.chain"))


def has_truststore(get: Lookup) -> bool:
    return bool(get("ssl.truststore.location") or get("ssl.truststore.certificates"))


def check_settings(get: Lookup, where: str, *, server: bool) -> None:
    """The checks Kafka makes when it builds a listener's (or a client's) TLS engine, with
    ``where`` naming the listener in the message; raises ConfigError."""
    if server and not has_keystore(get):
        raise ConfigError(
            f"{where} uses TLS and has no key store: set ssl.keystore.location (a PEM file "
            "with the key and certificate chain) or ssl.keystore.certificate.chain and "
            "ssl.keystore.key, with ssl.keystore.type=PEM"
        )
    if has_keystore(get):
        _check_pem(get, "keystore")
        if get("ssl.keystore.location") and get("ssl.keystore.certificate.chain"):
            raise ConfigError(
                f"{where}: set ssl.keystore.location or ssl.keystore.certificate.chain, not both"
            )
        if bool(get("ssl.keystore.certificate.chain")) != bool(get("ssl.keystore.key")):
            raise ConfigError(
                f"{where}: ssl.keystore.certificate.chain and ssl.keystore.key go together"
            )
    if has_truststore(get):
        _check_pem(get, "truststore")
        if get("ssl.truststore.location") and get("ssl.truststore.certificates"):
            raise ConfigError(
                f"{where}: set ssl.truststore.location or ssl.truststore.certificates, not both"
            )
    if server and get("ssl.client.auth") != "none" and not has_truststore(get):
        raise ConfigError(
            f"{where}: ssl.client.auth={get('ssl.client.auth')} needs a trust store to check "
            "client certificates (ssl.truststore.location or ssl.truststore.certificates)"
        )


SASL_KEYS = [
    _K(
        "sasl.enabled.mechanisms",
        Type.LIST,
        ["GSSAPI"],
        None,
        "SASL mechanisms a SASL listener offers; Brook serves PLAIN, SCRAM-SHA-256 and "
        "SCRAM-SHA-512 (Kafka's default, GSSAPI, is refused on a SASL listener)",
    ),
    _K(
        "sasl.mechanism.inter.broker.protocol",
        Type.STRING,
        "GSSAPI",
        None,
        "SASL mechanism this node uses on the inter-broker listener",
    ),
    _K(
        "sasl.mechanism.controller.protocol",
        Type.STRING,
        "GSSAPI",
        None,
        "SASL mechanism this node uses on the controller listener",
    ),
    _K(
        "security.inter.broker.protocol",
        Type.STRING,
        "PLAINTEXT",
        one_of(*SECURITY_PROTOCOLS),
        "Security protocol of the inter-broker listener: the listener of that name, unless "
        "inter.broker.listener.name is set (setting both is refused, as in Kafka)",
    ),
    _K(
        "sasl.jaas.config",
        Type.PASSWORD,
        None,
        None,
        "A JAAS login configuration; on a broker it is given per listener and mechanism as "
        "listener.name.<listener>.<mechanism>.sasl.jaas.config, e.g. PlainLoginModule with "
        'username="..." password="..." (what this node logs in with) and user_<name>="..." '
        "entries (the users PLAIN accepts)",
    ),
    _K(
        "sasl.server.max.receive.size",
        Type.INT,
        524288,
        None,
        "Largest frame a client may send before it has authenticated; a larger one closes "
        "the connection",
    ),
    _K(
        "connection.failed.authentication.delay.ms",
        Type.INT,
        100,
        at_least(0),
        "How long a connection whose authentication failed stays open after the failure is "
        "answered (the client reads the answer before the close)",
    ),
    _K(
        "connections.max.reauth.ms",
        Type.LONG,
        0,
        None,
        "Kafka's re-authentication (KIP-368); Brook answers a session lifetime of 0 (no "
        "re-authentication) whatever it is",
        inert=True,
    ),
    *(
        _K(name, t, default, None, "Kerberos and OAUTHBEARER settings; no effect", inert=True)
        for name, t, default in [
            ("sasl.kerberos.service.name", Type.STRING, None),
            ("sasl.login.callback.handler.class", Type.CLASS, None),
            ("sasl.server.callback.handler.class", Type.CLASS, None),
            ("sasl.login.class", Type.CLASS, None),
        ]
    ),
]
