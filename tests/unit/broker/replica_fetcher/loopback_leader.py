"""A loopback "leader" for replica fetcher tests: it accepts the fetcher's connection, hands
each request to the test (decoded with kio) and sends back whatever response the test
builds, so every reaction of the follower can be driven one request at a time."""

from __future__ import annotations

import asyncio
import struct
import uuid
from dataclasses import dataclass
from typing import Any

from brook.protocol.api import ApiKey, is_flexible, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import (
    decode_kio,
    encode_kio,
    frame,
    parse_request_header,
    peek_api,
    response_header,
)

DEADLINE_S = 20.0


@dataclass
class Received:
    api_key: int
    version: int
    request: Any
    _reply: asyncio.Future[bytes | None]

    def reply(self, data: dict[str, Any]) -> None:
        """Answer with a response built from ``data`` (kio's field names)."""
        body = encode_kio(build(response_class(self.api_key, self.version), data))
        self._reply.set_result(body)

    def hang_up(self) -> None:
        self._reply.set_result(None)


class LoopbackLeader:
    def __init__(self) -> None:
        self.received: asyncio.Queue[Received] = asyncio.Queue()
        self.server: asyncio.AbstractServer | None = None
        self.port = 0
        self.connections = 0

    async def start(self) -> LoopbackLeader:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def next(self, api_key: int = ApiKey.FETCH) -> Received:
        """The next request the fetcher sends (it must be of ``api_key``)."""
        got = await asyncio.wait_for(self.received.get(), DEADLINE_S)
        assert got.api_key == api_key, f"expected api {api_key}, got {got.api_key}"
        return got

    async def nothing_within(self, seconds: float) -> bool:
        """True when no request arrives within ``seconds``."""
        try:
            got = await asyncio.wait_for(self.received.get(), seconds)
        except TimeoutError:
            return True
        self.received.put_nowait(got)
        return False

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        loop = asyncio.get_running_loop()
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                data = await reader.readexactly(size)
                api_key, version, correlation = peek_api(data)
                header = parse_request_header(data, is_flexible(api_key, version))
                request = decode_kio(request_class(api_key, version), data, header.body_offset)
                reply: asyncio.Future[bytes | None] = loop.create_future()
                self.received.put_nowait(Received(api_key, version, request, reply))
                body = await reply
                if body is None:
                    break
                writer.write(frame(response_header(correlation, api_key, version), body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()


def fetch_response(
    partitions: dict[uuid.UUID, list[dict[str, Any]]],
    *,
    session_id: int = 0,
    error_code: int = 0,
) -> dict[str, Any]:
    return {
        "throttle_time": 0,
        "error_code": error_code,
        "session_id": session_id,
        "responses": [{"topic_id": tid, "partitions": parts} for tid, parts in partitions.items()],
        "node_endpoints": [],
    }


def partition_data(
    index: int,
    *,
    error_code: int = 0,
    high_watermark: int = 0,
    log_start_offset: int = 0,
    diverging: tuple[int, int] | None = None,
    records: bytes | None = None,
) -> dict[str, Any]:
    epoch, end = diverging if diverging is not None else (-1, -1)
    return {
        "partition_index": index,
        "error_code": error_code,
        "high_watermark": high_watermark,
        "last_stable_offset": high_watermark,
        "log_start_offset": log_start_offset,
        "diverging_epoch": {"epoch": epoch, "end_offset": end},
        "current_leader": {"leader_id": -1, "leader_epoch": -1},
        "snapshot_id": {"end_offset": -1, "epoch": -1},
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": records,
    }


def list_offsets_response(topic: str, index: int, offset: int, error_code: int = 0) -> dict:
    return {
        "throttle_time": 0,
        "topics": [
            {
                "name": topic,
                "partitions": [
                    {
                        "partition_index": index,
                        "error_code": error_code,
                        "timestamp": -1,
                        "offset": offset,
                        "leader_epoch": -1,
                    }
                ],
            }
        ],
    }
