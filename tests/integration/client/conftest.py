"""The brokers the client suites run against: every test using ``bootstrap`` runs on each."""

from __future__ import annotations

import pytest

BROKERS = ["tansu", "brook_session"]


@pytest.fixture(scope="module", params=BROKERS)
def bootstrap(request: pytest.FixtureRequest) -> str:
    """Bootstrap address of a running broker (Tansu, then a single-node Brook broker)."""
    value = request.getfixturevalue(request.param)
    return value if isinstance(value, str) else value.bootstrap
