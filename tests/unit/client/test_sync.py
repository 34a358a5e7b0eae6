"""The shared background loop of the synchronous facades."""

from __future__ import annotations

import asyncio
import threading

import pytest

from brook.client import _sync


async def where() -> str:
    await asyncio.sleep(0)
    return threading.current_thread().name


async def fail() -> None:
    raise ValueError("boom")


def test_run_uses_one_background_loop() -> None:
    assert _sync.run(where()) == "brook-client-loop"
    assert _sync.get_loop() is _sync.get_loop()
    assert _sync.submit(where()).result(5) == "brook-client-loop"


def test_errors_and_timeouts_reach_the_caller() -> None:
    with pytest.raises(ValueError, match="boom"):
        _sync.run(fail())
    with pytest.raises(TimeoutError):
        _sync.run(asyncio.sleep(5), timeout=0.05)


def test_calling_from_the_loop_thread_is_refused() -> None:
    async def nested() -> None:
        _sync.run(where())

    with pytest.raises(RuntimeError, match="Async"):
        _sync.run(nested())
