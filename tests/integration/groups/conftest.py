"""Brokers for the group suites: short group timeouts, a small ``__consumer_offsets``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from group_support import OVERRIDES
from support import BrookProcess


@pytest.fixture(scope="session")
def groups_brook(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrookProcess]:
    """One broker shared by the group tests that do not restart it."""
    with BrookProcess(tmp_path_factory.mktemp("groups") / "data", overrides=OVERRIDES) as broker:
        yield broker


@pytest.fixture
def own_groups_brook(tmp_path: Path) -> Iterator[BrookProcess]:
    """A broker of the test's own, to restart or kill."""
    with BrookProcess(tmp_path / "data", overrides=OVERRIDES) as broker:
        yield broker
