"""sasl.jaas.config values as Kafka writes them."""

from __future__ import annotations

import pytest

from brook.config.defs import ConfigError
from brook.security.jaas import PLAIN_LOGIN_MODULE, parse_jaas


def test_kafkas_plain_example() -> None:
    entry = parse_jaas(
        f'{PLAIN_LOGIN_MODULE} required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_alice="alice-secret";'
    )
    assert entry.module == PLAIN_LOGIN_MODULE and entry.flag == "required"
    assert (entry.username, entry.password) == ("admin", "admin-secret")
    assert entry.users() == {"admin": "admin-secret", "alice": "alice-secret"}


def test_escapes_bare_values_and_line_breaks() -> None:
    entry = parse_jaas(f'{PLAIN_LOGIN_MODULE} required\n  username=bob\n  password="a \\"q\\" ;x";')
    assert (entry.username, entry.password) == ("bob", 'a "q" ;x')


@pytest.mark.parametrize(
    "text",
    [
        "PlainLoginModule",
        f'{PLAIN_LOGIN_MODULE} mandatory username="a";',
        f'{PLAIN_LOGIN_MODULE} required username="a"',
        f'{PLAIN_LOGIN_MODULE} required username="a"; extra="b";',
        f'{PLAIN_LOGIN_MODULE} required username "a";',
    ],
)
def test_malformed_entries_are_refused_without_quoting_values(text: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_jaas(text, "listener.name.x.plain.sasl.jaas.config")
    assert "listener.name.x.plain.sasl.jaas.config" in str(err.value)
    assert '"a"' not in str(err.value)
