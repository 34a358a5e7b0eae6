"""Where requests wait for replicas (Kafka's produce and fetch purgatories), for the replica
manager: a produce with acks=all until the high watermark passes its records, a fetch until
there is something new for it to read.

Delayed produce (Kafka's DelayedProduce): each waiting partition starts out
REQUEST_TIMED_OUT; the mark is replaced when its acks arrive (NONE, or
NOT_ENOUGH_REPLICAS_AFTER_APPEND when the maximal ISR is below the effective min ISR then)
or when leadership moves (NOT_LEADER_OR_FOLLOWER), so a partition still waiting at the
produce timeout answers REQUEST_TIMED_OUT.

Delayed fetch (Kafka's DelayedFetch, by futures): the fetch parks on each partition it read;
a follower's wakes on an append (it reads up to the log end), a consumer's on an HW move (it
reads up to the HW), both on a leadership change; a follower's session also wakes it when
any other partition of the session changes. It completes once ``enough()`` says so, a
partition it reads stops being led here, or the wait is over.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from brook.protocol.errors import Errors, KafkaError

from .fetch_session import FetchSession
from .partition import Partition


@dataclass(slots=True)
class PendingAcks:
    """One partition of a produce waiting for acks=all, and its outcome."""

    partition: Partition
    required_offset: int
    error_code: int = Errors.REQUEST_TIMED_OUT


class DelayedProduce:
    """The partitions of one acks=all produce, waiting for their acks. Those already
    acknowledged are settled at once (``waiting`` tells whether any is left)."""

    def __init__(self, pending: Sequence[PendingAcks]) -> None:
        self.pending = list(pending)
        self._futures: dict[asyncio.Future[None], PendingAcks] = {}
        for item in self.pending:
            fut = item.partition.wait_for_acks(item.required_offset)
            if fut is None:
                item.error_code = Errors.NONE
            elif fut.done():
                self._settle(item, fut)
            else:
                self._futures[fut] = item

    @property
    def waiting(self) -> bool:
        return bool(self._futures)

    def drop(self, item: PendingAcks) -> None:
        """Stop waiting for ``item`` (its answer is already decided, e.g. a failed flush)."""
        for fut, other in list(self._futures.items()):
            if other is item:
                fut.cancel()
                del self._futures[fut]

    async def wait(self, timeout_ms: int) -> None:
        """Until every partition has its acks, or ``timeout_ms`` (those left keep
        REQUEST_TIMED_OUT)."""
        if not self._futures:
            return
        done, _ = await asyncio.wait(self._futures, timeout=max(timeout_ms, 0) / 1000)
        for fut, item in self._futures.items():
            if fut in done:
                self._settle(item, fut)
            else:
                fut.cancel()
        self._futures = {}

    @staticmethod
    def _settle(item: PendingAcks, fut: asyncio.Future[None]) -> None:
        exc = fut.exception()
        if exc is None:
            item.error_code = Errors.NONE
        elif isinstance(exc, KafkaError):
            item.error_code = exc.code
        else:
            item.error_code = Errors.UNKNOWN_SERVER_ERROR


async def wait_for_data(
    partitions: Sequence[Partition],
    *,
    follower: bool,
    max_wait_ms: int,
    enough: Callable[[], bool],
    session: FetchSession | None = None,
    session_marks: int = 0,
) -> None:
    """Park a fetch on ``partitions`` (and on its follower ``session``'s changes) until
    ``enough()``, a change in the session, a partition no longer led here, or ``max_wait_ms``.
    The fetch was read on an earlier turn of the event loop (its long poll is a task of its
    own): what changed in between (``enough()`` already, or the session marked since
    ``session_marks``) ends the wait before it begins, as Kafka's DelayedFetch tries to
    complete before it parks."""
    if enough() or (session is not None and session.marks != session_marks):
        return
    deadline = time.monotonic() + max_wait_ms / 1000
    loop = asyncio.get_running_loop()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (not partitions and session is None):
            return
        # One future for the whole fetch, registered with every partition it reads and
        # taken back from all of them, however the wait ends.
        waiter: asyncio.Future[None] = loop.create_future()
        changed = False

        def on_change(waiter: asyncio.Future[None] = waiter) -> None:
            nonlocal changed
            changed = True
            if not waiter.done():
                waiter.set_result(None)

        for p in partitions:
            p.add_data_waiter(waiter, follower=follower)
        if session is not None:
            session.waker = on_change
        try:
            await asyncio.wait((waiter,), timeout=remaining)
        finally:
            for p in partitions:
                p.remove_data_waiter(waiter)
            if session is not None:
                session.waker = None
            if not waiter.done():
                waiter.cancel()
        if changed or enough() or any(not p.is_leader for p in partitions):
            return
