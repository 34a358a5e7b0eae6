"""A hostile "broker" cannot crash Brook's client: a response whose array count is 2^33 or
2^40, a null where the schema has none, a truncated or bit-flipped body, fails that request
(and closes the connection) with an error naming what was wrong, and the process lives.

Each scenario runs in a child process (fork) holding both the fake broker, a loopback socket
that answers the handshake and then sends the scenario's bytes, and Brook's client; before the
schema walk, kio's native reader aborted the child (SIGABRT) on the first of them.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import random
import struct
from collections.abc import Callable
from typing import Any

import pytest
from frame_fuzz import Env, Generator, rewrite_slot

from brook.client.connection import BrokerConnection, ProtocolError
from brook.client.consumer.fetch_request import decode_fetch_response
from brook.protocol.api import ApiKey, request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio, parse_request_header, peek_api
from brook.protocol.primitives import uvarint
from brook.protocol.produce_codec import decode_produce_response

ANSWER_RANGES = {0: (3, 12), 1: (4, 16), 3: (0, 12), 18: (0, 3)}

Body = Callable[[int], bytes]  # request version -> response body


class FakeBroker:
    """Answers ApiVersions (unless told otherwise), then every request with ``body``."""

    def __init__(self, body: Body, api_versions: bytes | None = None) -> None:
        self.body = body
        self.api_versions = api_versions
        self.port = 0

    async def start(self) -> None:
        server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                (size,) = struct.unpack(">i", await reader.readexactly(4))
                frame = await reader.readexactly(size)
                api_key, version, correlation = peek_api(frame)
                cls = request_class(api_key, version)
                parse_request_header(frame, bool(cls.__flexible__))
                flexible_header = api_key != ApiKey.API_VERSIONS and cls.__flexible__
                head = struct.pack(">i", correlation) + (b"\x00" if flexible_header else b"")
                if api_key == ApiKey.API_VERSIONS:
                    body = self.api_versions or _api_versions_body(version)
                else:
                    body = self.body(version)
                writer.write(struct.pack(">i", len(head) + len(body)) + head + body)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _api_versions_body(version: int) -> bytes:
    keys = [
        {"api_key": k, "min_version": lo, "max_version": hi}
        for k, (lo, hi) in ANSWER_RANGES.items()
    ]
    data = {"error_code": 0, "api_keys": keys, "throttle_time": 0}
    return encode_kio(build(response_class(ApiKey.API_VERSIONS, version), data))


def _metadata_v12(brokers_count: bytes) -> bytes:
    # throttle_time_ms, brokers (count + nothing), cluster_id, controller_id, topics, tags
    return struct.pack(">i", 0) + brokers_count + b"\x00" * 16


def _metadata_request() -> dict[str, Any]:
    return {
        "topics": [{"name": "t", "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


async def _metadata(body: Body) -> str:
    broker = FakeBroker(body)
    await broker.start()
    conn = BrokerConnection("127.0.0.1", broker.port)
    await conn.connect()
    try:
        await conn.send(ApiKey.METADATA, _metadata_request())
    except ProtocolError as exc:
        assert conn.closed, "the connection stays open after an unreadable response"
        return str(exc)
    return "no error"


async def _fetch(body: Body) -> str:
    broker = FakeBroker(body)
    await broker.start()
    conn = BrokerConnection("127.0.0.1", broker.port)
    await conn.connect()
    version = conn.version_for(ApiKey.FETCH, 4, 16)
    raw = await conn.submit(
        ApiKey.FETCH,
        version,
        encode_kio(
            build(
                request_class(1, version),
                {
                    "replica_id": -1,
                    "max_wait": 0,
                    "min_bytes": 1,
                    "max_bytes": 1 << 20,
                    "isolation_level": 0,
                    "session_id": 0,
                    "session_epoch": -1,
                    "topics": [],
                    "forgotten_topics_data": [],
                    "rack_id": "",
                },
            )
        ),
    )
    try:
        decode_fetch_response(version, raw, {})
    except ValueError as exc:
        return str(exc)
    return "no error"


async def _produce(body: Body) -> str:
    broker = FakeBroker(body)
    await broker.start()
    conn = BrokerConnection("127.0.0.1", broker.port)
    await conn.connect()
    raw = await conn.submit(ApiKey.PRODUCE, 9, b"\x00\x00\x01\x00\x00\x03\xe8\x01\x00")
    try:
        decode_produce_response(9, raw)
    except ValueError as exc:
        return str(exc)
    return "no error"


async def _handshake(api_versions: bytes) -> str:
    broker = FakeBroker(lambda v: b"", api_versions)
    await broker.start()
    conn = BrokerConnection("127.0.0.1", broker.port)
    try:
        await conn.connect()
    except ProtocolError as exc:
        assert conn.closed
        return str(exc)
    return "no error"


SCENARIOS: dict[str, tuple[Callable[[], Any], str]] = {
    "metadata-count-2^33": (
        lambda: _metadata(lambda v: _metadata_v12(uvarint(2**33 + 1))),
        "MetadataResponse.brokers: tried to allocate a collection of size 8589934592",
    ),
    "metadata-count-2^40": (
        lambda: _metadata(lambda v: _metadata_v12(uvarint(2**40))),
        "MetadataResponse.brokers: varint is longer than 5 bytes",
    ),
    "metadata-count-2^35": (
        lambda: _metadata(lambda v: _metadata_v12(uvarint(2**35 - 1))),
        "tried to allocate a collection of size 34359738366",
    ),
    "metadata-null-brokers": (
        lambda: _metadata(lambda v: _metadata_v12(b"\x00")),
        "MetadataResponse.brokers: non-nullable field was serialized as null",
    ),
    "metadata-truncated": (
        lambda: _metadata(lambda v: struct.pack(">i", 0) + uvarint(3)),
        "MetadataResponse.brokers",
    ),
    "fetch-count-2^33": (
        lambda: _fetch(lambda v: struct.pack(">ihi", 0, 0, 0) + uvarint(2**33 + 1) + b"\x00"),
        "FetchResponse.responses: tried to allocate a collection of size 8589934592",
    ),
    "produce-count-2^40": (
        lambda: _produce(lambda v: uvarint(2**40) + b"\x00" * 8),
        "varint longer than 5 bytes",
    ),
    "produce-count-2^33": (
        lambda: _produce(lambda v: uvarint(2**33 + 1) + b"\x00" * 8),
        "array of 8589934592 elements but only",
    ),
    "api-versions-count-2^33": (
        lambda: _handshake(struct.pack(">h", 0) + uvarint(2**33 + 1) + b"\x00" * 8),
        "ApiVersionsResponse.api_keys: tried to allocate a collection of size 8589934592",
    ),
}


def _child(scenario: Callable[[], Any], conn: Any) -> None:
    try:
        conn.send(("ok", asyncio.run(asyncio.wait_for(scenario(), 20))))
    except BaseException as exc:  # reported to the parent, which fails the test
        conn.send(("raised", f"{type(exc).__name__}: {exc}"))


def _in_child(scenario: Callable[[], Any]) -> tuple[int | None, tuple[str, str] | None]:
    ctx = multiprocessing.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(scenario, child))
    proc.start()
    child.close()
    proc.join(60)
    if proc.is_alive():
        proc.kill()
        proc.join()
    result = parent.recv() if parent.poll() else None
    return proc.exitcode, result


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_a_hostile_response_fails_the_request_not_the_process(name: str) -> None:
    scenario, expected = SCENARIOS[name]
    exitcode, result = _in_child(scenario)
    assert exitcode == 0, f"the client process died (exit code {exitcode})"
    assert result is not None and result[0] == "ok", result
    assert expected in result[1], result[1]


def _decode_mutations(seed: int, rounds: int) -> dict[str, int]:
    """Every response schema kio has (what the client may read), valid bodies mutated:
    counts and lengths rewritten, bits flipped, truncated."""
    rng = random.Random(seed)
    gen = Generator(Env(["t"], [], ["g"]), rng)
    outcomes = {"decoded": 0, "refused": 0}
    classes = [
        c for key in ApiKey for v in range(20) if (c := response_class(int(key), v)) is not None
    ]
    for _ in range(rounds):
        for cls in classes:
            body = gen.body_of(cls)
            pick = rng.random()
            if pick < 0.6 and body.slots:
                data, _ = rewrite_slot(body.data, rng.choice(body.slots), rng)
            elif pick < 0.8:
                flipped = bytearray(body.data)
                if flipped:
                    flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
                data = bytes(flipped)
            else:
                data = body.data[: rng.randrange(0, max(1, len(body.data)))]
            try:
                decode_kio(cls, data)
                outcomes["decoded"] += 1
            except Exception:
                outcomes["refused"] += 1
    for _ in range(rounds * 20):
        version = rng.randrange(3, 13)
        data = bytearray(rng.randbytes(rng.randrange(0, 40)))
        if data and rng.random() < 0.5:
            data[0:0] = uvarint(rng.choice([2**31, 2**33, 2**40]))
        try:
            decode_produce_response(version, bytes(data))
            outcomes["decoded"] += 1
        except ValueError:
            outcomes["refused"] += 1
    return outcomes


def test_mutated_responses_of_every_schema_never_end_the_process() -> None:
    seed = random.randrange(1 << 32)

    async def scenario() -> dict[str, int]:
        return _decode_mutations(seed, 5)

    exitcode, result = _in_child(scenario)
    assert exitcode == 0, f"seed {seed}: the process died (exit code {exitcode})"
    assert result is not None and result[0] == "ok", (seed, result)
    outcomes = result[1]
    assert outcomes["refused"] > 100 and outcomes["decoded"] > 100, (seed, outcomes)
    print(f"seed {seed}: {outcomes}")
