"""metrics.prometheus.listener: off unless set, http://host:port only, refused naming the
key otherwise."""

from __future__ import annotations

import pytest

from brook.config.defs import ConfigError
from brook.config.server import METRICS_LISTENER_KEY, parse_metrics_listener, parse_server_config


def test_off_by_default() -> None:
    assert parse_server_config({})[METRICS_LISTENER_KEY] is None
    assert parse_metrics_listener(METRICS_LISTENER_KEY, "") == ("", 0)


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("http://127.0.0.1:9404", ("127.0.0.1", 9404)),
        ("HTTP://localhost:0", ("localhost", 0)),
        ("http://0.0.0.0:9404", ("0.0.0.0", 9404)),
        ("http://[::1]:9404", ("::1", 9404)),
    ],
)
def test_http_host_port_is_accepted(text: str, address: tuple[str, int]) -> None:
    parse_server_config({METRICS_LISTENER_KEY: text})
    assert parse_metrics_listener(METRICS_LISTENER_KEY, text) == address


@pytest.mark.parametrize(
    "text",
    [
        "127.0.0.1:9404",
        "https://127.0.0.1:9404",
        "http://127.0.0.1",
        "http://:9404",
        "http://127.0.0.1:9404/metrics",
        "http://127.0.0.1:port",
        "http://127.0.0.1:65536",
    ],
)
def test_anything_else_is_refused_naming_the_key(text: str) -> None:
    with pytest.raises(ConfigError, match=METRICS_LISTENER_KEY.replace(".", r"\.")) as err:
        parse_server_config({METRICS_LISTENER_KEY: text})
    assert text in str(err.value)
