"""One pipelined asyncio TCP connection to one broker, with the ApiVersions handshake.

Requests are pipelined (frames of one loop iteration leave in one write) and matched to
responses by correlation id; a broken connection fails everything in flight for good.
"""

from __future__ import annotations

import asyncio
import os
import socket
import struct
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any, cast

import brook
from brook.protocol.api import ApiKey, api_name, is_flexible, request_class, response_class
from brook.protocol.build import build
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.framing import decode_kio, encode_kio
from brook.protocol.primitives import skip_tagged_fields

from .security import ClientSecurity

__all__ = [
    "BrokerConnection",
    "NetworkError",
    "ProtocolError",
    "RequestTimeoutError",
    "UnsupportedVersionError",
    "client_version_range",
]

Body = bytes | bytearray | memoryview | Sequence[bytes | bytearray | memoryview]

# The first ApiVersions version tried; a broker that lacks it answers in v0 with error 35 and
# its own range, and the handshake retries at that version (KIP-511).
API_VERSIONS_FIRST = 3
CLIENT_SOFTWARE_NAME = "brook"
CLIENT_SOFTWARE_VERSION = brook.__version__

_SIZE_CORR = struct.Struct(">ii")
_HEAD = struct.Struct(">ihhi")  # size, api_key, api_version, correlation_id
_INT16 = struct.Struct(">h")
_MAX_CORRELATION = 0x7FFFFFFF
_BUFFERS = (bytes, bytearray, memoryview)


class NetworkError(KafkaError):
    """The connection could not be made or broke; retriable (NETWORK_EXCEPTION)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.NETWORK_EXCEPTION, message)


class RequestTimeoutError(KafkaError):
    """No response within the request timeout; retriable (REQUEST_TIMED_OUT)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.REQUEST_TIMED_OUT, message)


class UnsupportedVersionError(KafkaError):
    """The broker and this client share no version of an API (UNSUPPORTED_VERSION)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.UNSUPPORTED_VERSION, message)


class ProtocolError(KafkaError):
    """A response that cannot be parsed; the connection is closed (not retriable)."""

    def __init__(self, message: str) -> None:
        super().__init__(Errors.UNKNOWN_SERVER_ERROR, message)


@cache
def client_version_range(api_key: int) -> tuple[int, int] | None:
    """(min, max) versions of ``api_key`` this client can encode (kio's generated range)."""
    versions = [v for v in range(0, 32) if request_class(api_key, v) is not None]
    return (versions[0], versions[-1]) if versions else None


@cache
def _response_header_flexible(api_key: int, version: int) -> bool:
    # ApiVersions always answers with response header v0 (KIP-511).
    return api_key != ApiKey.API_VERSIONS and is_flexible(api_key, version)


class _Pending:
    __slots__ = ("api_key", "deadline", "flexible", "future", "version")

    def __init__(
        self,
        future: asyncio.Future[bytes],
        api_key: int,
        version: int,
        flexible: bool,
        deadline: float,
    ) -> None:
        self.future = future
        self.api_key = api_key
        self.version = version
        self.flexible = flexible
        self.deadline = deadline


class BrokerConnection(asyncio.Protocol):
    """A connection to the broker at ``host:port`` (``node_id`` -1 for a bootstrap address).

    Call :meth:`connect` once; then :meth:`send` (kio objects or dicts, version negotiated),
    :meth:`send_raw` / :meth:`submit` (hand-encoded bodies) and :meth:`send_no_response`
    (acks=0) may be used concurrently from the loop the connection was made on. A request
    that times out fails alone (its late response is dropped); a broken connection fails
    everything in flight and stays closed: make a new one.
    """

    def __init__(
        self,
        host: str,
        port: int,
        *,
        node_id: int = -1,
        client_id: str | None = "brook",
        request_timeout_ms: int = 30000,
        connect_timeout_ms: int = 10000,
        send_buffer_bytes: int = -1,
        receive_buffer_bytes: int = -1,
        security: ClientSecurity | None = None,
    ) -> None:
        self.host = host
        self.security = security
        self.port = port
        self.node_id = node_id
        self.address = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        self.client_id = client_id
        self.request_timeout_ms = request_timeout_ms
        self.connect_timeout_ms = connect_timeout_ms
        self._send_buffer_bytes = send_buffer_bytes
        self._receive_buffer_bytes = receive_buffer_bytes
        encoded_id = b"" if client_id is None else client_id.encode("utf-8")
        self._client_id_field = (
            b"\xff\xff" if client_id is None else _INT16.pack(len(encoded_id)) + encoded_id
        )
        self.api_versions: dict[int, tuple[int, int]] = {}
        self.api_versions_version = -1
        self._loop: asyncio.AbstractEventLoop | None = None
        self._transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._pending: dict[int, _Pending] = {}
        self._correlation = 0
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._closed_error: NetworkError | None = None
        self._ready = False
        self._paused = False
        self._drain_waiters: list[asyncio.Future[None]] = []
        self.last_used = 0.0
        self._out: list[Any] = []
        self._flush_scheduled = False
        # (api_key << 16 | version) -> (request header tail, response header is flexible)
        self._headers: dict[int, tuple[bytes, bool]] = {}

    def __repr__(self) -> str:
        state = "ready" if self._ready else ("closed" if self._closed_error else "new")
        return f"<BrokerConnection node={self.node_id} {self.address} {state}>"

    # -- state -----------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """Connected, handshake done, not broken."""
        return self._ready

    @property
    def closed(self) -> bool:
        return self._closed_error is not None

    @property
    def in_flight(self) -> int:
        """Requests sent and not yet answered (or timed out)."""
        return len(self._pending)

    @property
    def writable(self) -> bool:
        """False while the transport's write buffer is above its high-water mark."""
        return not self._paused

    # -- connect and handshake -------------------------------------------------------------

    async def connect(self) -> None:
        """TCP connect and the ApiVersions handshake, within ``connect_timeout_ms``."""
        if self._transport is not None or self._closed_error is not None:
            raise RuntimeError(f"{self!r} cannot be connected twice")
        self._loop = loop = asyncio.get_running_loop()
        timeout = self.connect_timeout_ms / 1000
        try:
            async with asyncio.timeout(timeout):
                tls = self.security.tls if self.security is not None else None
                await loop.create_connection(
                    lambda: self,
                    self.host,
                    self.port,
                    ssl=tls,
                    server_hostname=self.host if tls is not None else None,
                )
        except TimeoutError:
            self._fail(
                f"connection to {self.address} failed: timed out after {self.connect_timeout_ms} ms"
            )
            raise self._error() from None
        except OSError as exc:
            self._fail(f"connection to {self.address} failed: {_os_error(exc)}")
            raise self._error() from None
        except asyncio.CancelledError:
            self._fail(f"connection to {self.address} failed: attempt cancelled")
            raise
        try:
            async with asyncio.timeout(timeout):
                await self._handshake()
                if self.security is not None:
                    await self.security.authenticate(self)
        except TimeoutError:
            self._fail(
                f"connection to {self.address} failed: no ApiVersions response within "
                f"{self.connect_timeout_ms} ms"
            )
            raise self._error() from None
        except KafkaError as exc:
            if not isinstance(exc, NetworkError):
                self._fail(f"connection to {self.address} failed: {exc}")
            raise
        except asyncio.CancelledError:
            self._fail(f"connection to {self.address} failed: attempt cancelled")
            raise
        self._ready = True

    async def _handshake(self) -> None:
        cls0 = response_class(ApiKey.API_VERSIONS, 0)
        version = API_VERSIONS_FIRST
        while True:
            data = {
                "client_software_name": CLIENT_SOFTWARE_NAME,
                "client_software_version": CLIENT_SOFTWARE_VERSION,
            }
            body = encode_kio(build(request_class(ApiKey.API_VERSIONS, version), data))
            raw = await self.send_raw(ApiKey.API_VERSIONS, version, body)
            error = _INT16.unpack_from(raw, 0)[0] if len(raw) >= 2 else -1
            if error == Errors.UNSUPPORTED_VERSION and version > 0:
                # The error response is always in v0 form; it may carry the broker's range.
                advertised = 0
                try:
                    for k in decode_kio(cls0, raw).api_keys:
                        if k.api_key == ApiKey.API_VERSIONS:
                            advertised = int(k.max_version)
                except Exception:
                    advertised = 0
                version = max(0, min(advertised, version - 1))
                continue
            if error != 0:
                raise KafkaError(error, f"ApiVersions v{version} to {self.address}")
            try:
                resp = decode_kio(response_class(ApiKey.API_VERSIONS, version), raw)
            except Exception as exc:
                raise ProtocolError(
                    f"cannot decode ApiVersions v{version} response from {self.address}: {exc}"
                ) from None
            self.api_versions = {
                int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys
            }
            self.api_versions_version = version
            return

    # -- version negotiation ---------------------------------------------------------------

    def version_for(
        self, api_key: int, client_min: int | None = None, client_max: int | None = None
    ) -> int:
        """min(client max, broker max), or UnsupportedVersionError when the ranges miss."""
        broker = self.api_versions.get(api_key)
        name = api_name(api_key)
        if broker is None:
            raise UnsupportedVersionError(
                f"broker {self.address} does not support {name} (api key {int(api_key)})"
            )
        if client_min is None or client_max is None:
            own = client_version_range(api_key)
            if own is None:
                raise UnsupportedVersionError(f"this client cannot encode {name}")
            client_min = own[0] if client_min is None else client_min
            client_max = own[1] if client_max is None else client_max
        version = min(client_max, broker[1])
        if version < max(client_min, broker[0]):
            raise UnsupportedVersionError(
                f"broker {self.address} supports {name} v{broker[0]}-{broker[1]}, "
                f"this client needs v{client_min}-{client_max}"
            )
        return version

    def supports(self, api_key: int, min_version: int = 0) -> bool:
        """Whether the broker advertises ``api_key`` at ``min_version`` or newer."""
        broker = self.api_versions.get(api_key)
        return broker is not None and broker[1] >= min_version

    # -- sending ---------------------------------------------------------------------------

    async def send(
        self,
        api_key: int,
        data: Mapping[str, Any] | Any,
        *,
        version: int | None = None,
        timeout_ms: int | None = None,
        client_min: int | None = None,
        client_max: int | None = None,
    ) -> Any:
        """Send one request (a dict of the newest version's fields, or a kio object).

        The version is negotiated unless given; a dict is built into that version's class, so
        fields a version lacks are dropped. Returns the decoded kio response.
        """
        if version is None:
            if not isinstance(data, Mapping):
                version = int(type(data).__version__)
            else:
                version = self.version_for(api_key, client_min, client_max)
        cls = request_class(api_key, version)
        if cls is None:
            raise UnsupportedVersionError(
                f"this client cannot encode {api_name(api_key)} v{version}"
            )
        try:
            body = encode_kio(build(cls, data))
        except TypeError as exc:
            raise TypeError(f"cannot build {api_name(api_key)} v{version} request: {exc}") from None
        raw = await self.send_raw(api_key, version, body, timeout_ms=timeout_ms)
        try:
            return decode_kio(response_class(api_key, version), raw)
        except Exception as exc:
            # A broker that sends what its schema forbids is not trusted with the next ones.
            message = (
                f"cannot decode {api_name(api_key)} v{version} response from "
                f"{self.address}: {type(exc).__name__}: {exc}"
            )
            self._protocol_error(message)
            raise ProtocolError(message) from None

    async def send_raw(
        self, api_key: int, version: int, body: Body, *, timeout_ms: int | None = None
    ) -> bytes:
        """Send a hand-encoded request body; returns the response body (header removed)."""
        if self._paused:
            await self.drain()
        return await self.submit(api_key, version, body, timeout_ms)

    def submit(
        self, api_key: int, version: int, body: Body, timeout_ms: int | None = None
    ) -> asyncio.Future[bytes]:
        """Write a request now and return the future of its response body.

        The hot path for hand-encoded requests: no coroutine, no task. ``body`` may be a list
        of buffers (written with ``writelines``, never joined; do not modify them afterwards).
        Frames submitted in one loop iteration go out together at the end of it. The future
        fails with RequestTimeoutError after ``timeout_ms`` (default request.timeout.ms) or
        NetworkError when the connection breaks.
        """
        correlation, flexible = self._write(api_key, version, body)
        loop = self._loop
        assert loop is not None
        future: asyncio.Future[bytes] = loop.create_future()
        now = loop.time()
        self.last_used = now
        deadline = now + (self.request_timeout_ms if timeout_ms is None else timeout_ms) / 1000
        self._pending[correlation] = _Pending(future, api_key, version, flexible, deadline)
        if self._timer is None or deadline < self._timer_at:
            self._arm_timer(deadline)
        return future

    def send_no_response(self, api_key: int, version: int, body: Body) -> None:
        """Write a request the broker will not answer (Produce with acks=0)."""
        self._write(api_key, version, body)
        assert self._loop is not None
        self.last_used = self._loop.time()

    async def drain(self) -> None:
        """Wait until the transport's write buffer is below its high-water mark."""
        if not self._paused:
            return
        if self._closed_error is not None:
            raise self._error()
        assert self._loop is not None
        waiter: asyncio.Future[None] = self._loop.create_future()
        self._drain_waiters.append(waiter)
        await waiter

    def _write(self, api_key: int, version: int, body: Body) -> tuple[int, bool]:
        """Queue one request frame; returns (correlation id, response header is flexible)."""
        if self._closed_error is not None or self._transport is None:
            raise self._error()
        correlation = self._correlation
        self._correlation = correlation + 1 if correlation < _MAX_CORRELATION else 0
        key = (api_key << 16) | version
        header = self._headers.get(key)
        if header is None:
            tail = self._client_id_field + (b"\x00" if is_flexible(api_key, version) else b"")
            header = self._headers[key] = (tail, _response_header_flexible(api_key, version))
        tail = header[0]
        out = self._out
        if isinstance(body, _BUFFERS):
            out.append(_HEAD.pack(8 + len(tail) + len(body), api_key, version, correlation) + tail)
            out.append(body)
        else:
            parts = list(body)
            size = sum(len(p) for p in parts)
            out.append(_HEAD.pack(8 + len(tail) + size, api_key, version, correlation) + tail)
            out.extend(parts)
        if not self._flush_scheduled:
            # Frames written in one loop iteration leave in one writelines (one syscall).
            self._flush_scheduled = True
            assert self._loop is not None
            self._loop.call_soon(self._flush)
        return correlation, header[1]

    def _flush(self) -> None:
        self._flush_scheduled = False
        out = self._out
        if out and self._transport is not None and self._closed_error is None:
            self._out = []
            self._transport.writelines(out)

    # -- timeouts --------------------------------------------------------------------------

    def _arm_timer(self, when: float) -> None:
        # One timer per connection, set for the earliest deadline: no per-request timer.
        if self._timer is not None:
            self._timer.cancel()
        assert self._loop is not None
        self._timer_at = when
        self._timer = self._loop.call_at(when, self._on_timer)

    def _on_timer(self) -> None:
        self._timer = None
        assert self._loop is not None
        now = self._loop.time()
        expired = [c for c, p in self._pending.items() if p.deadline <= now]
        for correlation in expired:
            pending = self._pending.pop(correlation)
            if not pending.future.done():
                pending.future.set_exception(
                    RequestTimeoutError(
                        f"{api_name(pending.api_key)} v{pending.version} request to "
                        f"{self.address} got no response within its timeout"
                    )
                )
        if self._pending:
            self._arm_timer(min(p.deadline for p in self._pending.values()))

    # -- asyncio.Protocol ------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # uvloop's transports are not asyncio.Transport subclasses, only alike.
        self._transport = cast(asyncio.Transport, transport)
        sock = transport.get_extra_info("socket")
        if sock is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if self._send_buffer_bytes > 0:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer_bytes)
                if self._receive_buffer_bytes > 0:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer_bytes)
            except OSError:
                pass

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        size_total = len(buf)
        pos = 0
        pending_map = self._pending
        while size_total - pos >= 8:
            size, correlation = _SIZE_CORR.unpack_from(buf, pos)
            if size < 4:
                self._protocol_error(f"invalid response frame size {size}")
                return
            end = pos + 4 + size
            if end > size_total:
                break
            pending = pending_map.pop(correlation, None)
            # A response to a request that already timed out is dropped.
            if pending is not None and not pending.future.done():
                start = pos + 8
                if pending.flexible:
                    if start < end and buf[start] == 0:  # no tagged fields: the usual case
                        start += 1
                    else:
                        try:
                            start = skip_tagged_fields(buf[start:end], 0) + start
                        except (ValueError, IndexError):
                            start = end + 1
                        if start > end:
                            self._protocol_error("truncated response header")
                            return
                with memoryview(buf) as view:
                    body = bytes(view[start:end])
                pending.future.set_result(body)
            pos = end
        if pos:
            del buf[:pos]

    def eof_received(self) -> bool | None:
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        cause = str(exc) if exc is not None else "closed by the broker"
        self._fail(f"connection to {self.address} lost: {cause}")

    def pause_writing(self) -> None:
        self._paused = True

    def resume_writing(self) -> None:
        self._paused = False
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; requests in flight fail with NetworkError."""
        self._fail(f"connection to {self.address} closed by the client", abort=False)

    def _protocol_error(self, message: str) -> None:
        self._fail(f"connection to {self.address} closed: {message}")

    def _error(self) -> NetworkError:
        if self._closed_error is None:
            return NetworkError(f"connection to {self.address} is not connected")
        return NetworkError(self._closed_error.message or str(self._closed_error))

    def _fail(self, message: str, abort: bool = True) -> None:
        if self._closed_error is not None:
            return
        self._closed_error = NetworkError(message)
        self._ready = False
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, {}
        for entry in pending.values():
            if not entry.future.done():
                entry.future.set_exception(NetworkError(message))
        waiters, self._drain_waiters = self._drain_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_exception(NetworkError(message))
        self._buf = bytearray()
        out, self._out = self._out, []
        if self._transport is not None:
            # A client close still flushes what was written (acks=0 produce requests).
            if abort:
                self._transport.abort()
            else:
                if out:
                    self._transport.writelines(out)
                self._transport.close()


def _os_error(exc: OSError) -> str:
    # asyncio words a refused connect as "Connect call failed (...)"; name the cause instead.
    if exc.errno and exc.errno > 0 and not isinstance(exc, socket.gaierror):
        return f"[Errno {exc.errno}] {os.strerror(exc.errno)}"
    return str(exc)
