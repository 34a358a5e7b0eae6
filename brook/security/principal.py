"""The principal a request is made by, as Kafka names it (``User:alice``).

Kafka's ``KafkaPrincipal``: a type (always ``User`` for the built-in builders) and a name.
An unauthenticated PLAINTEXT connection is ``User:ANONYMOUS``; a TLS client certificate gives
the certificate's subject (the distinguished name); SASL gives the authenticated user name.
Every connection starts as ANONYMOUS and its authentication step replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass

USER_TYPE = "User"


@dataclass(frozen=True, slots=True)
class KafkaPrincipal:
    principal_type: str
    name: str

    def __str__(self) -> str:
        return f"{self.principal_type}:{self.name}"

    @classmethod
    def parse(cls, text: str) -> KafkaPrincipal:
        """``User:alice`` -> KafkaPrincipal("User", "alice"); the name may contain colons."""
        kind, sep, name = text.partition(":")
        if not sep or not kind or not name:
            raise ValueError(f"expected a principal of the form Type:name, got {text!r}")
        return cls(kind, name)


ANONYMOUS = KafkaPrincipal(USER_TYPE, "ANONYMOUS")
