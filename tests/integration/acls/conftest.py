"""The ``secured`` fixture: a broker with the authorizer on (see acl_support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from acl_support import Secured, secured_overrides
from support import BrookProcess, free_port


@pytest.fixture
def secured(tmp_path: Path) -> Iterator[Secured]:
    admin_port, alice_port = free_port(), free_port()
    overrides = secured_overrides(admin_port, alice_port)
    with BrookProcess(tmp_path / "data", overrides, port=admin_port) as broker:
        yield Secured(broker, f"127.0.0.1:{admin_port}", f"127.0.0.1:{alice_port}")
