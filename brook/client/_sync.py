"""One background event-loop thread shared by the synchronous client facades.

``Producer``, ``Consumer`` and ``Admin`` run their asyncio cores on this loop and block the
calling thread on the result; uvloop is used when it is installed.

At interpreter exit the clients still open get their say first (``on_exit``: a producer
delivers what it holds, a consumer stops without committing), then whatever still runs on
the loop is cancelled and awaited before the loop stops, so exiting without ``close()`` is
quiet instead of printing "Task was destroyed but it is pending!" for each task.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import contextlib
import itertools
import os
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

__all__ = ["call_soon", "forget_on_exit", "get_loop", "on_exit", "run", "submit"]

T = TypeVar("T")


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class _LoopThread:
    def __init__(self) -> None:
        self.pid = os.getpid()
        self.loop = _new_loop()
        self._started = threading.Event()
        self.thread = threading.Thread(target=self._main, name="brook-client-loop", daemon=True)
        self.thread.start()
        self._started.wait()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.call_soon(self._started.set)
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


_lock = threading.Lock()
_current: _LoopThread | None = None


def _loop_thread() -> _LoopThread:
    global _current
    current = _current
    # After fork() the child has the object but not the thread: start a new one.
    if current is not None and current.pid == os.getpid() and current.thread.is_alive():
        return current
    with _lock:
        if _current is None or _current.pid != os.getpid() or not _current.thread.is_alive():
            _current = _LoopThread()
        return _current


def get_loop() -> asyncio.AbstractEventLoop:
    """The shared loop (started on first use)."""
    return _loop_thread().loop


def submit(coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Schedule ``coro`` on the shared loop; returns a thread-safe future."""
    return asyncio.run_coroutine_threadsafe(coro, _loop_thread().loop)


def run(coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
    """Run ``coro`` on the shared loop and block until it finishes.

    Raises RuntimeError when called from the loop thread itself (that would deadlock); code
    running there must use the Async* classes.
    """
    lt = _loop_thread()
    if threading.current_thread() is lt.thread:
        coro.close()
        raise RuntimeError(
            "a synchronous Brook client method was called on the client's own event loop; "
            "use the Async* client there"
        )
    future = asyncio.run_coroutine_threadsafe(coro, lt.loop)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"operation did not finish within {timeout} s") from None
    except BaseException:
        # Ctrl-C in the caller: do not leave the coroutine running on the loop.
        future.cancel()
        raise


def call_soon(callback: Callable[..., Any], *args: Any) -> None:
    """Run ``callback(*args)`` on the shared loop, from any thread."""
    lt = _loop_thread()
    lt.loop.call_soon_threadsafe(callback, *args)


# What each open client does at exit, by the key its facade got from on_exit().
ExitHook = Callable[[], Coroutine[Any, Any, Any]]
_exit_hooks: dict[int, tuple[int, ExitHook]] = {}
_exit_keys = itertools.count()
# Exit hooks bound their own work; this only keeps a misbehaving one from hanging the exit.
_EXIT_LIMIT = 60.0


def on_exit(hook: ExitHook) -> int:
    """Run ``hook()`` on the loop at interpreter exit unless ``forget_on_exit`` is called
    with the key returned; hooks run concurrently, before the loop's tasks are cancelled."""
    key = next(_exit_keys)
    _exit_hooks[key] = (os.getpid(), hook)
    return key


def forget_on_exit(key: int) -> None:
    _exit_hooks.pop(key, None)


async def _finish() -> None:
    # A forked child inherits its parent's hooks, not its clients: only this process's run.
    pid = os.getpid()
    hooks = [hook for owner, hook in _exit_hooks.values() if owner == pid]
    _exit_hooks.clear()
    await asyncio.gather(*(hook() for hook in hooks), return_exceptions=True)
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


@atexit.register
def _shutdown() -> None:
    current = _current
    if current is None or current.pid != os.getpid():
        return
    if current.thread.is_alive():
        future = asyncio.run_coroutine_threadsafe(_finish(), current.loop)
        with contextlib.suppress(Exception):
            future.result(_EXIT_LIMIT)
    current.stop()
