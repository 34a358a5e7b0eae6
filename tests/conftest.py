"""Fixtures shared by every suite."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support import BrookProcess, run_tansu


@pytest.fixture(scope="session")
def tansu() -> Iterator[str]:
    """Bootstrap address of a Tansu broker (Rust, memory storage) shared by the session."""
    with run_tansu() as bootstrap:
        yield bootstrap


@pytest.fixture(scope="session")
def brook_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrookProcess]:
    """One single-node Brook broker shared by the tests that only create their own topics."""
    with BrookProcess(tmp_path_factory.mktemp("brook") / "data") as broker:
        yield broker


@pytest.fixture
def brook(tmp_path: Path) -> Iterator[BrookProcess]:
    """A fresh single-node Brook broker of the test's own (it may be killed and restarted)."""
    with BrookProcess(tmp_path / "data") as broker:
        yield broker


@pytest.fixture
def unique_topic(request: pytest.FixtureRequest) -> str:
    import re
    import uuid

    base = re.sub(r"[^a-zA-Z0-9]+", "-", request.node.name)[:60].strip("-")
    return f"{base}-{uuid.uuid4().hex[:6]}"
