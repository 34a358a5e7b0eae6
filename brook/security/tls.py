"""TLS contexts from Kafka's PEM settings (KIP-651), for listeners and for connections this
node makes to other nodes.

A key store is a PEM file with the private key and the certificate chain
(``ssl.keystore.location``) or the two inline (``ssl.keystore.certificate.chain`` +
``ssl.keystore.key``); a trust store is a PEM file of CA certificates
(``ssl.truststore.location``) or the same inline (``ssl.truststore.certificates``). Python's
``ssl`` loads a certificate chain only from a file, so inline PEM goes through a private
temporary file that is removed as soon as it is loaded.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Callable
from typing import Any

from brook.config.defs import ConfigError
from brook.config.security import Lookup, check_settings, has_keystore, has_truststore

from .dn import subject_of
from .principal import ANONYMOUS, USER_TYPE, KafkaPrincipal

_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}


def _load_key_store(ctx: ssl.SSLContext, get: Lookup) -> None:
    password = get("ssl.key.password")
    location = get("ssl.keystore.location")
    if location:
        ctx.load_cert_chain(location, password=password)
        return
    chain, key = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    with tempfile.TemporaryDirectory(prefix="brook-tls-") as tmp:
        path = os.path.join(tmp, "keystore.pem")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(f"{key.strip()}\n{chain.strip()}\n")
        ctx.load_cert_chain(path, password=password)


def _load_trust_store(ctx: ssl.SSLContext, get: Lookup) -> None:
    location = get("ssl.truststore.location")
    if location:
        ctx.load_verify_locations(cafile=location)
    else:
        ctx.load_verify_locations(cadata=get("ssl.truststore.certificates"))


def _versions(ctx: ssl.SSLContext, get: Lookup, cap: str | None) -> None:
    enabled = sorted(_VERSIONS[v] for v in get("ssl.enabled.protocols"))
    if not enabled:
        raise ConfigError("ssl.enabled.protocols must name at least one TLS version")
    ctx.minimum_version = enabled[0]
    ctx.maximum_version = min(enabled[-1], _VERSIONS[cap]) if cap else enabled[-1]
    if ctx.minimum_version > ctx.maximum_version:
        raise ConfigError(f"ssl.protocol={cap} is below every version of ssl.enabled.protocols")
    ciphers = get("ssl.cipher.suites")
    if ciphers:
        try:
            ctx.set_ciphers(":".join(ciphers))
        except ssl.SSLError:
            raise ConfigError(
                f"Invalid value {','.join(ciphers)} for configuration ssl.cipher.suites: "
                "no cipher suite OpenSSL knows"
            ) from None


def _build(make: Callable[[], ssl.SSLContext], get: Lookup, where: str) -> ssl.SSLContext:
    ctx = make()
    try:
        if has_keystore(get):
            _load_key_store(ctx, get)
        if has_truststore(get):
            _load_trust_store(ctx, get)
    except (OSError, ssl.SSLError, ValueError) as exc:
        # The message names the file or the PEM problem, never a password.
        raise ConfigError(f"{where}: cannot load the TLS key or trust store: {exc}") from None
    return ctx


def server_context(get: Lookup, where: str) -> ssl.SSLContext:
    """The context of a TLS listener: its key store, the versions of
    ssl.enabled.protocols, client certificates as ssl.client.auth says."""
    check_settings(get, where, server=True)

    def make() -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        _versions(ctx, get, None)
        ctx.verify_mode = _CLIENT_AUTH[get("ssl.client.auth")]
        return ctx

    return _build(make, get, where)


def client_context(get: Lookup, where: str) -> tuple[ssl.SSLContext, bool]:
    """The context of a connection to a TLS listener (another node's, or a client's), and
    whether the peer's host name is checked (ssl.endpoint.identification.algorithm)."""
    check_settings(get, where, server=False)
    check_host = str(get("ssl.endpoint.identification.algorithm") or "").lower() == "https"

    def make() -> ssl.SSLContext:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = check_host
        ctx.verify_mode = ssl.CERT_REQUIRED
        _versions(ctx, get, get("ssl.protocol"))
        if not has_truststore(get):
            ctx.load_default_certs()
        return ctx

    return _build(make, get, where), check_host


def peer_principal(ssl_object: Any) -> KafkaPrincipal:
    """The principal of a TLS peer: its certificate's subject, or ANONYMOUS without one."""
    der = ssl_object.getpeercert(binary_form=True) if ssl_object is not None else None
    if not der:
        return ANONYMOUS
    return KafkaPrincipal(USER_TYPE, subject_of(der))
