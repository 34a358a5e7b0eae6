"""BrokerConnection against a scripted loopback broker: handshake, pipelining, failures."""

from __future__ import annotations

import asyncio
import socket
import struct
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from scripted_broker import Request, ScriptedBroker, metadata_response

from brook.client.connection import (
    BrokerConnection,
    NetworkError,
    ProtocolError,
    RequestTimeoutError,
    UnsupportedVersionError,
)
from brook.protocol.errors import KafkaError

METADATA = 3


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coro, 20))  # type: ignore[arg-type]


def metadata_request(topic: str) -> dict[str, Any]:
    return {
        "topics": [{"name": topic, "topic_id": None}],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False,
    }


def echo_topic(broker: ScriptedBroker, req: Request) -> None:
    """Answer a Metadata request with the requested topic name as the cluster id."""
    broker.respond(req, metadata_response(req.decode().topics[0].name))


async def connected(broker: ScriptedBroker, **kw: Any) -> BrokerConnection:
    conn = BrokerConnection("127.0.0.1", broker.port, **kw)
    await conn.connect()
    return conn


def with_broker(
    script: Callable[[ScriptedBroker, Request], Any] | None = None, **broker_kw: Any
) -> Callable[[Callable[..., Awaitable[None]]], Callable[[], None]]:
    """Run an async test body with a fresh scripted broker."""

    def wrap(body: Callable[..., Awaitable[None]]) -> Callable[[], None]:
        def test() -> None:
            async def main() -> None:
                async with ScriptedBroker(script, **broker_kw) as broker:
                    await body(broker)

            run(main())

        test.__name__ = body.__name__
        return test

    return wrap


# ---- handshake and version negotiation ---------------------------------------------------------


@with_broker(echo_topic)
async def test_handshake_records_broker_ranges(broker: ScriptedBroker) -> None:
    conn = await connected(broker, client_id="me")
    assert conn.ready and conn.api_versions_version == 3
    assert conn.api_versions[METADATA] == (0, 12)
    first = broker.requests[0]
    assert (first.api_key, first.version) == (18, 3)
    request = first.decode()
    assert request.client_software_name == "brook" and request.client_software_version
    conn.close()


@with_broker(echo_topic)
async def test_version_for(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    assert conn.version_for(METADATA) == 12  # client max 13, broker max 12
    assert conn.version_for(METADATA, 1, 9) == 9
    assert conn.version_for(19) == 7
    with pytest.raises(
        UnsupportedVersionError,
        match=rf"{broker.address} supports create_topics "
        r"v2-7, this client needs v0-1",
    ) as info:
        conn.version_for(19, 0, 1)
    assert info.value.name == "UNSUPPORTED_VERSION" and not info.value.retriable
    with pytest.raises(UnsupportedVersionError, match="does not support create_partitions"):
        conn.version_for(37)
    assert conn.supports(METADATA, 12) and not conn.supports(METADATA, 13)
    conn.close()


@with_broker(echo_topic, ranges={18: (0, 2), 3: (0, 9)})
async def test_api_versions_fallback_to_advertised_max(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    assert [r.version for r in broker.requests_for(18)] == [3, 2]
    assert conn.api_versions_version == 2 and conn.api_versions[METADATA] == (0, 9)
    response = await conn.send(METADATA, metadata_request("x"))
    assert response.cluster_id == "x" and type(response).__version__ == 9
    conn.close()


@with_broker(echo_topic, ranges={18: (0, 1), 3: (0, 5)}, advertise_on_error=False)
async def test_api_versions_fallback_to_v0_without_a_range(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    assert [r.version for r in broker.requests_for(18)] == [3, 0]
    assert conn.api_versions[METADATA] == (0, 5)
    conn.close()


@with_broker(api_versions_error=31)
async def test_api_versions_error_fails_connect(broker: ScriptedBroker) -> None:
    with pytest.raises(KafkaError, match=f"CLUSTER_AUTHORIZATION_FAILED.*{broker.address}"):
        await connected(broker)


@with_broker(silent=True)
async def test_handshake_timeout(broker: ScriptedBroker) -> None:
    with pytest.raises(
        NetworkError,
        match=f"connection to {broker.address} failed: no ApiVersions response within 200 ms",
    ) as info:
        await connected(broker, connect_timeout_ms=200)
    assert info.value.retriable


def test_connection_refused_names_address() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def main() -> None:
        conn = BrokerConnection("127.0.0.1", port)
        with pytest.raises(
            NetworkError,
            match=rf"connection to 127\.0\.0\.1:{port} failed: "
            r"\[Errno 111\] Connection refused",
        ) as info:
            await conn.connect()
        assert info.value.name == "NETWORK_EXCEPTION" and info.value.retriable
        assert conn.closed and not conn.ready

    run(main())


# ---- pipelining and framing --------------------------------------------------------------------


def answer_in_batches(n: int, reverse: bool) -> Callable[[ScriptedBroker, Request], None]:
    """Hold Metadata requests until ``n`` are in flight, then answer them all at once."""
    held: list[Request] = []

    def script(broker: ScriptedBroker, req: Request) -> None:
        held.append(req)
        if len(held) == n:
            batch = reversed(held) if reverse else held
            payload = b"".join(
                broker.encode_response(r, metadata_response(r.decode().topics[0].name))
                for r in batch
            )
            held[0].writer.write(payload)  # many responses in one segment
            held.clear()

    return script


@pytest.mark.parametrize("reverse", [False, True])
def test_pipelined_requests_matched_by_correlation_id(reverse: bool) -> None:
    async def main() -> None:
        async with ScriptedBroker(answer_in_batches(50, reverse)) as broker:
            conn = await connected(broker)
            sends = [conn.send(METADATA, metadata_request(f"t{i}")) for i in range(100)]
            responses = await asyncio.gather(*sends)
            assert [r.cluster_id for r in responses] == [f"t{i}" for i in range(100)]
            # All 50 of a batch were in flight at once: the broker saw them before answering.
            assert len(broker.requests_for(METADATA)) == 100
            assert conn.in_flight == 0
            conn.close()

    run(main())


def trickle(broker: ScriptedBroker, req: Request) -> None:
    """Send the response one byte at a time."""
    data = broker.encode_response(req, metadata_response("slow"))

    async def send() -> None:
        for i in range(len(data)):
            req.writer.write(data[i : i + 1])
            await req.writer.drain()
            if i % 16 == 0:
                await asyncio.sleep(0.001)

    broker.spawn(send())


@with_broker(trickle)
async def test_response_split_across_reads(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    assert (await conn.send(METADATA, metadata_request("a"))).cluster_id == "slow"
    conn.close()


def tagged_header(broker: ScriptedBroker, req: Request) -> None:
    """A flexible response whose header carries an unknown tagged field the client must skip."""
    body = broker.encode_response(req, metadata_response("tagged"))[8 + 1 :]  # size, corr, tags
    header = struct.pack(">i", req.correlation_id) + b"\x01\x05\x03abc"
    req.writer.write(struct.pack(">i", len(header) + len(body)) + header + body)


@with_broker(tagged_header)
async def test_flexible_response_header_tagged_fields_skipped(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    response = await conn.send(METADATA, metadata_request("a"), version=12)
    assert response.cluster_id == "tagged"
    conn.close()


def raw_echo(broker: ScriptedBroker, req: Request) -> None:
    if req.api_key == 0:
        return  # acks=0 produce: no response
    broker.respond(req, b"echo:" + req.body)


@with_broker(raw_echo)
async def test_send_raw_and_no_response(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    conn.send_no_response(0, 9, b"produce-bytes")
    assert conn.in_flight == 0
    body = await conn.send_raw(METADATA, 1, [b"\x00\x00", memoryview(b"\x00\x01"), b"x"])
    assert body == b"echo:\x00\x00\x00\x01x"
    produce = broker.requests_for(0)
    assert len(produce) == 1 and produce[0].body == b"produce-bytes"
    future = conn.submit(METADATA, 1, b"abc")
    assert await future == b"echo:abc"
    conn.close()


# ---- failures ----------------------------------------------------------------------------------


def close_on_third(broker: ScriptedBroker, req: Request) -> None:
    if len(broker.requests_for(METADATA)) == 3:
        req.writer.transport.abort()


@with_broker(close_on_third)
async def test_broker_closing_fails_every_in_flight_request(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    results = await asyncio.gather(
        *(conn.send(METADATA, metadata_request(f"t{i}")) for i in range(3)),
        return_exceptions=True,
    )
    for result in results:
        assert isinstance(result, NetworkError) and result.retriable
        assert f"connection to {broker.address} lost" in str(result)
    assert conn.closed and not conn.ready and conn.in_flight == 0
    # A broken connection is never used again.
    with pytest.raises(NetworkError, match=f"connection to {broker.address} lost"):
        await conn.send(METADATA, metadata_request("again"))
    with pytest.raises(NetworkError):
        conn.submit(METADATA, 1, b"")


def late_first(broker: ScriptedBroker, req: Request) -> None:
    """Answer the first Metadata request only after the second (and after its timeout)."""
    name = req.decode().topics[0].name
    if name == "slow":

        async def later() -> None:
            await asyncio.sleep(0.3)
            broker.respond(req, metadata_response("slow"))

        broker.spawn(later())
    else:
        broker.respond(req, metadata_response(name))


@with_broker(late_first)
async def test_request_timeout_fails_only_that_request(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    slow = asyncio.ensure_future(conn.send(METADATA, metadata_request("slow"), timeout_ms=100))
    fast = await conn.send(METADATA, metadata_request("fast"))
    assert fast.cluster_id == "fast"
    with pytest.raises(RequestTimeoutError, match=f"metadata v12 request to {broker.address}") as e:
        await slow
    assert e.value.retriable and e.value.name == "REQUEST_TIMED_OUT"
    await asyncio.sleep(0.4)  # the late response arrives and is dropped
    assert conn.ready
    assert (await conn.send(METADATA, metadata_request("after"))).cluster_id == "after"
    conn.close()


@with_broker(lambda broker, req: None)
async def test_client_close_fails_in_flight(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    pending = asyncio.ensure_future(conn.send(METADATA, metadata_request("x")))
    await asyncio.sleep(0.05)
    conn.close()
    with pytest.raises(NetworkError, match="closed by the client"):
        await pending


def bad_frame(broker: ScriptedBroker, req: Request) -> None:
    req.writer.write(struct.pack(">ii", 2, req.correlation_id))


@with_broker(bad_frame)
async def test_malformed_frame_closes_connection(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    with pytest.raises(NetworkError, match="invalid response frame size 2"):
        await conn.send(METADATA, metadata_request("x"))
    assert conn.closed


def garbage_body(broker: ScriptedBroker, req: Request) -> None:
    broker.respond(req, b"\x00")


@with_broker(garbage_body)
async def test_undecodable_response_is_a_protocol_error(broker: ScriptedBroker) -> None:
    conn = await connected(broker)
    with pytest.raises(
        ProtocolError, match=f"cannot decode metadata v12 response from {broker.address}"
    ):
        await conn.send(METADATA, metadata_request("x"))
    conn.close()
