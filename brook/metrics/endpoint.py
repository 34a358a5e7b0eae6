"""The Prometheus endpoint of a node (``metrics.prometheus.listener``): prometheus-client's
own HTTP server on its own thread, so a scrape never runs on (or blocks) the event loop, and
a probe of the loop's lag running on the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from http.server import HTTPServer

from prometheus_client import CollectorRegistry, PlatformCollector, ProcessCollector
from prometheus_client.exposition import start_http_server

from brook.config.server import METRICS_LISTENER_KEY, parse_metrics_listener

from .collector import LoopSnapshotCollector
from .counters import BrokerCounters
from .snapshot import Family

log = logging.getLogger(__name__)

LOOP_PROBE_INTERVAL_S = 0.5


class MetricsEndpoint:
    """Serves ``take``'s families (run on the current loop) at ``http://host:port/metrics``."""

    def __init__(
        self, listener: str, take: Callable[[], list[Family]], counters: BrokerCounters
    ) -> None:
        self.host, self.port = parse_metrics_listener(METRICS_LISTENER_KEY, listener)
        self._take = take
        self._counters = counters
        self._server: HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._probe: asyncio.Task[None] | None = None

    @property
    def bound_port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    def start(self) -> None:
        """Bind and serve; call on the broker's loop. A port that cannot be bound stops the
        node's start with the key's name."""
        loop = asyncio.get_running_loop()
        registry = CollectorRegistry(auto_describe=False)
        registry.register(LoopSnapshotCollector(loop, self._take))
        ProcessCollector(registry=registry)
        PlatformCollector(registry=registry)
        try:
            self._server, self._thread = start_http_server(
                self.port, addr=self.host, registry=registry
            )
        except OSError as exc:
            raise OSError(
                f"cannot serve metrics on {self.host}:{self.port} "
                f"({METRICS_LISTENER_KEY}): {exc.strerror or exc}"
            ) from exc
        self._probe = loop.create_task(self._probe_loop_lag())
        log.info("serving Prometheus metrics on http://%s:%d/metrics", self.host, self.bound_port)

    async def _probe_loop_lag(self) -> None:
        """Event-loop lag: how much later than asked a sleep of the loop ends."""
        loop = asyncio.get_running_loop()
        while True:
            asked = loop.time()
            await asyncio.sleep(LOOP_PROBE_INTERVAL_S)
            late = loop.time() - asked - LOOP_PROBE_INTERVAL_S
            self._counters.loop_lagged(max(0.0, late) * 1000)

    async def stop(self) -> None:
        if self._probe is not None:
            self._probe.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._probe
            self._probe = None
        server, thread = self._server, self._thread
        self._server = self._thread = None
        if server is not None:
            await asyncio.to_thread(server.shutdown)
            server.server_close()
        if thread is not None:
            await asyncio.to_thread(thread.join, 5)
