"""A loopback proxy that makes one real broker look like several nodes, one of them slow.

Each fake node id gets a proxy port of its own; every port forwards to the one real broker.
Metadata responses are rewritten so the brokers list names the fake nodes and partition ``p``
is led by node ``p % nodes + 1``; Produce responses passing through a node listed in
``delays`` are held back that many milliseconds (in order, so a connection's responses never
overtake one another). Enough to test KIP-794's adaptive partitioning against a slow broker
with a single Brook process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import threading
import time
from typing import Any

from brook.protocol.api import ApiKey, is_flexible, response_class
from brook.protocol.framing import decode_kio, encode_kio
from brook.protocol.primitives import skip_tagged_fields

_HEAD = struct.Struct(">hhi")


class MultiNodeProxy:
    def __init__(
        self, broker: str, nodes: int = 3, delays: dict[int, float] | None = None
    ) -> None:
        host, port = broker.rsplit(":", 1)
        self.target = (host, int(port))
        self.nodes = nodes
        self.delays = dict(delays or {})  # node id -> ms added to each Produce response
        self.ports: dict[int, int] = {}
        self.produce_requests: dict[int, int] = {n: 0 for n in range(1, nodes + 1)}
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.Server] = []
        self._writers: list[asyncio.StreamWriter] = []

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports[1]}"

    def __enter__(self) -> MultiNodeProxy:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    async def _start(self) -> None:
        for node in range(1, self.nodes + 1):
            server = await asyncio.start_server(
                lambda r, w, n=node: self._serve(n, r, w), "127.0.0.1", 0
            )
            self._servers.append(server)
            self.ports[node] = server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        for server in self._servers:
            server.close()
        for writer in self._writers:
            writer.close()

    async def _serve(
        self, node: int, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
    ) -> None:
        broker_r, broker_w = await asyncio.open_connection(*self.target)
        self._writers += [client_w, broker_w]
        pending: dict[int, tuple[int, int]] = {}  # correlation -> (api key, version)
        upstream = asyncio.ensure_future(self._requests(node, client_r, broker_w, pending))
        try:
            await self._responses(node, broker_r, client_w, pending)
        finally:
            upstream.cancel()
            client_w.close()
            broker_w.close()

    async def _requests(
        self, node: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
        pending: dict[int, tuple[int, int]],
    ) -> None:
        try:
            while True:
                size = await reader.readexactly(4)
                frame = await reader.readexactly(struct.unpack(">i", size)[0])
                api_key, version, correlation = _HEAD.unpack_from(frame, 0)
                pending[correlation] = (api_key, version)
                if api_key == ApiKey.PRODUCE:
                    self.produce_requests[node] += 1
                writer.write(size + frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def _responses(
        self, node: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
        pending: dict[int, tuple[int, int]],
    ) -> None:
        queue: asyncio.Queue[tuple[float, bytes] | None] = asyncio.Queue()
        release = 0.0

        async def deliver() -> None:
            while (item := await queue.get()) is not None:
                at, data = item
                wait = at - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(data)

        sender = asyncio.ensure_future(deliver())
        try:
            while True:
                size = await reader.readexactly(4)
                frame = await reader.readexactly(struct.unpack(">i", size)[0])
                correlation = struct.unpack_from(">i", frame, 0)[0]
                api_key, version = pending.pop(correlation, (-1, -1))
                delay = 0.0
                if api_key == ApiKey.METADATA:
                    frame = self._rewrite_metadata(frame, version)
                elif api_key == ApiKey.PRODUCE:
                    delay = self.delays.get(node, 0.0) / 1000
                release = max(release, time.monotonic() + delay)
                queue.put_nowait((release, struct.pack(">i", len(frame)) + frame))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            queue.put_nowait(None)
            await asyncio.gather(sender, return_exceptions=True)

    def _rewrite_metadata(self, frame: bytes, version: int) -> bytes:
        start = 4
        if is_flexible(ApiKey.METADATA, version):
            start = skip_tagged_fields(frame, 4)
        cls = response_class(ApiKey.METADATA, version)
        response = decode_kio(cls, frame[start:])
        broker_cls = type(response.brokers[0]) if response.brokers else None
        if broker_cls is None:
            return frame
        brokers = tuple(
            dataclasses.replace(response.brokers[0], node_id=n, host="127.0.0.1", port=p)
            for n, p in sorted(self.ports.items())
        )
        topics = []
        for topic in response.topics:
            parts = []
            for p in topic.partitions:
                leader = int(p.partition_index) % self.nodes + 1
                parts.append(
                    dataclasses.replace(
                        p, leader_id=leader, replica_nodes=(leader,), isr_nodes=(leader,)
                    )
                )
            topics.append(dataclasses.replace(topic, partitions=tuple(parts)))
        changes: dict[str, Any] = {"brokers": brokers, "topics": tuple(topics)}
        if hasattr(response, "controller_id"):
            changes["controller_id"] = 1
        body = encode_kio(dataclasses.replace(response, **changes))
        return frame[:start] + body
