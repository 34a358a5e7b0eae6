"""A tiny loopback broker for client tests: answers ApiVersions, hands the rest to a script.

It speaks real Kafka framing (request headers v1/v2, response headers v0/v1) so the client's
connection code is exercised byte for byte; each test decides what the other requests get.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from brook.protocol.api import is_flexible, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import (
    decode_kio,
    encode_kio,
    frame,
    parse_request_header,
    peek_api,
    response_header,
)

DEFAULT_RANGES: dict[int, tuple[int, int]] = {
    0: (3, 11),  # Produce
    3: (0, 12),  # Metadata
    18: (0, 4),  # ApiVersions
    19: (2, 7),  # CreateTopics
}


@dataclass
class Request:
    api_key: int
    version: int
    correlation_id: int
    body: bytes
    writer: asyncio.StreamWriter

    def decode(self) -> Any:
        return decode_kio(request_class(self.api_key, self.version), self.body)


Script = Callable[["ScriptedBroker", Request], Awaitable[None] | None]


class ScriptedBroker:
    """``async with ScriptedBroker(script) as broker``; ``broker.port`` to connect to."""

    def __init__(
        self,
        script: Script | None = None,
        *,
        ranges: Mapping[int, tuple[int, int]] | None = None,
        advertise_on_error: bool = True,
        silent: bool = False,
        api_versions_error: int = 0,
    ) -> None:
        self.script = script
        self.ranges = dict(DEFAULT_RANGES if ranges is None else ranges)
        self.advertise_on_error = advertise_on_error
        self.silent = silent
        self.api_versions_error = api_versions_error
        self.requests: list[Request] = []
        self.writers: list[asyncio.StreamWriter] = []
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> ScriptedBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for writer in self.writers:
            writer.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.sleep(0)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def requests_for(self, api_key: int) -> list[Request]:
        return [r for r in self.requests if r.api_key == api_key]

    def spawn(self, coro: Awaitable[Any]) -> None:
        """Run part of a script in the background (to answer later without blocking reads)."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                data = await reader.readexactly(size)
                api_key, version, _ = peek_api(data)
                header = parse_request_header(data, is_flexible(api_key, version))
                req = Request(
                    api_key, version, header.correlation_id, data[header.body_offset :], writer
                )
                self.requests.append(req)
                if self.silent:
                    continue
                if api_key == 18:
                    self._api_versions(req)
                elif self.script is not None:
                    result = self.script(self, req)
                    if result is not None:
                        await result
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def _api_versions(self, req: Request) -> None:
        top = self.ranges.get(18, (0, 4))[1]
        if req.version > top:
            keys = [{"api_key": 18, "min_version": 0, "max_version": top}]
            data = {
                "error_code": 35,
                "api_keys": keys if self.advertise_on_error else [],
                "throttle_time": 0,
            }
            self.respond(req, data, version=0)
            return
        data = {
            "error_code": self.api_versions_error,
            "api_keys": [
                {"api_key": k, "min_version": lo, "max_version": hi}
                for k, (lo, hi) in self.ranges.items()
            ],
            "throttle_time": 0,
        }
        self.respond(req, data)

    def encode_response(
        self, req: Request, data: Mapping[str, Any] | bytes, version: int | None = None
    ) -> bytes:
        body_version = req.version if version is None else version
        if isinstance(data, bytes):
            body = data
        else:
            body = encode_kio(build(response_class(req.api_key, body_version), data))
        return frame(response_header(req.correlation_id, req.api_key, req.version), body)

    def respond(
        self, req: Request, data: Mapping[str, Any] | bytes, version: int | None = None
    ) -> None:
        req.writer.write(self.encode_response(req, data, version))


def metadata_response(
    cluster_id: str,
    brokers: list[tuple[int, str, int]] | None = None,
    topics: list[dict[str, Any]] | None = None,
    controller_id: int = -1,
) -> dict[str, Any]:
    """A Metadata response body as a dict of the newest version's fields."""
    return {
        "throttle_time": 0,
        "brokers": [
            {"node_id": n, "host": h, "port": p, "rack": None} for n, h, p in brokers or []
        ],
        "cluster_id": cluster_id,
        "controller_id": controller_id,
        "topics": topics or [],
        "cluster_authorized_operations": -2147483648,
        "error_code": 0,
    }
