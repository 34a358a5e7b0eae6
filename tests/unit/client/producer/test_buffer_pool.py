"""buffer.memory: reservations block up to max.block.ms (threads) or await (asyncio), are
woken by frees, and time out with a clear error."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from brook.client.producer.buffer_pool import BufferPool
from brook.client.producer.errors import BufferExhaustedError


def test_allocate_and_free() -> None:
    pool = BufferPool(100)
    assert pool.try_allocate(60) and not pool.try_allocate(60)
    pool.deallocate(60)
    assert pool.available == 100


def test_blocked_thread_is_woken_by_a_free() -> None:
    waits: list[float] = []
    pool = BufferPool(100, on_wait_ns=waits.append)
    assert pool.try_allocate(100)
    threading.Timer(0.1, pool.deallocate, args=(50,)).start()
    start = time.monotonic()
    pool.allocate(50, 5000)
    assert 0.05 < time.monotonic() - start < 2
    assert pool.available == 0 and waits and waits[0] > 50_000_000


def test_blocking_times_out_naming_max_block_ms() -> None:
    pool = BufferPool(100)
    assert pool.try_allocate(100)
    with pytest.raises(BufferExhaustedError, match="max blocking time 50 ms") as info:
        pool.allocate(10, 50)
    assert info.value.name == "REQUEST_TIMED_OUT"
    with pytest.raises(BufferExhaustedError, match="can never fit"):
        pool.allocate(101, 50)


def test_async_waiter_is_woken_from_another_thread() -> None:
    async def main() -> None:
        pool = BufferPool(100)
        assert pool.try_allocate(100)
        threading.Timer(0.1, pool.deallocate, args=(100,)).start()
        await pool.allocate_async(80, 5000)
        assert pool.available == 20
        with pytest.raises(BufferExhaustedError):
            await pool.allocate_async(80, 50)

    asyncio.run(main())
