"""Kafka's ``sasl.jaas.config`` values: one JAAS login module entry,
``<class> <flag> key="value" key2=value2;``.

The broker reads its PLAIN users (``user_<name>="password"``) and its own inter-broker login
(``username`` / ``password``) from it; a client reads its login from it. Errors name the
problem and never quote a value (values are passwords).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from brook.config.defs import ConfigError

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(
    r'\s*(?:(?P<key>[A-Za-z0-9_.\-]+)\s*=\s*(?:"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<bare>[^\s;"]+))|(?P<end>;))'
)


@dataclass(frozen=True)
class JaasEntry:
    module: str
    flag: str
    options: dict[str, str] = field(default_factory=dict)

    @property
    def username(self) -> str | None:
        return self.options.get("username")

    @property
    def password(self) -> str | None:
        return self.options.get("password")

    def users(self) -> dict[str, str]:
        """PlainLoginModule's ``user_<name>="password"`` entries: the users PLAIN accepts."""
        return {k[len("user_") :]: v for k, v in self.options.items() if k.startswith("user_")}


def parse_jaas(text: str, where: str = "sasl.jaas.config") -> JaasEntry:
    """One login module entry; ConfigError (naming ``where``) when it is not well formed."""
    parts = text.strip().split(None, 2)
    if len(parts) < 2:
        raise ConfigError(f"Invalid {where}: expected '<LoginModule class> <flag> options;'")
    module, flag = parts[0], parts[1].rstrip(";")
    if flag.lower() not in _FLAGS:
        raise ConfigError(
            f"Invalid {where}: login module control flag must be one of {', '.join(_FLAGS)}"
        )
    rest = parts[2] if len(parts) > 2 else (";" if parts[1].endswith(";") else "")
    options: dict[str, str] = {}
    pos, ended = 0, False
    while pos < len(rest):
        if not rest[pos:].strip():
            break
        m = _TOKEN.match(rest, pos)
        if m is None or ended:
            raise ConfigError(
                f"Invalid {where}: expected key=\"value\" options ending with ';' (at "
                f"character {pos} of the options)"
            )
        if m.group("end"):
            ended = True
        else:
            value = m.group("quoted")
            value = re.sub(r"\\(.)", r"\1", value) if value is not None else m.group("bare")
            options[m.group("key")] = value
        pos = m.end()
    if not ended:
        raise ConfigError(f"Invalid {where}: the login module entry must end with ';'")
    return JaasEntry(module, flag.lower(), options)
