"""The authorizer's keys: Kafka's names and defaults, and bad values refused naming the key."""

from __future__ import annotations

import pytest

from brook.config.defs import ConfigError
from brook.config.server import parse_server_config


def test_defaults_are_kafkas_no_authorizer() -> None:
    cfg = parse_server_config({})
    assert cfg["authorizer.class.name"] == ""
    assert cfg["super.users"] == ""
    assert cfg["allow.everyone.if.no.acl.found"] is False


@pytest.mark.parametrize(
    "name",
    [
        "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "brook.security.authorizer.StandardAuthorizer",
    ],
)
def test_kafkas_and_brooks_class_names_are_accepted(name: str) -> None:
    cfg = parse_server_config({"authorizer.class.name": name, "super.users": "User:a;User:b"})
    assert cfg["authorizer.class.name"] == name


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer"),
        ("super.users", "User:admin;alice"),
        ("allow.everyone.if.no.acl.found", "maybe"),
        ("brook.test.listener.principals", "PLAINTEXT"),
        ("brook.test.listener.principals", "PLAINTEXT=alice"),
    ],
)
def test_bad_values_name_the_key(key: str, value: str) -> None:
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        parse_server_config({key: value})
