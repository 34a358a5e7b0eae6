"""One pipelined connection from this node to another node (a voter, the active controller,
a partition leader): requests out, responses matched by correlation id.

Nodes of one cluster run the same Brook, so there is no ApiVersions handshake: the caller
names the version it sends. A connection that breaks fails every request in flight with
``NodeUnavailable``; the next ``send`` connects again. A response that cannot be parsed closes
the connection (``NodeUnavailable`` as well): bytes from the network never crash the node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from brook.protocol.api import api_name, response_class
from brook.protocol.build import build
from brook.protocol.errors import KafkaError
from brook.protocol.framing import (
    FrameAssembler,
    FrameError,
    decode_kio,
    encode_kio,
    encode_request,
    response_body_offset,
)

if TYPE_CHECKING:
    from brook.security.node_auth import NodeSecurity

log = logging.getLogger(__name__)

_CORR = struct.Struct(">i")
_MAX_RESPONSE = 256 * 1024 * 1024
_MAX_CORRELATION = 0x7FFFFFFF


class NodeUnavailable(ConnectionError):
    """The node could not be reached, the connection broke, or it answered garbage."""


class _Protocol(asyncio.BufferedProtocol):
    def __init__(self, conn: NodeConnection) -> None:
        self.conn = conn
        self.reader = FrameAssembler(_MAX_RESPONSE)
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.reader.get_buffer()

    def buffer_updated(self, nbytes: int) -> None:
        try:
            frames = self.reader.buffer_updated(nbytes)
        except FrameError as exc:
            self.conn._fail(f"bad frame from {self.conn.address}: {exc}")
            return
        for frame in frames:
            self.conn._on_frame(frame)

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn._fail(f"connection to {self.conn.address} lost: {exc or 'closed'}")


class NodeConnection:
    def __init__(
        self, host: str, port: int, client_id: str, security: NodeSecurity | None = None
    ) -> None:
        self.host = host
        self.port = port
        self.client_id = client_id
        # TLS and the SASL login of a secured listener (security/node_auth.py)
        self.security = security
        self._protocol: _Protocol | None = None
        self._connecting: asyncio.Task[_Protocol] | None = None
        self._pending: dict[int, tuple[int, int, asyncio.Future[memoryview]]] = {}
        self._next_correlation = 0

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def connected(self) -> bool:
        return self._protocol is not None

    async def _connect(self, timeout_s: float) -> _Protocol:
        if self._protocol is not None:
            return self._protocol
        if self._connecting is None or self._connecting.done():
            self._connecting = asyncio.get_running_loop().create_task(self._open())
        try:
            return await asyncio.wait_for(asyncio.shield(self._connecting), timeout_s)
        except (TimeoutError, OSError) as exc:
            raise NodeUnavailable(f"cannot connect to {self.address}: {exc!r}") from exc

    async def _open(self) -> _Protocol:
        loop = asyncio.get_running_loop()
        security = self.security
        tls = security.tls if security is not None else None
        _, protocol = await loop.create_connection(
            lambda: _Protocol(self),
            self.host,
            self.port,
            ssl=tls,
            server_hostname=self.host if tls is not None else None,
        )
        if security is not None and security.mechanism is not None:
            try:
                await security.login(
                    lambda key, version, data: self._exchange(protocol, key, version, data),
                    self.address,
                )
            except KafkaError as exc:
                assert protocol.transport is not None
                protocol.transport.close()
                log.warning("cannot log in to %s: %s", self.address, exc)
                raise NodeUnavailable(f"login to {self.address} refused: {exc}") from None
        self._protocol = protocol
        return protocol

    async def _exchange(self, protocol: _Protocol, api_key: int, version: int, data: dict) -> Any:
        """One request on a connection not yet handed out (the SASL login)."""
        from brook.protocol.api import request_class

        correlation = self._next_correlation
        self._next_correlation = (self._next_correlation + 1) % _MAX_CORRELATION
        body = encode_kio(build(request_class(api_key, version), data))
        future: asyncio.Future[memoryview] = asyncio.get_running_loop().create_future()
        self._pending[correlation] = (api_key, version, future)
        assert protocol.transport is not None
        protocol.transport.write(
            encode_request(api_key, version, correlation, self.client_id, body)
        )
        try:
            raw = await asyncio.wait_for(future, 10.0)
        finally:
            self._pending.pop(correlation, None)
        return decode_kio(response_class(api_key, version), raw)

    async def send_raw(
        self,
        api_key: int,
        version: int,
        body: bytes | Sequence[bytes],
        timeout_s: float,
    ) -> memoryview:
        """Send an encoded request body; return the response body (header removed)."""
        protocol = await self._connect(timeout_s)
        correlation = self._next_correlation
        self._next_correlation = (self._next_correlation + 1) % _MAX_CORRELATION
        payload = body if isinstance(body, bytes) else b"".join(body)
        frame = encode_request(api_key, version, correlation, self.client_id, payload)
        future: asyncio.Future[memoryview] = asyncio.get_running_loop().create_future()
        self._pending[correlation] = (api_key, version, future)
        assert protocol.transport is not None
        protocol.transport.write(frame)
        try:
            return await asyncio.wait_for(future, timeout_s)
        except TimeoutError:
            self._pending.pop(correlation, None)
            raise
        finally:
            self._pending.pop(correlation, None)

    async def send(self, api_key: int, version: int, request: Any, timeout_s: float) -> Any:
        """Send a kio request entity (or a dict built into one); return the decoded response."""
        if isinstance(request, dict):
            from brook.protocol.api import request_class

            request = build(request_class(api_key, version), request)
        body = await self.send_raw(api_key, version, encode_kio(request), timeout_s)
        cls = response_class(api_key, version)
        try:
            return decode_kio(cls, body)
        except Exception as exc:
            log.warning(
                "unreadable %s v%d response from %s, closing the connection: %r",
                api_name(api_key),
                version,
                self.address,
                exc,
            )
            self._fail(f"unreadable {api_name(api_key)} v{version} response: {exc!r}")
            raise NodeUnavailable(f"unreadable response from {self.address}: {exc!r}") from exc

    def _on_frame(self, frame: bytes | bytearray) -> None:
        if len(frame) < 4:
            self._fail(f"response frame of {len(frame)} bytes from {self.address}")
            return
        correlation = _CORR.unpack_from(frame, 0)[0]
        entry = self._pending.pop(correlation, None)
        if entry is None:
            return  # a request that timed out already
        api_key, version, future = entry
        try:
            offset = response_body_offset(frame, api_key, version)
        except ValueError as exc:
            self._fail(f"bad response header from {self.address}: {exc}")
            return
        if not future.done():
            # a large frame arrives in a bytearray of its own; kio reads only immutable buffers
            future.set_result(memoryview(frame).toreadonly()[offset:])

    def _fail(self, reason: str) -> None:
        protocol, self._protocol = self._protocol, None
        if protocol is not None and protocol.transport is not None:
            protocol.transport.close()
        pending, self._pending = self._pending, {}
        for _, _, future in pending.values():
            if not future.done():
                future.set_exception(NodeUnavailable(reason))

    def close(self) -> None:
        self._fail("closed")
        if self._connecting is not None and not self._connecting.done():
            self._connecting.cancel()
            with contextlib.suppress(Exception):
                self._connecting.exception()


class NodeChannels:
    """A connection per node id (addresses may change: a new address replaces the old)."""

    def __init__(self, client_id: str, security: NodeSecurity | None = None) -> None:
        self.client_id = client_id
        self.security = security
        self._connections: dict[int, NodeConnection] = {}

    def get(self, node_id: int, host: str, port: int) -> NodeConnection:
        conn = self._connections.get(node_id)
        if conn is None or (conn.host, conn.port) != (host, port):
            if conn is not None:
                conn.close()
            conn = self._connections[node_id] = NodeConnection(
                host, port, self.client_id, self.security
            )
        return conn

    def close(self) -> None:
        for conn in self._connections.values():
            conn.close()
        self._connections.clear()
