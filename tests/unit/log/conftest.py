"""Fixtures for the storage engine tests: configs by keyword and logs in tmp_path."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from brook.log.config import LogConfig
from brook.log.log import PartitionLog


def _config(**overrides: Any) -> LogConfig:
    """A LogConfig from keyword overrides: ``segment_bytes=1000`` sets ``segment.bytes``."""
    return LogConfig.from_topic_config({k.replace("_", "."): v for k, v in overrides.items()})


@pytest.fixture
def make_config() -> Callable[..., LogConfig]:
    return _config


@pytest.fixture
def open_log(tmp_path: Path) -> Iterator[Callable[..., PartitionLog]]:
    """Open (or reopen) a partition log under tmp_path; files are closed at teardown."""
    opened: list[PartitionLog] = []

    def factory(
        name: str = "topic-0", config: LogConfig | None = None, **kwargs: Any
    ) -> PartitionLog:
        plog = PartitionLog.open(tmp_path / name, config or _config(), **kwargs)
        opened.append(plog)
        return plog

    yield factory
    for plog in opened:
        plog.close_files()
