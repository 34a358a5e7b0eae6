"""Listeners and connections: frames in, handlers dispatched, responses out in request order.

A connection handles one request at a time, as Kafka's SocketServer does (clients pipeline,
the broker answers in order). Synchronous handlers run straight from ``buffer_updated``;
only a handler that has to wait (a long-poll fetch, an acks=all produce) costs a task.
Frames that cannot be parsed, unknown APIs and unsupported versions close the connection,
as in Kafka; an unsupported ApiVersions version is answered in v0 with UNSUPPORTED_VERSION.

A connection holds memory only for what it is doing: the socket reads into one buffer all
connections share, a request body is held only as it arrives (queued.max.request.bytes
bounds the total, see memory_pool.py), a connection whose responses are not being taken
stops being read (as Kafka mutes it), and stored records go out of their segment files a
chunk at a time as the socket drains (``StoredSpan``), so a client that never reads costs
its socket buffers and about 2 MiB (the transport's high mark and one chunk).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import socket
import ssl
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from brook.config.server import (
    SASL_PROTOCOLS,
    TLS_PROTOCOLS,
    jaas_config,
    listener_value,
    security_protocols,
)
from brook.log.file_pool import connection_capacity
from brook.log.span import SpanGone, StoredSpan
from brook.protocol.api import ApiKey, api_name, request_class, response_class
from brook.protocol.build import build
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.framing import (
    READ_BUFFER_SIZE,
    FrameAssembler,
    FrameError,
    decode_kio,
    encode_kio,
    parse_request_header,
    peek_api,
    response_header,
)
from brook.protocol.primitives import INT16, INT32
from brook.security.authenticator import Answer, Gate, SaslAuthenticator
from brook.security.jaas import parse_jaas
from brook.security.principal import ANONYMOUS, KafkaPrincipal
from brook.security.sasl_mechanism import MechanismServer
from brook.security.sasl_plain import PlainServer
from brook.security.tls import peer_principal, server_context

from .authz import controller_listener_refusal, refused_whole
from .memory_pool import RequestMemoryPool
from .registry import BROKER, TABLES, RequestContext, Response

if TYPE_CHECKING:
    from .server import Broker

log = logging.getLogger(__name__)

# Reading stops while this many frames (or bytes of them) wait for their turn.
_MAX_QUEUED_FRAMES = 64
_MAX_QUEUED_BYTES = READ_BUFFER_SIZE
# Stored records are read from their segment this much at a time, as the socket drains.
_SPAN_CHUNK = 1024 * 1024
# The transport's write buffer: above the high mark the connection stops producing output
# (and reading requests); below the low mark it goes on, so the socket never runs dry while
# the next chunk is read.
_WRITE_HIGH_WATER = 1024 * 1024
_WRITE_LOW_WATER = 256 * 1024
# A TLS handshake not finished in this long closes the connection.
_TLS_HANDSHAKE_TIMEOUT_S = 10.0
_BACKLOG = 1024

OutPart = bytes | bytearray | memoryview | StoredSpan


class Connection(asyncio.BufferedProtocol):
    def __init__(
        self,
        broker: Broker,
        listener: str,
        server: SocketServer,
        scope: str = BROKER,
        tls: bool = False,
        sasl: Callable[[], SaslAuthenticator] | None = None,
    ) -> None:
        self.broker = broker
        self.listener = listener
        self.tls = tls
        # The SASL exchange of a SASL listener's connection; requests other than ApiVersions
        # and the SASL ones wait for it to complete.
        self.sasl: SaslAuthenticator | None = sasl() if sasl is not None else None
        self._close_after_send = False
        self.scope = scope
        self.handlers = TABLES[scope]
        self.server = server
        self.max_request_size = int(broker.config["socket.request.max.bytes"])
        self.transport: asyncio.Transport | None = None
        self.peer = "?"
        # Who this connection's requests are made by; authentication replaces it.
        self.principal: KafkaPrincipal = broker.test_principals.get(listener, ANONYMOUS)
        self._pool = server.memory_pool
        self._reader = FrameAssembler(
            self.max_request_size,
            server.read_buffer,
            self._pool.reserve if self._pool is not None else None,
        )
        self._frames: deque[bytes | bytearray] = deque()
        self._queued_bytes = 0
        # The reservation of the request being handled (released when its handler is done).
        self._handling = 0
        self._waiting_for_memory = False
        # Output not yet handed to the transport: buffers and stored spans, in order.
        self._out: deque[OutPart] = deque()
        self._span_sent = 0
        self._busy = False
        self._write_paused = False
        self._reading = True
        self._closed = False
        self._task: asyncio.Task[None] | None = None
        self.last_active = time.monotonic()
        # time.perf_counter() at the dispatch of the request being handled (its latency)
        self._started = 0.0
        if self.sasl is not None:
            # Kafka's sasl.server.max.receive.size: an unauthenticated client cannot make
            # the broker hold a large frame (a huge SASL token closes the connection).
            self._reader.max_frame_size = min(
                self.max_request_size,
                int(listener_value(broker.config, listener, "sasl.server.max.receive.size")),
            )

    # ------------------------------------------------------------------ asyncio.Protocol
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]  # uvloop's is not a subclass
        self.transport.set_write_buffer_limits(_WRITE_HIGH_WATER, _WRITE_LOW_WATER)
        peer = transport.get_extra_info("peername")
        self.peer = f"{peer[0]}:{peer[1]}" if peer else "?"
        if self.server.refuse_over_limit(self.peer):
            self._closed = True
            transport.close()
            return
        self.server.connections.add(self)
        if self.tls:
            # The handshake is done: a client certificate's subject is the principal.
            try:
                self.principal = peer_principal(transport.get_extra_info("ssl_object"))
            except ValueError as exc:
                self.close(f"its certificate's subject cannot be read ({exc})")
                return
            log.debug(
                "TLS connection from %s on listener %s as %s",
                self.peer,
                self.listener,
                self.principal,
            )

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        self.server.connections.discard(self)
        if self._task is not None and not self._task.done():
            self._task.cancel()
        held = self._handling + self._queued_bytes + self._reader.discard()
        self._frames.clear()
        self._out.clear()
        self._handling = self._queued_bytes = 0
        if self._pool is not None:
            if self._waiting_for_memory:
                self._pool.cancel(self._memory_available)
                self._waiting_for_memory = False
            if held:
                self._pool.release(held)

    def pause_writing(self) -> None:
        self._write_paused = True
        self._update_reading()

    def resume_writing(self) -> None:
        self._write_paused = False
        self._drain()
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
        if self._reader.waiting_for_memory and not self._waiting_for_memory:
            assert self._pool is not None
            self._waiting_for_memory = True
            self._pool.wait(self._memory_available)
        if frames:
            self._frames.extend(frames)
            self._queued_bytes += sum(len(f) for f in frames)
            self._pump()
        else:
            self._update_reading()

    def _memory_available(self) -> None:
        """The pool has memory again: the waiting request may be read."""
        self._waiting_for_memory = False
        if self._closed:
            return
        if not self._reader.retry():
            assert self._pool is not None
            self._waiting_for_memory = True
            self._pool.wait(self._memory_available)
        self._update_reading()

    def _update_reading(self) -> None:
        """Read while there is room: not while a response waits for the client to take it
        (Kafka mutes such a channel), a request waits for memory, or enough are queued."""
        if self._closed or self.transport is None:
            return
        want = not (
            self._write_paused
            or self._out
            or self._reader.waiting_for_memory
            or len(self._frames) >= _MAX_QUEUED_FRAMES
            or self._queued_bytes >= _MAX_QUEUED_BYTES
        )
        if want != self._reading:
            self._reading = want
            if want:
                self.transport.resume_reading()
            else:
                self.transport.pause_reading()

    # ------------------------------------------------------------------ processing
    def _pump(self) -> None:
        while (
            self._frames
            and not self._busy
            and not self._write_paused
            and not self._out
            and not self._closed
        ):
            frame = self._frames.popleft()
            self._handling = len(frame)
            self._queued_bytes -= self._handling
            self._started = time.perf_counter()
            try:
                pending = self._dispatch(frame)
            except Exception:
                log.exception("error handling a request from %s; closing the connection", self.peer)
                self.close(None)
                return
            if pending is not None:
                self._busy = True
                self._task = asyncio.get_running_loop().create_task(self._finish(*pending))
                break
            self._handled()
        self._update_reading()

    def _handled(self) -> None:
        """The current request's handler is done with it: its memory goes back to the pool."""
        if self._pool is not None and self._handling:
            self._pool.release(self._handling)
        self._handling = 0

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
        self._handled()
        if not self._closed:
            self._send(ctx, response)
            self._pump()

    def sasl_answered(self, answer: Answer) -> None:
        """What the SASL handlers report: a failure is logged once (the client's address,
        never a secret) and closes the connection once its answer is sent; success makes
        ``User:<name>`` this connection's principal."""
        auth = self.sasl
        assert auth is not None
        if answer.log_reason:
            log.warning(
                "SASL authentication with %s on listener %s failed: %s",
                self.peer,
                self.listener,
                answer.log_reason,
            )
        if answer.close:
            self._close_after_send = True
        if auth.complete and auth.principal is not None:
            self.principal = auth.principal
            self._reader.max_frame_size = self.max_request_size
            log.debug(
                "SASL connection from %s on listener %s authenticated with %s as %s",
                self.peer,
                self.listener,
                auth.mechanism,
                self.principal,
            )

    def _raw_sasl_token(self, frame: bytes | bytearray) -> None:
        """A SASL token after SaslHandshake v0: size-prefixed, no Kafka header; the answer
        likewise. A failure can only close the connection (there is no error field)."""
        assert self.sasl is not None and self.transport is not None
        answer = self.sasl.authenticate(bytes(frame))
        self.sasl_answered(answer)
        if answer.close:
            self.close(None)
            return
        self.transport.write(INT32.pack(len(answer.token)) + answer.token)

    def _dispatch(
        self, frame: bytes | bytearray
    ) -> tuple[RequestContext, Awaitable[Response]] | None:
        if self.sasl is not None and self.sasl.expects_raw_token:
            self._raw_sasl_token(frame)
            return None
        try:
            api_key, version, correlation_id = peek_api(frame)
        except FrameError as exc:
            self.close(str(exc))
            return None
        if self.sasl is not None and self.sasl.gate(api_key) is Gate.CLOSE:
            self.close(
                f"{api_name(api_key)} request before SASL authentication completed "
                "(only ApiVersions, SaslHandshake and SaslAuthenticate are accepted)"
            )
            return None
        spec = self.handlers.get(api_key)
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
            self.broker,
            self,
            api_key,
            version,
            correlation_id,
            header.client_id,
            self.listener,
            self.scope,
        )
        refusal = controller_listener_refusal(ctx)
        if refusal is not None:
            log.info("refused %s from %s: %s", api_name(api_key), self.peer, refusal)
            self._send(ctx, refused_whole(api_key, version, request, refusal))
            return None
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
        self.broker.counters.request_done(
            ctx.api_key, ctx.api_version, self._started, ctx.fetch_from_follower
        )
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
        self._write([INT32.pack(size) + head, *parts])
        self.last_active = time.monotonic()
        if self._close_after_send:
            # Kafka's connection.failed.authentication.delay.ms: the client reads the answer
            # before the connection closes (a close right behind it makes some clients drop
            # the answer and retry at once); the transport sends what it holds first.
            self._close_after_send = False
            self._reading = False
            assert self.transport is not None
            self.transport.pause_reading()
            delay = int(self.broker.config["connection.failed.authentication.delay.ms"])
            asyncio.get_running_loop().call_later(delay / 1000, self.close, None)

    def _write(self, parts: list[OutPart]) -> None:
        """Buffers go to the transport as they are (uvloop keeps references, it does not copy
        them); stored spans wait in ``_out`` and are read as the socket drains."""
        if not self._out and not any(isinstance(p, StoredSpan) for p in parts):
            assert self.transport is not None
            self.transport.writelines(parts)
            return
        self._out.extend(parts)
        self._drain()

    def _drain(self) -> None:
        """Hand ``_out`` to the transport until its buffer is above the high mark."""
        out, transport = self._out, self.transport
        while out and not self._write_paused and not self._closed:
            assert transport is not None
            part = out[0]
            if isinstance(part, StoredSpan):
                start = self._span_sent
                n = min(_SPAN_CHUNK, len(part) - start)
                try:
                    chunk = part.read(start, n)
                except (SpanGone, KafkaError, OSError) as exc:
                    # The frame size has been sent: the response cannot be finished. Gone:
                    # the segment was deleted or truncated; KafkaError: its directory went
                    # offline, or no descriptor was left to reopen it (the log has dealt
                    # with either); only this client is affected.
                    self.close(f"stored records being sent cannot be read ({exc})")
                    return
                if start + n == len(part):
                    out.popleft()
                    self._span_sent = 0
                else:
                    self._span_sent = start + n
                transport.write(chunk)
            else:
                ready: list[OutPart] = []
                while out and not isinstance(out[0], StoredSpan):
                    ready.append(out.popleft())
                transport.writelines(ready)
            self.last_active = time.monotonic()

    @property
    def queued_requests(self) -> int:
        """Requests read and waiting for the one in progress (Kafka's request queue)."""
        return len(self._frames)

    @property
    def idle(self) -> bool:
        """Nothing in progress: no request being handled or waiting to be."""
        return not self._busy and not self._frames

    def _send_api_versions_fallback(self, correlation_id: int) -> None:
        """ApiVersions v0 with UNSUPPORTED_VERSION and ApiVersions' own range (KIP-511)."""
        spec = self.handlers[ApiKey.API_VERSIONS]
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
        configured = int(broker.config["max.connections"])
        self.max_connections = (
            connection_capacity(broker.log_manager.files.capacity)
            if configured == -1
            else configured
        )
        self._refused = 0
        self._refusal_logged = 0.0
        # One read buffer for every connection (see FrameAssembler) and the request memory
        # pool, when queued.max.request.bytes is set.
        self.read_buffer = bytearray(READ_BUFFER_SIZE)
        queued = int(broker.config["queued.max.request.bytes"])
        self.memory_pool = RequestMemoryPool(queued) if queued > 0 else None
        self.servers: list[asyncio.AbstractServer | TlsServer] = []
        self.bound: dict[str, tuple[str, int]] = {}

    def _sasl_factory(self, name: str) -> Callable[[], SaslAuthenticator] | None:
        """The authenticator maker of listener ``name``, or None when it has no SASL."""
        cfg = self.broker.config
        if security_protocols(cfg).get(name) not in SASL_PROTOCOLS:
            return None
        mechanisms = list(listener_value(cfg, name, "sasl.enabled.mechanisms"))
        plain_users: dict[str, str] = {}
        if "PLAIN" in mechanisms:
            text = jaas_config(cfg, name, "PLAIN")
            assert text is not None  # parse_server_config checks it
            plain_users = parse_jaas(
                text, f"listener.name.{name.lower()}.plain.sasl.jaas.config"
            ).users()

        def server(mechanism: str) -> MechanismServer:
            if mechanism == "PLAIN":
                return PlainServer(plain_users)
            return self.broker.scram_server(mechanism)

        return lambda: SaslAuthenticator(mechanisms, server)

    def _tls_context(self, name: str) -> ssl.SSLContext | None:
        """The TLS context of listener ``name``, or None for a plain-text one."""
        cfg = self.broker.config
        if security_protocols(cfg).get(name) not in TLS_PROTOCOLS:
            return None
        return server_context(lambda key: listener_value(cfg, name, key), f"listener {name}")

    async def bind(self, listeners: list[tuple[str, str, int]], scope: str = BROKER) -> None:
        """Bind every listener's address (port 0 gets a free one) without accepting yet: a
        broker learns its ports before it registers and serves once it is unfenced. ``scope``
        says which API table the listeners serve (broker or controller)."""
        loop = asyncio.get_running_loop()
        for name, host, port in listeners:
            tls = self._tls_context(name)
            sasl = self._sasl_factory(name)
            server: asyncio.AbstractServer | TlsServer
            if tls is None:
                server = await loop.create_server(
                    lambda name=name, sasl=sasl: Connection(  # type: ignore[misc]
                        self.broker, name, self, scope, sasl=sasl
                    ),
                    host or None,
                    port,
                    reuse_address=True,
                    backlog=_BACKLOG,
                    start_serving=False,
                )
            else:
                server = TlsServer(
                    lambda name=name, sasl=sasl: Connection(
                        self.broker, name, self, scope, tls=True, sasl=sasl
                    ),
                    name,
                    host,
                    port,
                    tls,
                )
            sock = server.sockets[0].getsockname()
            self.bound[name] = (sock[0], sock[1])
            self.servers.append(server)

    async def serve(self, names: list[str] | None = None) -> None:
        """Start accepting on the bound listeners (those in ``names``, or all)."""
        for server, (name, (host, port)) in zip(self.servers, self.bound.items(), strict=True):
            if (names is None or name in names) and not server.is_serving():
                await server.start_serving()
                log.info("listening on %s://%s:%d", name, host, port)

    def refuse_over_limit(self, peer: str) -> bool:
        """Whether a new connection goes over max.connections (it is closed then): clients
        must not take the descriptors the logs and the node need, or a produce could fail
        for want of one."""
        if len(self.connections) < self.max_connections:
            return False
        self._refused += 1
        now = time.monotonic()
        if now - self._refusal_logged >= 10:
            self._refusal_logged = now
            log.warning(
                "refused a connection from %s: max.connections (%d) reached (%d refused)",
                peer,
                self.max_connections,
                self._refused,
            )
        return True

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


class TlsServer:
    """A TLS listener: connections accepted here and handed to the loop with their TLS
    handshake (``connect_accepted_socket``), so that a failed handshake (an untrusted or
    expired certificate, a client speaking plain Kafka to a TLS port) is logged once with
    the peer's address, closing only that connection. The loop's own TLS server would drop
    such failures silently. Behaves as the ``asyncio.Server`` SocketServer uses."""

    def __init__(
        self,
        factory: Callable[[], Connection],
        name: str,
        host: str,
        port: int,
        context: ssl.SSLContext,
    ) -> None:
        self._factory = factory
        self._name = name
        self._context = context
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host or ("::" if family == socket.AF_INET6 else "0.0.0.0"), port))
        sock.listen(_BACKLOG)
        sock.setblocking(False)
        self.sockets = [sock]
        self._accepting: asyncio.Task[None] | None = None
        self._handshakes: set[asyncio.Task[None]] = set()
        self._closed = False

    def is_serving(self) -> bool:
        return self._accepting is not None and not self._closed

    async def start_serving(self) -> None:
        if self._accepting is None and not self._closed:
            self._accepting = asyncio.get_running_loop().create_task(self._accept())

    async def _accept(self) -> None:
        loop = asyncio.get_running_loop()
        sock = self.sockets[0]
        while not self._closed:
            try:
                conn, address = await loop.sock_accept(sock)
            except asyncio.CancelledError:
                raise
            except OSError as exc:
                # Out of descriptors or a connection reset before it was taken: the next
                # one may do; a pause keeps this from spinning.
                log.warning("accepting on listener %s failed: %s", self._name, exc)
                await asyncio.sleep(0.1)
                continue
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            task = loop.create_task(self._handshake(conn, address))
            self._handshakes.add(task)
            task.add_done_callback(self._handshakes.discard)

    async def _handshake(self, conn: socket.socket, address: Any) -> None:
        peer = f"{address[0]}:{address[1]}" if address else "?"
        try:
            await asyncio.get_running_loop().connect_accepted_socket(
                self._factory,  # type: ignore[arg-type]
                conn,
                ssl=self._context,
                ssl_handshake_timeout=_TLS_HANDSHAKE_TIMEOUT_S,
            )
        except asyncio.CancelledError:
            conn.close()
            raise
        except (OSError, TimeoutError, ValueError) as exc:
            log.warning(
                "TLS handshake with %s on listener %s failed: %s",
                peer,
                self._name,
                str(exc) or type(exc).__name__,
            )
            conn.close()

    def close(self) -> None:
        self._closed = True
        if self._accepting is not None:
            self._accepting.cancel()
        for task in list(self._handshakes):
            task.cancel()
        for sock in self.sockets:
            sock.close()

    async def wait_closed(self) -> None:
        tasks = [t for t in [self._accepting, *self._handshakes] if t is not None]
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
