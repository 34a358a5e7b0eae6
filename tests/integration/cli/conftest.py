"""Fixtures of the tool suites."""

from __future__ import annotations

import pytest
from cli_support import Tool, tool_runner


@pytest.fixture
def tool(capsys: pytest.CaptureFixture[str]) -> Tool:
    return tool_runner(capsys)
