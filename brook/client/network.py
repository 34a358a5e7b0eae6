"""The network client every Brook client is built on: bootstrap, one connection per broker,
reconnect backoff, the metadata refresher and the choice of the least-loaded broker.

Producer, consumer and admin share this class; they add their own request logic on top.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import random
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from .cluster import ClusterMetadata
from .config import parse_bootstrap
from .connection import BrokerConnection, NetworkError
from .security import ClientSecurity

__all__ = ["NetworkClient", "backoff_ms"]

log = logging.getLogger(__name__)

_CLIENT_IDS: dict[str, itertools.count[int]] = {}
METADATA_MIN_VERSION = 1  # v0 reads an empty topic list as "all topics"; v1+ is universal


def _generated_client_id(kind: str) -> str:
    counter = _CLIENT_IDS.setdefault(kind, itertools.count(1))
    return f"{kind}-{next(counter)}"


def backoff_ms(base_ms: float, max_ms: float, attempts: int, jitter: float = 0.2) -> float:
    """Kafka's ExponentialBackoff: base * 2^attempts capped at max, +/- ``jitter``."""
    if base_ms <= 0:
        return 0.0
    value = min(base_ms * (2 ** min(attempts, 32)), max(max_ms, base_ms))
    if jitter:
        value *= random.uniform(1 - jitter, 1 + jitter)
    return value


# SASL refusals: not retriable, so the client's creation fails with them.
_AUTH_ERRORS = frozenset(
    {
        Errors.SASL_AUTHENTICATION_FAILED,
        Errors.UNSUPPORTED_SASL_MECHANISM,
        Errors.ILLEGAL_SASL_STATE,
    }
)


class _NodeState:
    """Connection attempts to one node: consecutive failures and when to try again."""

    __slots__ = ("failures", "last_error", "next_attempt")

    def __init__(self) -> None:
        self.failures = 0
        self.next_attempt = 0.0
        self.last_error: KafkaError | None = None


class NetworkClient:
    """Connections to the brokers of one cluster, and the metadata that says where they are.

    ``config`` is a parsed client config (producer, consumer or admin table). ``kind`` names
    generated client ids (``producer-1``). ``all_topics`` makes refreshes ask for every topic;
    otherwise they ask for :attr:`topics` (see :meth:`add_topics`).
    """

    def __init__(
        self,
        config: Mapping[str, Any],
        *,
        kind: str = "client",
        all_topics: bool = False,
        allow_auto_topic_creation: bool = False,
    ) -> None:
        self.config = config
        # TLS context and SASL login, built once (a bad setting fails the client's creation)
        self.security = ClientSecurity.from_config(config)
        self.client_id: str = config["client.id"] or _generated_client_id(kind)
        self.bootstrap_servers = parse_bootstrap(config["bootstrap.servers"])
        self.cluster = ClusterMetadata()
        self.cluster.on_update_request = self._wake
        self.all_topics = all_topics
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self._topics: set[str] = set()
        self._conns: dict[int, BrokerConnection] = {}
        self._connecting: dict[int, asyncio.Task[BrokerConnection]] = {}
        self._nodes: dict[int, _NodeState] = {}
        self._refresh_task: asyncio.Task[None] | None = None
        self._starting: asyncio.Task[None] | None = None
        self._background: asyncio.Task[None] | None = None
        self._wake_event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._last_refresh_attempt = 0.0
        self._last_refresh_success = 0.0
        self._refresh_failures = 0
        self._last_idle_check = 0.0
        self._closed = False
        self._request_timeout_ms = int(config["request.timeout.ms"])

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Bootstrap (first metadata) and start the background refresher, once: concurrent
        callers share one start; after a failed start the next call tries again."""
        task = self._starting
        if task is None or (task.done() and (task.cancelled() or task.exception() is not None)):
            task = self._starting = asyncio.get_running_loop().create_task(self._start())
            task.add_done_callback(_consume_exception)
        await asyncio.shield(task)

    async def _start(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._wake_event = asyncio.Event()
        await self.bootstrap()
        self._background = asyncio.create_task(self._run(), name=f"{self.client_id}-metadata")

    async def close(self) -> None:
        """Stop the refresher and close every connection (in-flight requests fail)."""
        if self._closed:
            return
        self._closed = True
        tasks: list[asyncio.Task[Any]] = [*self._connecting.values()]
        if self._background is not None:
            tasks.append(self._background)
        if self._refresh_task is not None:
            tasks.append(self._refresh_task)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task
        for conn in self._conns.values():
            conn.close()
        self._conns.clear()
        self.cluster.fail_waiters(NetworkError(f"{self.client_id} is closed"))

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise NetworkError(f"{self.client_id} is closed")

    def _now(self) -> float:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop.time()

    def _new_connection(
        self, host: str, port: int, node_id: int, timeout_ms: int
    ) -> BrokerConnection:
        cfg = self.config
        return BrokerConnection(
            host,
            port,
            node_id=node_id,
            client_id=self.client_id,
            request_timeout_ms=self._request_timeout_ms,
            connect_timeout_ms=timeout_ms,
            send_buffer_bytes=int(cfg["send.buffer.bytes"]),
            receive_buffer_bytes=int(cfg["receive.buffer.bytes"]),
            security=self.security,
        )

    # -- bootstrap -------------------------------------------------------------------------

    async def bootstrap(self) -> None:
        """Get metadata from the first bootstrap address that answers.

        Raises NetworkError naming every address tried and why it failed.
        """
        self._check_open()
        failures: list[str] = []
        auth_error: KafkaError | None = None
        setup_ms = int(self.config["socket.connection.setup.timeout.ms"])
        for host, port in self.bootstrap_servers:
            conn = self._new_connection(host, port, -1, setup_ms)
            try:
                await conn.connect()
                topics = self._refresh_topics()
                response = await self._metadata_request(
                    conn, topics, self.allow_auto_topic_creation
                )
            except KafkaError as exc:
                conn.close()
                failures.append(exc.message or str(exc))
                if exc.code in _AUTH_ERRORS:
                    auth_error = exc
                continue
            self._last_refresh_attempt = self._last_refresh_success = self._now()
            self._refresh_failures = 0
            self._apply_metadata(response, topics)
            self._adopt(conn)
            return
        if auth_error is not None:
            # Retrying cannot help: the credentials or the mechanism were refused.
            raise KafkaError(auth_error.code, "; ".join(failures))
        raise NetworkError(
            "could not get metadata from any of bootstrap.servers "
            f"({', '.join(_address(h, p) for h, p in self.bootstrap_servers)}): "
            + "; ".join(failures)
        )

    def _adopt(self, conn: BrokerConnection) -> None:
        # A bootstrap address that is also a broker's advertised address saves a reconnect.
        for node in self.cluster.brokers.values():
            if (node.host, node.port) == (conn.host, conn.port) and node.node_id not in self._conns:
                conn.node_id = node.node_id
                self._conns[node.node_id] = conn
                return
        conn.close()

    # -- connections -----------------------------------------------------------------------

    def is_ready(self, node_id: int) -> bool:
        conn = self._conns.get(node_id)
        return conn is not None and conn.ready

    def connection_for(self, node_id: int) -> BrokerConnection | None:
        """The node's connection if it is ready, else None (no waiting, no connecting)."""
        conn = self._conns.get(node_id)
        return conn if conn is not None and conn.ready else None

    def connection_delay_ms(self, node_id: int) -> float:
        """0 when ready or when a connection may be tried now; else ms until it may."""
        if self.is_ready(node_id):
            return 0.0
        if node_id in self._connecting:
            return float("inf")
        state = self._nodes.get(node_id)
        if state is None:
            return 0.0
        return max(0.0, (state.next_attempt - self._now()) * 1000)

    def maybe_connect(self, node_id: int) -> bool:
        """True if ready; otherwise start connecting in the background (unless backing off)."""
        if self.is_ready(node_id):
            return True
        if node_id not in self._connecting and self.connection_delay_ms(node_id) == 0.0:
            self._start_connect(node_id)
        return False

    async def connection(self, node_id: int) -> BrokerConnection:
        """A ready connection to ``node_id``, connecting (after any backoff) if needed."""
        conn = self._conns.get(node_id)
        if conn is not None and conn.ready:
            return conn
        self._check_open()
        task = self._connecting.get(node_id) or self._start_connect(node_id)
        # Shielded: a caller giving up must not cancel an attempt other callers share.
        return await asyncio.shield(task)

    def _start_connect(self, node_id: int) -> asyncio.Task[BrokerConnection]:
        task = asyncio.get_running_loop().create_task(self._connect(node_id))
        self._connecting[node_id] = task
        task.add_done_callback(_consume_exception)
        return task

    async def _connect(self, node_id: int) -> BrokerConnection:
        state = self._nodes.setdefault(node_id, _NodeState())
        try:
            delay = state.next_attempt - self._now()
            if delay > 0:
                await asyncio.sleep(delay)
            node = self.cluster.node(node_id)
            if node is None:
                raise NetworkError(f"node {node_id} is not in the cluster metadata")
            cfg = self.config
            setup_ms = backoff_ms(
                cfg["socket.connection.setup.timeout.ms"],
                cfg["socket.connection.setup.timeout.max.ms"],
                state.failures,
            )
            conn = self._new_connection(node.host, node.port, node_id, int(setup_ms))
            try:
                await conn.connect()
            except KafkaError as exc:
                state.failures += 1
                state.last_error = exc
                wait = backoff_ms(
                    cfg["reconnect.backoff.ms"], cfg["reconnect.backoff.max.ms"], state.failures - 1
                )
                state.next_attempt = self._now() + wait / 1000
                raise
            state.failures = 0
            state.last_error = None
            old = self._conns.get(node_id)
            if old is not None and old is not conn:
                old.close()
            if self._closed:
                conn.close()
                raise NetworkError(f"{self.client_id} is closed")
            self._conns[node_id] = conn
            return conn
        finally:
            if self._connecting.get(node_id) is asyncio.current_task():
                del self._connecting[node_id]

    def least_loaded_node(self) -> int | None:
        """The ready broker with the fewest requests in flight; else one that may be
        connected now; else None (every broker is backing off)."""
        nodes = list(self.cluster.brokers)
        if not nodes:
            return None
        start = random.randrange(len(nodes))
        best: int | None = None
        best_load = 1 << 30
        fallback: int | None = None
        for i in range(len(nodes)):
            node_id = nodes[(start + i) % len(nodes)]
            conn = self._conns.get(node_id)
            if conn is not None and conn.ready:
                load = conn.in_flight
                if load == 0:
                    return node_id
                if load < best_load:
                    best, best_load = node_id, load
            elif fallback is None and (
                node_id in self._connecting or self.connection_delay_ms(node_id) == 0.0
            ):
                fallback = node_id
        return best if best is not None else fallback

    async def any_connection(self) -> BrokerConnection:
        """A ready connection to some broker, least loaded first; falls back to the bootstrap
        addresses when no known broker can be reached."""
        self._check_open()
        node_id = self.least_loaded_node()
        if node_id is not None:
            conn = self.connection_for(node_id)
            if conn is not None:
                return conn
        errors: list[str] = []
        order = sorted(
            self.cluster.brokers,
            key=lambda n: (not self.is_ready(n), self.connection_delay_ms(n), n != node_id),
        )
        for candidate in order:
            try:
                return await self.connection(candidate)
            except NetworkError as exc:
                errors.append(exc.message or str(exc))
        try:
            await self.bootstrap()
        except NetworkError as exc:
            raise NetworkError("; ".join([*errors, exc.message or str(exc)])) from None
        for candidate in self.cluster.brokers:
            try:
                return await self.connection(candidate)
            except NetworkError as exc:
                errors.append(exc.message or str(exc))
        raise NetworkError("no broker could be reached: " + "; ".join(errors))

    # -- requests --------------------------------------------------------------------------

    async def send_to(
        self,
        node_id: int,
        api_key: int,
        data: Mapping[str, Any] | Any,
        *,
        version: int | None = None,
        timeout_ms: int | None = None,
        client_min: int | None = None,
        client_max: int | None = None,
    ) -> Any:
        """Send a request to one broker and return its decoded response."""
        conn = await self.connection(node_id)
        return await conn.send(
            api_key,
            data,
            version=version,
            timeout_ms=timeout_ms,
            client_min=client_min,
            client_max=client_max,
        )

    async def send_any(
        self,
        api_key: int,
        data: Mapping[str, Any] | Any,
        *,
        version: int | None = None,
        timeout_ms: int | None = None,
        client_min: int | None = None,
        client_max: int | None = None,
    ) -> Any:
        """Send a request to the least-loaded broker."""
        conn = await self.any_connection()
        return await conn.send(
            api_key,
            data,
            version=version,
            timeout_ms=timeout_ms,
            client_min=client_min,
            client_max=client_max,
        )

    # -- metadata --------------------------------------------------------------------------

    @property
    def topics(self) -> frozenset[str]:
        """Topics whose metadata refreshes ask for (unless ``all_topics``)."""
        return frozenset(self._topics)

    def add_topics(self, topics: Iterable[str]) -> bool:
        """Track more topics; requests a refresh and returns True if any was new."""
        new = set(topics) - self._topics
        if not new:
            return False
        self._topics |= new
        self.cluster.request_update()
        return True

    def set_topics(self, topics: Iterable[str]) -> None:
        """Track exactly ``topics``; requests a refresh when that adds any."""
        topics = set(topics)
        added = topics - self._topics
        self._topics = topics
        if added:
            self.cluster.request_update()

    def _refresh_topics(self) -> list[str] | None:
        return None if self.all_topics else sorted(self._topics)

    async def fetch_metadata(
        self,
        topics: Sequence[str] | None,
        *,
        allow_auto_topic_creation: bool | None = None,
        update_cache: bool = True,
    ) -> Any:
        """Send one Metadata request (None = all topics) and return the response.

        With ``update_cache`` the response is applied to :attr:`cluster` (topics not asked
        for keep their cached state unless ``topics`` is None).
        """
        auto = (
            self.allow_auto_topic_creation
            if allow_auto_topic_creation is None
            else (allow_auto_topic_creation)
        )
        topics = None if topics is None else list(topics)
        conn = await self.any_connection()
        response = await self._metadata_request(conn, topics, auto)
        if update_cache:
            self._apply_metadata(response, topics)
        return response

    async def refresh_metadata(self) -> None:
        """Refresh the cached metadata now (one refresh at a time; callers share it)."""
        self._check_open()
        task = self._refresh_task
        if task is None or task.done():
            task = asyncio.get_running_loop().create_task(self._refresh())
            task.add_done_callback(_consume_exception)
            self._refresh_task = task
        await asyncio.shield(task)

    async def await_update(self, timeout_ms: float | None = None) -> int:
        """Request a refresh and wait until the cache is newer than now; returns its version."""
        version = self.cluster.request_update()
        timeout = None if timeout_ms is None else timeout_ms / 1000
        return await self.cluster.wait_for_version(version, timeout)

    async def _refresh(self) -> None:
        self._last_refresh_attempt = self._now()
        topics = self._refresh_topics()
        try:
            await self.fetch_metadata(topics)
        except KafkaError:
            self._refresh_failures += 1
            raise
        self._refresh_failures = 0
        self._last_refresh_success = self._now()

    async def _metadata_request(
        self, conn: BrokerConnection, topics: Sequence[str] | None, allow_auto: bool
    ) -> Any:
        version = conn.version_for(ApiKey.METADATA, METADATA_MIN_VERSION)
        data = {
            "topics": None if topics is None else [{"name": t, "topic_id": None} for t in topics],
            "allow_auto_topic_creation": allow_auto,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False,
        }
        response = await conn.send(ApiKey.METADATA, data, version=version)
        code = int(getattr(response, "error_code", 0))
        if code:
            raise KafkaError(code, f"Metadata from {conn.address}")
        return response

    def _apply_metadata(self, response: Any, topics: Sequence[str] | None) -> None:
        self.cluster.update(response, topics=topics)
        # A broker that moved to another address gets a fresh connection.
        for node_id, conn in list(self._conns.items()):
            node = self.cluster.node(node_id)
            if node is not None and (node.host, node.port) != (conn.host, conn.port):
                conn.close()
                del self._conns[node_id]

    # -- background work -------------------------------------------------------------------

    def _wake(self) -> None:
        if self._wake_event is not None:
            self._wake_event.set()

    def _next_refresh_at(self) -> float:
        cfg = self.config
        backoff = backoff_ms(
            cfg["retry.backoff.ms"], cfg["retry.backoff.max.ms"], self._refresh_failures, 0.0
        )
        allow_at = self._last_refresh_attempt + backoff / 1000
        if self.cluster.update_requested or self._refresh_failures:
            expire_at = 0.0
        else:
            expire_at = self._last_refresh_success + cfg["metadata.max.age.ms"] / 1000
        return max(allow_at, expire_at)

    async def _run(self) -> None:
        assert self._wake_event is not None
        idle_ms = int(self.config["connections.max.idle.ms"])
        idle_every = min(idle_ms, 30000) / 1000 if idle_ms > 0 else None
        while not self._closed:
            now = self._now()
            wake_at = self._next_refresh_at()
            if idle_every is not None:
                wake_at = min(wake_at, self._last_idle_check + idle_every)
            try:
                async with asyncio.timeout(max(0.0, wake_at - now)):
                    await self._wake_event.wait()
            except TimeoutError:
                pass
            self._wake_event.clear()
            now = self._now()
            if now >= self._next_refresh_at():
                try:
                    await self.refresh_metadata()
                except KafkaError as exc:
                    log.debug("%s: metadata refresh failed: %s", self.client_id, exc)
                except Exception:
                    log.exception("%s: metadata refresh failed", self.client_id)
            if idle_every is not None and now - self._last_idle_check >= idle_every:
                self._last_idle_check = now
                self._close_idle(now, idle_ms / 1000)

    def _close_idle(self, now: float, max_idle: float) -> None:
        for node_id, conn in list(self._conns.items()):
            if conn.in_flight == 0 and now - conn.last_used > max_idle:
                conn.close()
                del self._conns[node_id]


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def _consume_exception(task: asyncio.Task[Any]) -> None:
    # Failures are reported to whoever awaits; this only keeps asyncio from logging them.
    if not task.cancelled():
        task.exception()
