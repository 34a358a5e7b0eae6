"""Outbound requests of one node, as Kafka's RequestManager keeps them: at most one in flight
per destination; a destination is ready again once its response arrives, once
``request_timeout_ms`` passes without one, or ``retry_backoff_ms`` after a failure. A response
is handled only if it answers the request in flight (the same object), so late, duplicated and
superseded responses are dropped; every role change forgets all of them.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

from .messages import Request

NEVER = 2**62


class _Connection:
    __slots__ = ("backoff_until", "inflight", "sent_at")

    def __init__(self) -> None:
        self.inflight: Request | None = None
        self.sent_at = 0
        self.backoff_until = 0


class RequestManager:
    def __init__(
        self,
        bootstrap: Sequence[int],
        retry_backoff_ms: int,
        request_timeout_ms: int,
        rng: random.Random,
    ) -> None:
        self.bootstrap = tuple(bootstrap)
        self.retry_backoff_ms = retry_backoff_ms
        self.request_timeout_ms = request_timeout_ms
        self._rng = rng
        self._connections: dict[int, _Connection] = {}

    def _live(self, node: int, now: int) -> _Connection | None:
        """The node's connection if it is waiting for a response or backing off; a connection
        whose response timed out or whose backoff ended is forgotten (ready)."""
        conn = self._connections.get(node)
        if conn is None:
            return None
        if conn.inflight is not None:
            if now < conn.sent_at + self.request_timeout_ms:
                return conn
        elif now < conn.backoff_until:
            return conn
        del self._connections[node]
        return None

    def is_ready(self, node: int, now: int) -> bool:
        return self._live(node, now) is None

    def is_backing_off(self, node: int, now: int) -> bool:
        conn = self._live(node, now)
        return conn is not None and conn.inflight is None

    def has_request_timed_out(self, node: int, now: int) -> bool:
        conn = self._connections.get(node)
        return (
            conn is not None
            and conn.inflight is not None
            and now >= conn.sent_at + self.request_timeout_ms
        )

    def has_any_inflight(self, now: int) -> bool:
        for node in list(self._connections):
            conn = self._live(node, now)
            if conn is not None and conn.inflight is not None:
                return True
        return False

    def next_ready_at(self, node: int, now: int) -> int:
        """When ``node`` can next be sent to: ``now`` if it is ready."""
        conn = self._live(node, now)
        if conn is None:
            return now
        if conn.inflight is not None:
            return conn.sent_at + self.request_timeout_ms
        return conn.backoff_until

    def find_ready_bootstrap(self, now: int, exclude: int) -> int | None:
        """A ready bootstrap node, starting from a random one; None while any request is in
        flight (the node asks one at a time)."""
        if self.has_any_inflight(now) or not self.bootstrap:
            return None
        n = len(self.bootstrap)
        start = self._rng.randrange(n)
        for i in range(n):
            node = self.bootstrap[(start + i) % n]
            if node != exclude and self.is_ready(node, now):
                return node
        return None

    def backoff_before_available_bootstrap(self, now: int, exclude: int) -> int:
        """When to look for a bootstrap node again (absolute time)."""
        soonest = now + self.retry_backoff_ms
        for node in list(self._connections):
            conn = self._live(node, now)
            if conn is None:
                continue
            if conn.inflight is not None:
                return conn.sent_at + self.request_timeout_ms
            soonest = min(soonest, conn.backoff_until)
        for node in self.bootstrap:
            if node != exclude and node not in self._connections:
                return now
        return soonest

    def on_request_sent(self, node: int, request: Request, now: int) -> None:
        conn = self._connections.get(node)
        if conn is None:
            conn = self._connections[node] = _Connection()
        conn.inflight = request
        conn.sent_at = now

    def is_expected(self, node: int, request: Request) -> bool:
        conn = self._connections.get(node)
        return conn is not None and conn.inflight is request

    def on_response(self, node: int, request: Request, success: bool, now: int) -> None:
        """The response to ``request`` was handled: the destination is ready again, or backs
        off when the response (or the attempt) failed."""
        if not self.is_expected(node, request):
            return
        if success:
            del self._connections[node]
        else:
            conn = self._connections[node]
            conn.inflight = None
            conn.backoff_until = now + self.retry_backoff_ms

    def reset(self, node: int) -> None:
        self._connections.pop(node, None)

    def reset_all(self) -> None:
        self._connections.clear()
