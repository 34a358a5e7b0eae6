"""queued.max.request.bytes: the bytes of requests a broker holds at once.

Kafka's SocketServer gives every request a buffer from a ``SimpleMemoryPool`` (non-strict)
when this is positive: a request's declared size is taken when its size prefix has been
read, granted while any memory is left (so the pool may go over by one request), and given
back once its handler has run; a connection whose request is refused is muted until memory
comes back. Brook does the same with one difference: requests no larger than the shared read
buffer never wait (see ``FrameAssembler``), so that a few clients declaring large requests and
sending nothing cannot stall everyone's metadata, heartbeats and fetches.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable


class RequestMemoryPool:
    """Accounting only: the memory itself is allocated by the connections as bytes arrive."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.available = capacity
        self._waiters: deque[Callable[[], None]] = deque()

    def reserve(self, size: int, force: bool) -> bool:
        if self.available <= 0 and not force:
            return False
        self.available -= size
        return True

    def release(self, size: int) -> None:
        """Give ``size`` bytes back; connections waiting for memory resume in arrival order
        while some is left."""
        self.available += size
        while self._waiters and self.available > 0:
            self._waiters.popleft()()

    def wait(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` (once) when memory has been released."""
        self._waiters.append(wake)

    def cancel(self, wake: Callable[[], None]) -> None:
        try:
            self._waiters.remove(wake)
        except ValueError:
            pass

    @property
    def waiting(self) -> int:
        return len(self._waiters)
