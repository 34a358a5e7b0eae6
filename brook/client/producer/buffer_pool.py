"""``buffer.memory`` accounting: how many bytes of batches the producer may hold unsent.

Each new batch reserves max(batch.size, its first record) and gives it back when the batch
completes (Java's BufferPool, without the pooled ByteBuffers: Python allocates for us). A
sending thread that finds the pool empty blocks up to ``max.block.ms``; an asyncio sender
awaits instead, so the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable

from .errors import BufferExhaustedError

__all__ = ["BufferPool"]


class BufferPool:
    def __init__(
        self,
        total: int,
        on_wait_ns: Callable[[float], None] | None = None,
        on_exhausted: Callable[[], None] | None = None,
    ) -> None:
        self.total = total
        self._available = total
        self._cond = threading.Condition(threading.Lock())
        self._async_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._waiting = 0
        self.on_wait_ns = on_wait_ns
        self.on_exhausted = on_exhausted
        self.closed = False

    @property
    def available(self) -> int:
        return self._available

    @property
    def queued(self) -> int:
        """Senders waiting for memory; the accumulator then sends batches without lingering."""
        return self._waiting

    def try_allocate(self, size: int) -> bool:
        with self._cond:
            if self._available >= size and not self._waiting:
                self._available -= size
                return True
            return False

    def allocate(self, size: int, max_block_ms: float, configured_ms: float | None = None) -> None:
        """Reserve ``size`` bytes, blocking the calling thread up to ``max_block_ms``
        (what is left of ``configured_ms``, the max.block.ms the error names)."""
        self._check_size(size)
        start = time.monotonic_ns()
        deadline = time.monotonic() + max_block_ms / 1000
        with self._cond:
            self._waiting += 1
            try:
                while self._available < size:
                    if self.closed:
                        raise BufferExhaustedError("the producer was closed while send() waited")
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise self._timeout(configured_ms or max_block_ms)
                    self._cond.wait(left)
                self._available -= size
            finally:
                self._waiting -= 1
        self._record_wait(start)

    async def allocate_async(
        self, size: int, max_block_ms: float, configured_ms: float | None = None
    ) -> None:
        """As :meth:`allocate`, awaiting on the running loop instead of blocking it."""
        self._check_size(size)
        loop = asyncio.get_running_loop()
        start = time.monotonic_ns()
        deadline = loop.time() + max_block_ms / 1000
        while True:
            with self._cond:
                if self._available >= size:
                    self._available -= size
                    break
                if self.closed:
                    raise BufferExhaustedError("the producer was closed while send() waited")
                waiter: asyncio.Future[None] = loop.create_future()
                self._async_waiters.append((loop, waiter))
                self._waiting += 1
            try:
                left = deadline - loop.time()
                if left <= 0:
                    raise self._timeout(configured_ms or max_block_ms)
                try:
                    async with asyncio.timeout(left):
                        await waiter
                except TimeoutError:
                    raise self._timeout(configured_ms or max_block_ms) from None
            finally:
                with self._cond:
                    self._waiting -= 1
        self._record_wait(start)

    def deallocate(self, size: int) -> None:
        if size <= 0:
            return
        with self._cond:
            self._available += size
            self._cond.notify_all()
            waiters, self._async_waiters = self._async_waiters, []
        for loop, waiter in waiters:
            loop.call_soon_threadsafe(_wake, waiter)

    def close(self) -> None:
        with self._cond:
            self.closed = True
            self._cond.notify_all()
            waiters, self._async_waiters = self._async_waiters, []
        for loop, waiter in waiters:
            loop.call_soon_threadsafe(_wake, waiter)

    def _check_size(self, size: int) -> None:
        if size > self.total:
            raise BufferExhaustedError(
                f"a batch of {size} bytes can never fit in buffer.memory ({self.total})"
            )

    def _timeout(self, max_block_ms: float) -> BufferExhaustedError:
        if self.on_exhausted is not None:
            self.on_exhausted()
        return BufferExhaustedError(
            f"Failed to allocate memory within the configured max blocking time "
            f"{int(max_block_ms)} ms (buffer.memory={self.total} bytes are all held by "
            "unsent batches)"
        )

    def _record_wait(self, start_ns: int) -> None:
        if self.on_wait_ns is not None:
            self.on_wait_ns(time.monotonic_ns() - start_ns)


def _wake(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)
