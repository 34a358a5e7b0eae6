"""A node's connection to another node, against a loopback server that answers as told: small
and large responses decode (a large one arrives in a buffer of its own), pipelined requests
get their own answers, and garbage or a refused connection is ``NodeUnavailable`` with the next
send connecting again."""

from __future__ import annotations

import asyncio
import struct
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from brook.net.connection import NodeConnection, NodeUnavailable
from brook.protocol.api import ApiKey, response_class
from brook.protocol.build import build
from brook.protocol.framing import encode_kio, frame, peek_api, response_header

METADATA_V12 = 12
REQUEST = {"topics": None, "allow_auto_topic_creation": False}
REQUEST |= {"include_topic_authorized_operations": False}
Answer = Callable[[int, int, int, bytes], bytes | None]


def _metadata_response(topics: int, controller_id: int = 1) -> Any:
    return build(
        response_class(ApiKey.METADATA, METADATA_V12),
        {
            "throttle_time": 0,
            "brokers": [],
            "cluster_id": "c",
            "controller_id": controller_id,
            "cluster_authorized_operations": 0,
            "error_code": 0,
            "topics": [
                {
                    "error_code": 0,
                    "name": f"topic-{i:06d}",
                    "topic_id": uuid.UUID(int=i + 1),
                    "is_internal": False,
                    "partitions": [],
                    "topic_authorized_operations": 0,
                }
                for i in range(topics)
            ],
        },
    )


def _answer_with(response: Any) -> Answer:
    body = encode_kio(response)

    def answer(api_key: int, version: int, correlation: int, _: bytes) -> bytes:
        return frame(response_header(correlation, api_key, version), body)

    return answer


async def _serve(answer: Answer) -> tuple[asyncio.AbstractServer, int]:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                request = await reader.readexactly(size)
                api_key, version, correlation = peek_api(request)
                out = answer(api_key, version, correlation, request)
                if out is None:
                    break
                writer.write(out)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, server.sockets[0].getsockname()[1]


def _run(scenario: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(scenario(), 30))


@pytest.mark.parametrize("topics", [3, 20_000], ids=["small", "larger-than-the-read-buffer"])
def test_a_response_decodes_whatever_its_size(topics: int) -> None:
    async def scenario() -> None:
        expected = _metadata_response(topics)
        assert len(encode_kio(expected)) > 256 * 1024 or topics < 100
        server, port = await _serve(_answer_with(expected))
        conn = NodeConnection("127.0.0.1", port, "test")
        try:
            got = await conn.send(ApiKey.METADATA, METADATA_V12, REQUEST, 10)
            assert [t.name for t in got.topics] == [t.name for t in expected.topics]
        finally:
            conn.close()
            server.close()

    _run(scenario)


def test_pipelined_requests_get_their_own_answers() -> None:
    def answer(api_key: int, version: int, correlation: int, _: bytes) -> bytes:
        # the controller id tells which request this answers
        response = _metadata_response(0, controller_id=correlation)
        return frame(response_header(correlation, api_key, version), encode_kio(response))

    async def scenario() -> None:
        server, port = await _serve(answer)
        conn = NodeConnection("127.0.0.1", port, "test")
        try:
            sends = [conn.send(ApiKey.METADATA, METADATA_V12, REQUEST, 10) for _ in range(20)]
            got = await asyncio.gather(*sends)
            assert [r.controller_id for r in got] == list(range(20))
        finally:
            conn.close()
            server.close()

    _run(scenario)


def test_garbage_fails_the_request_and_the_next_send_connects_again() -> None:
    good = _answer_with(_metadata_response(2))
    answers = iter(
        [
            lambda k, v, c, r: frame(response_header(c, k, v), b"\xff\xff\xff"),
            good,
        ]
    )
    connections = 0

    async def scenario() -> None:
        nonlocal connections
        current: list[Answer] = []

        def answer(api_key: int, version: int, correlation: int, request: bytes) -> bytes | None:
            return current[-1](api_key, version, correlation, request)

        server, port = await _serve(answer)
        conn = NodeConnection("127.0.0.1", port, "test")
        try:
            for expect_failure in (True, False):
                current.append(next(answers))
                if not conn.connected:
                    connections += 1
                if expect_failure:
                    with pytest.raises(NodeUnavailable, match="unreadable response"):
                        await conn.send(ApiKey.METADATA, METADATA_V12, REQUEST, 10)
                    assert not conn.connected
                else:
                    got = await conn.send(ApiKey.METADATA, METADATA_V12, REQUEST, 10)
                    assert len(got.topics) == 2
        finally:
            conn.close()
            server.close()

    _run(scenario)
    assert connections == 2


def test_a_refused_connection_is_node_unavailable() -> None:
    async def scenario() -> None:
        server, port = await _serve(_answer_with(_metadata_response(1)))
        server.close()
        await server.wait_closed()
        conn = NodeConnection("127.0.0.1", port, "test")
        with pytest.raises(NodeUnavailable, match="cannot connect"):
            await conn.send(ApiKey.METADATA, METADATA_V12, REQUEST, 5)
        conn.close()

    _run(scenario)
