"""Fixtures for the storage engine tests: configs by keyword and logs in tmp_path."""

from __future__ import annotations

import contextlib
import os
import resource
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


@contextlib.contextmanager
def _descriptors_exhausted() -> Iterator[None]:
    """Every descriptor the process may open is taken (RLIMIT_NOFILE lowered to what is open
    plus a few, those few held on /dev/null), as when clients hold them all; each open then
    fails with EMFILE. The limit and the descriptors are given back on exit."""
    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    used = len(os.listdir("/proc/self/fd"))
    held: list[int] = []
    resource.setrlimit(resource.RLIMIT_NOFILE, (used + 8, limits[1]))
    try:
        while True:
            try:
                held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                break
        yield
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)


@pytest.fixture
def out_of_descriptors() -> Callable[[], contextlib.AbstractContextManager[None]]:
    """A context in which the process has no descriptor left (see _descriptors_exhausted)."""
    return _descriptors_exhausted
