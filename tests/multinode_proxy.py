"""A loopback proxy that makes one real broker look like several nodes, some of them slow.

Each fake node id gets a proxy port of its own; every port forwards to the one real broker.
Metadata responses are rewritten so the brokers list names the fake nodes and partition ``p``
is led by ``node_ids[p % nodes]``. Responses of a delayed API (Produce by default) passing
through a node listed in ``delays`` are held back that many milliseconds, either pipelined
(each response ``delay`` after it arrived) or serial (also ``delay`` after the previous one
left, as from a Kafka broker that sleeps in its request handler: it reads the next request of
a connection only once the previous response is sent). A connection's responses never
overtake one another. The proxy also counts requests and bytes per node and API, and can
hand each whole exchange to a ``tap``. Used by the KIP-794 tests.

``MultiNodeProxy.in_front_of(brokers)`` is the pass-through form, for a real cluster: each
real broker gets a proxy port that forwards to it alone, and Metadata responses only have the
brokers' addresses replaced by those ports (leaders, replicas and everything else as the
cluster said). Nothing is delayed; it counts and taps, so that a measurement sees every byte
a client and the brokers exchange (KIP-227's experiment in bench/).
"""

from __future__ import annotations

import asyncio
import dataclasses
import struct
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from brook.protocol.api import ApiKey, response_class
from brook.protocol.framing import decode_kio, encode_kio, response_body_offset

_HEAD = struct.Struct(">hhi")
_SIZE = struct.Struct(">i")

# (node id, api key, api version, request frame, response frame); frames without the size.
Tap = Callable[[int, int, int, bytes, bytes], None]


@dataclasses.dataclass
class ApiTraffic:
    """Requests and bytes (size prefixes included) that passed one node for one API."""

    requests: int = 0
    request_bytes: int = 0
    responses: int = 0
    response_bytes: int = 0


class MultiNodeProxy:
    def __init__(
        self,
        broker: str,
        nodes: int = 3,
        delays: dict[int, float] | None = None,
        *,
        serial: bool = False,
        node_ids: Sequence[int] | None = None,
        delayed_apis: Collection[int] = (ApiKey.PRODUCE,),
        tap: Tap | None = None,
    ) -> None:
        self.target = _address(broker)
        # node id -> its own broker (the pass-through form); others forward to ``target``
        self.upstreams: dict[int, tuple[str, int]] = {}
        self.node_ids = tuple(node_ids) if node_ids is not None else tuple(range(1, nodes + 1))
        if len(self.node_ids) != nodes or len(set(self.node_ids)) != nodes:
            raise ValueError(f"node_ids must be {nodes} distinct ids, got {self.node_ids}")
        self.nodes = nodes
        self.delays = dict(delays or {})  # node id -> ms added to each delayed response
        self.serial = serial
        self.delayed_apis = frozenset(delayed_apis)
        self.tap = tap
        self.ports: dict[int, int] = {}
        self.traffic: dict[tuple[int, int], ApiTraffic] = {}  # (node, api key) -> counts
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.Server] = []
        self._writers: list[asyncio.StreamWriter] = []
        self._connections: set[asyncio.Task[Any]] = set()

    @classmethod
    def in_front_of(cls, brokers: Mapping[int, str], *, tap: Tap | None = None) -> MultiNodeProxy:
        """A counting pass-through in front of a real cluster's brokers (node id -> host:port):
        no fake nodes, no delays, the cluster's own leaders."""
        ids = sorted(brokers)
        if not ids:
            raise ValueError("no brokers to stand in front of")
        proxy = cls(brokers[ids[0]], len(ids), node_ids=ids, tap=tap)
        proxy.upstreams = {n: _address(brokers[n]) for n in ids}
        return proxy

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.ports[self.node_ids[0]]}"

    def leader_of(self, partition: int) -> int:
        return self.node_ids[partition % self.nodes]

    @property
    def produce_requests(self) -> dict[int, int]:
        """Produce requests received per node."""
        return {n: self.api_traffic(ApiKey.PRODUCE, n).requests for n in self.node_ids}

    def api_traffic(self, api_key: int, node: int | None = None) -> ApiTraffic:
        """The counts of one API at one node, or summed over all nodes."""
        total = ApiTraffic()
        for (n, key), t in list(self.traffic.items()):
            if key == api_key and node in (None, n):
                total.requests += t.requests
                total.request_bytes += t.request_bytes
                total.responses += t.responses
                total.response_bytes += t.response_bytes
        return total

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
        for node in self.node_ids:
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
        # Let every connection finish its own cleanup before the loop stops.
        if self._connections:
            await asyncio.wait(self._connections, timeout=5)

    def _counts(self, node: int, api_key: int) -> ApiTraffic:
        counts = self.traffic.get((node, api_key))
        if counts is None:
            counts = self.traffic[(node, api_key)] = ApiTraffic()
        return counts

    async def _serve(
        self, node: int, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        task.add_done_callback(self._connections.discard)
        broker_r, broker_w = await asyncio.open_connection(*self.upstreams.get(node, self.target))
        self._writers += [client_w, broker_w]
        # correlation -> (api key, version, request frame if a tap wants it)
        pending: dict[int, tuple[int, int, bytes]] = {}
        upstream = asyncio.ensure_future(self._requests(node, client_r, broker_w, pending))
        try:
            await self._responses(node, broker_r, client_w, pending)
        finally:
            upstream.cancel()
            client_w.close()
            broker_w.close()

    async def _requests(
        self,
        node: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pending: dict[int, tuple[int, int, bytes]],
    ) -> None:
        try:
            while True:
                size = await reader.readexactly(4)
                frame = await reader.readexactly(_SIZE.unpack(size)[0])
                api_key, version, correlation = _HEAD.unpack_from(frame, 0)
                pending[correlation] = (api_key, version, frame if self.tap else b"")
                counts = self._counts(node, api_key)
                counts.requests += 1
                counts.request_bytes += 4 + len(frame)
                writer.write(size + frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def _responses(
        self,
        node: int,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        pending: dict[int, tuple[int, int, bytes]],
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
                frame = await reader.readexactly(_SIZE.unpack(size)[0])
                correlation = _SIZE.unpack_from(frame, 0)[0]
                api_key, version, request = pending.pop(correlation, (-1, -1, b""))
                if api_key == ApiKey.METADATA:
                    frame = self._rewrite_metadata(frame, version)
                delay = 0.0
                if api_key in self.delayed_apis:
                    delay = self.delays.get(node, 0.0) / 1000
                now = time.monotonic()
                # Serial: the broker starts on this request only once the previous answer left.
                release = max(release, now) + delay if self.serial else max(release, now + delay)
                queue.put_nowait((release, _SIZE.pack(len(frame)) + frame))
                counts = self._counts(node, api_key)
                counts.responses += 1
                counts.response_bytes += 4 + len(frame)
                if self.tap is not None:
                    self.tap(node, api_key, version, request, frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            queue.put_nowait(None)
            await asyncio.gather(sender, return_exceptions=True)

    def _rewrite_metadata(self, frame: bytes, version: int) -> bytes:
        start = response_body_offset(frame, ApiKey.METADATA, version)
        cls = response_class(ApiKey.METADATA, version)
        response = decode_kio(cls, frame[start:])
        broker_cls = type(response.brokers[0]) if response.brokers else None
        if broker_cls is None:
            return frame
        if self.upstreams:
            # Pass-through: the cluster's own brokers, reached through their proxy ports.
            real = tuple(
                dataclasses.replace(b, host="127.0.0.1", port=self.ports[int(b.node_id)])
                if int(b.node_id) in self.ports
                else b
                for b in response.brokers
            )
            return frame[:start] + encode_kio(dataclasses.replace(response, brokers=real))
        brokers = tuple(
            dataclasses.replace(response.brokers[0], node_id=n, host="127.0.0.1", port=p)
            for n, p in sorted(self.ports.items())
        )
        topics = []
        for topic in response.topics:
            parts = []
            for p in topic.partitions:
                leader = self.leader_of(int(p.partition_index))
                parts.append(
                    dataclasses.replace(
                        p, leader_id=leader, replica_nodes=(leader,), isr_nodes=(leader,)
                    )
                )
            topics.append(dataclasses.replace(topic, partitions=tuple(parts)))
        changes: dict[str, Any] = {"brokers": brokers, "topics": tuple(topics)}
        if hasattr(response, "controller_id"):
            changes["controller_id"] = self.node_ids[0]
        body = encode_kio(dataclasses.replace(response, **changes))
        return frame[:start] + body


def _address(broker: str) -> tuple[str, int]:
    host, port = broker.rsplit(":", 1)
    return host, int(port)
