"""Listeners and connections: frames in, handlers dispatched, responses out in request order.

A connection handles one request at a time, as Kafka's SocketServer does (clients pipeline,
the broker answers in order). Synchronous handlers run straight from ``data_received``;
only a handler that has to wait (a long-poll fetch, an acks=all produce) costs a task.
Frames that cannot be parsed, unknown APIs and unsupported versions close the connection,
as in Kafka; an unsupported ApiVersions version is answered in v0 with UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections import deque
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from brook.protocol.api import ApiKey, api_name, request_class, response_class
from brook.protocol.build import build
from brook.protocol.errors import Errors
from brook.protocol.framing import (
    FrameAssembler,
    FrameError,
    decode_kio,
    encode_kio,
    parse_request_header,
    peek_api,
    response_header,
)
from brook.protocol.primitives import INT16, INT32

from .registry import HANDLERS, RequestContext, Response

if TYPE_CHECKING:
    from .server import Broker

log = logging.getLogger(__name__)

_MAX_QUEUED_FRAMES = 64


class Connection(asyncio.BufferedProtocol):
    def __init__(self, broker: Broker, listener: str, server: SocketServer) -> None:
        self.broker = broker
        self.listener = listener
        self.server = server
        self.max_request_size = int(broker.config["socket.request.max.bytes"])
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        self._reader = FrameAssembler(self.max_request_size)
        self._frames: deque[bytes | bytearray] = deque()
        self._busy = False
        self._write_paused = False
        self._read_paused = False
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self.last_active = time.monotonic()

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        self.server.connections.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.server.connections.discard(self)
        if self._task is not None and not self._task.done():
            self._task.cancel()
        self._frames.clear()

    def pause_writing(self) -> None:
        self._write_paused = True

    def resume_writing(self) -> None:
        self._write_paused = False
        self._pump()

    def get_buffer(self, sizehint: int) -> memoryview:
        return self._reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        self.last_active = time.monotonic()
        try:
            frames = self._reader.buffer_updated(nbytes)
        except FrameError as exc:
            self.close(f"{exc} (socket.request.max.bytes is {self.max_request_size})")
            return
        if not frames:
            return
        self._frames.extend(frames)
        if len(self._frames) >= _MAX_QUEUED_FRAMES and not self._read_paused:
            self._read_paused = True
            assert self.transport is not None
            self.transport.pause_reading()
        self._pump()

    # ------------------------------------------------------------------ processing
    def _pump(self) -> None:
        while self._frames and not self._busy and not self._write_paused and not self._closed:
            frame = self._frames.popleft()
            try:
                pending = self._dispatch(frame)
            except Exception:
                log.exception("error handling a request from %s; closing the connection", self.peer)
                self.close(None)
                return
            if pending is not None:
                self._busy = True
                self._task = asyncio.get_running_loop().create_task(self._finish(*pending))
                return
        if self._read_paused and len(self._frames) < _MAX_QUEUED_FRAMES // 2 and not self._closed:
            self._read_paused = False
            assert self.transport is not None
            self.transport.resume_reading()

    async def _finish(self, ctx: RequestContext, waiting: Awaitable[Response]) -> None:
        try:
            response = await waiting
        except asyncio.CancelledError:
            return
        except Exception:
            log.exception(
                "error handling %s from %s; closing the connection",
                api_name(ctx.api_key),
                self.peer,
            )
            self.close(None)
            return
        self._busy = False
        self._task = None
        if not self._closed:
            self._send(ctx, response)
            self._pump()

    def _dispatch(
        self, frame: bytes | bytearray
    ) -> tuple[RequestContext, Awaitable[Response]] | None:
        try:
            api_key, version, correlation_id = peek_api(frame)
        except FrameError as exc:
            self.close(str(exc))
            return None
        spec = HANDLERS.get(api_key)
        if spec is None:
            self.close(f"unknown or unsupported API key {api_key}")
            return None
        if not spec.min_version <= version <= spec.max_version:
            if api_key == ApiKey.API_VERSIONS:
                self._send_api_versions_fallback(correlation_id)
            else:
                self.close(f"unsupported version {version} of {api_name(api_key)}")
            return None
        cls = request_class(api_key, version)
        if cls is None:
            self.close(f"unsupported version {version} of {api_name(api_key)}")
            return None
        try:
            header = parse_request_header(frame, bool(cls.__flexible__))
            request: Any = (
                memoryview(frame)[header.body_offset :]
                if spec.raw
                # kio reads only immutable buffers; a read-only view avoids copying big frames
                else decode_kio(cls, memoryview(frame).toreadonly(), header.body_offset)
            )
        except Exception as exc:
            self.close(f"malformed {api_name(api_key)} v{version} request: {exc!r}")
            return None
        ctx = RequestContext(
            self.broker, self, api_key, version, correlation_id, header.client_id, self.listener
        )
        try:
            response = spec.fn(ctx, request)
            if inspect.isawaitable(response):
                return ctx, response
            self._send(ctx, response)
        except Exception:
            # The request was well-formed: this is a bug in Brook, and the traceback says where.
            log.exception(
                "error handling %s v%d from %s; closing the connection",
                api_name(api_key),
                version,
                self.peer,
            )
            self.close(None)
        return None

    # ------------------------------------------------------------------ output
    def _send(self, ctx: RequestContext, response: Response) -> None:
        if response is None or self._closed or self.transport is None:
            return
        if isinstance(response, dict):
            cls = response_class(ctx.api_key, ctx.api_version)
            parts = [encode_kio(build(cls, response))]
        elif isinstance(response, (bytes, bytearray, memoryview)):
            parts = [response]
        else:
            parts = response
        head = response_header(ctx.correlation_id, ctx.api_key, ctx.api_version)
        size = len(head) + sum(len(p) for p in parts)
        self.transport.writelines([INT32.pack(size) + head, *parts])
        self.last_active = time.monotonic()

    @property
    def idle(self) -> bool:
        """Nothing in progress: no request being handled or waiting to be."""
        return not self._busy and not self._frames

    def _send_api_versions_fallback(self, correlation_id: int) -> None:
        """ApiVersions v0 with UNSUPPORTED_VERSION and ApiVersions' own range (KIP-511)."""
        spec = HANDLERS[ApiKey.API_VERSIONS]
        body = (
            INT16.pack(Errors.UNSUPPORTED_VERSION)
            + INT32.pack(1)
            + INT16.pack(ApiKey.API_VERSIONS)
            + INT16.pack(spec.advertised_min)
            + INT16.pack(spec.max_version)
        )
        head = INT32.pack(correlation_id)
        assert self.transport is not None
        self.transport.write(INT32.pack(len(head) + len(body)) + head + body)

    def close(self, reason: str | None) -> None:
        if self._closed:
            return
        self._closed = True
        if reason:
            log.info("closing connection from %s: %s", self.peer, reason)
        if self.transport is not None:
            self.transport.close()


class SocketServer:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.connections: set[Connection] = set()
        self.servers: list[asyncio.AbstractServer] = []
        self.bound: dict[str, tuple[str, int]] = {}

    async def start(self, listeners: list[tuple[str, str, int]]) -> None:
        loop = asyncio.get_running_loop()
        for name, host, port in listeners:
            server = await loop.create_server(
                lambda name=name: Connection(self.broker, name, self),
                host or None,
                port,
                reuse_address=True,
                backlog=1024,
            )
            sock = server.sockets[0].getsockname()
            self.bound[name] = (sock[0], sock[1])
            self.servers.append(server)
            log.info("listening on %s://%s:%d", name, sock[0], sock[1])

    def close_idle(self, max_idle_ms: int) -> int:
        """Close connections idle for longer than ``max_idle_ms`` (connections.max.idle.ms);
        returns how many."""
        cutoff = time.monotonic() - max_idle_ms / 1000
        stale = [c for c in self.connections if c.idle and c.last_active < cutoff]
        for conn in stale:
            conn.close(f"idle for more than {max_idle_ms} ms")
        return len(stale)

    async def stop(self) -> None:
        for server in self.servers:
            server.close()
        for conn in list(self.connections):
            conn.close(None)
        for server in self.servers:
            await server.wait_closed()
