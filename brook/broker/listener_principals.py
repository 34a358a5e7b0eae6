"""Test only: ``brook.test.listener.principals`` gives every connection of a listener a
named principal instead of User:ANONYMOUS.

Until SASL and TLS authenticate connections, this is how tests make requests as two
different principals against one node (two listeners, two principals). It is read once at
start and applied when a connection is made; authentication replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from brook.config.server import TEST_PRINCIPALS_KEY
from brook.security.principal import KafkaPrincipal


def listener_principals(config: Mapping[str, Any]) -> dict[str, KafkaPrincipal]:
    """Listener name (upper case, as listeners are named) -> its connections' principal."""
    out: dict[str, KafkaPrincipal] = {}
    for entry in config[TEST_PRINCIPALS_KEY] or []:
        listener, _, principal = entry.partition("=")
        out[listener.strip().upper()] = KafkaPrincipal.parse(principal.strip())
    return out
