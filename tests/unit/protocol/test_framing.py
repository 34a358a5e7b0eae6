"""Request and response headers for flexible and non-flexible versions."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brook.protocol.api import ApiKey
from brook.protocol.framing import (
    FrameAssembler,
    FrameError,
    encode_request,
    parse_request_header,
    response_body_offset,
    response_header,
)


def test_request_header_round_trip_v1_and_v2() -> None:
    for version, flexible in ((5, False), (12, True)):
        frame = encode_request(ApiKey.METADATA, version, 42, "client-1", b"BODY")[4:]
        header = parse_request_header(frame, flexible)
        assert (header.api_key, header.api_version, header.correlation_id, header.client_id) == (
            ApiKey.METADATA,
            version,
            42,
            "client-1",
        )
        assert frame[header.body_offset :] == b"BODY"


def test_null_client_id_and_truncated_frames() -> None:
    frame = encode_request(ApiKey.METADATA, 1, 7, None, b"")[4:]
    assert parse_request_header(frame, False).client_id is None
    with pytest.raises(FrameError):
        parse_request_header(frame[:6], False)
    bad = bytearray(encode_request(ApiKey.METADATA, 1, 7, "abc", b"")[4:])
    bad[9] = 50  # client id length beyond the frame
    with pytest.raises(FrameError):
        parse_request_header(bytes(bad), False)


def test_api_versions_responses_always_use_header_v0() -> None:
    assert response_header(9, ApiKey.API_VERSIONS, 3) == b"\x00\x00\x00\x09"
    assert response_header(9, ApiKey.METADATA, 12) == b"\x00\x00\x00\x09\x00"
    assert response_header(9, ApiKey.METADATA, 8) == b"\x00\x00\x00\x09"
    assert response_body_offset(b"\x00\x00\x00\x09\x00rest", ApiKey.METADATA, 12) == 5
    assert response_body_offset(b"\x00\x00\x00\x09rest", ApiKey.API_VERSIONS, 3) == 4


@given(st.lists(st.binary(max_size=3000), max_size=30), st.data())
def test_frame_assembler_reassembles_any_chunking(
    payloads: list[bytes], data: st.DataObject
) -> None:
    stream = b"".join(len(p).to_bytes(4, "big") + p for p in payloads)
    asm = FrameAssembler(max_frame_size=4000, read_buffer=bytearray(1024))
    out: list[bytes] = []
    pos = 0
    while pos < len(stream):
        view = asm.get_buffer()
        assert len(view) > 0
        n = min(len(view), data.draw(st.integers(1, 2500)), len(stream) - pos)
        view[:n] = stream[pos : pos + n]
        pos += n
        out.extend(bytes(f) for f in asm.buffer_updated(n))
    assert out == payloads


def test_frame_assembler_refuses_oversized_and_negative_sizes() -> None:
    for prefix in ((5000).to_bytes(4, "big"), (-1).to_bytes(4, "big", signed=True)):
        asm = FrameAssembler(max_frame_size=4000)
        asm.get_buffer()[:4] = prefix
        with pytest.raises(FrameError):
            asm.buffer_updated(4)


def _feed(asm: FrameAssembler, data: bytes) -> list[bytes]:
    """Everything in ``data`` through ``asm``, as much per read as its buffers take."""
    out: list[bytes] = []
    pos = 0
    while pos < len(data):
        view = asm.get_buffer()
        n = min(len(view), len(data) - pos)
        view[:n] = data[pos : pos + n]
        pos += n
        out.extend(bytes(f) for f in asm.buffer_updated(n))
    return out


@given(
    st.lists(st.binary(max_size=3000), max_size=20),
    st.lists(st.binary(max_size=3000), max_size=20),
    st.data(),
)
def test_connections_sharing_one_read_buffer_get_their_own_frames(
    first: list[bytes], second: list[bytes], data: st.DataObject
) -> None:
    shared = bytearray(1024)
    streams = [b"".join(len(p).to_bytes(4, "big") + p for p in ps) for ps in (first, second)]
    asms = [FrameAssembler(4000, read_buffer=shared) for _ in streams]
    outs: list[list[bytes]] = [[], []]
    pos = [0, 0]
    while pos[0] < len(streams[0]) or pos[1] < len(streams[1]):
        i = data.draw(st.sampled_from([i for i in (0, 1) if pos[i] < len(streams[i])]))
        view = asms[i].get_buffer()
        n = min(len(view), data.draw(st.integers(1, 1500)), len(streams[i]) - pos[i])
        view[:n] = streams[i][pos[i] : pos[i] + n]
        pos[i] += n
        outs[i].extend(bytes(f) for f in asms[i].buffer_updated(n))
    assert outs == [first, second]
    # Between frames an assembler holds nothing of its own.
    assert [a.buffered for a in asms] == [0, 0]


def test_a_declared_size_is_allocated_as_the_body_arrives() -> None:
    size = 8 * 1024 * 1024
    asm = FrameAssembler(size, read_buffer=bytearray(1024))
    view = asm.get_buffer()
    view[:4] = size.to_bytes(4, "big")
    assert asm.buffer_updated(4) == []
    assert asm.buffered <= 64 * 1024  # not the 8 MiB declared
    body = bytes(range(256)) * (size // 256)
    received = 0
    frames: list[bytes | bytearray] = []
    while received < size:
        view = asm.get_buffer()
        # Never more than twice what has arrived (or the first 64 KiB).
        assert asm.buffered <= max(64 * 1024, 2 * received)
        n = min(len(view), 100_000, size - received)
        view[:n] = body[received : received + n]
        received += n
        frames = asm.buffer_updated(n)
    assert frames == [body]
    assert asm.buffered == 0


class _Pool:
    """A memory pool that records what it is asked and refuses what ``refuse`` says."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, bool]] = []
        self.refuse = False

    def __call__(self, size: int, force: bool) -> bool:
        self.calls.append((size, force))
        return force or not self.refuse


def test_every_frame_is_reserved_and_only_large_incomplete_ones_may_wait() -> None:
    pool = _Pool()
    asm = FrameAssembler(1 << 20, read_buffer=bytearray(1024), reserve=pool)
    small = [b"a" * 10, b"b" * 20]
    assert _feed(asm, b"".join(len(p).to_bytes(4, "big") + p for p in small)) == small
    assert pool.calls == [(30, True)]  # complete frames: taken, whatever the pool holds

    # An incomplete frame no larger than the read buffer is taken too.
    pool.calls.clear()
    pool.refuse = True
    view = asm.get_buffer()
    view[:6] = (900).to_bytes(4, "big") + b"xx"
    assert asm.buffer_updated(6) == []
    assert pool.calls == [(900, True)] and not asm.waiting_for_memory
    assert _feed(asm, b"y" * 898) == [b"xx" + b"y" * 898]

    # A larger one waits for memory with the bytes it has, then goes on.
    pool.calls.clear()
    view = asm.get_buffer()
    view[:8] = (5000).to_bytes(4, "big") + b"head"
    assert asm.buffer_updated(8) == []
    assert asm.waiting_for_memory and pool.calls == [(5000, False)]
    assert asm.reserved == 0
    assert not asm.retry()
    pool.refuse = False
    assert asm.retry() and asm.reserved == 5000
    assert _feed(asm, b"z" * 4996) == [b"head" + b"z" * 4996]
    assert asm.reserved == 0


def test_discard_gives_back_the_reservation_of_an_incomplete_frame() -> None:
    pool = _Pool()
    asm = FrameAssembler(1 << 20, read_buffer=bytearray(1024), reserve=pool)
    view = asm.get_buffer()
    view[:4] = (100_000).to_bytes(4, "big")
    asm.buffer_updated(4)
    assert asm.reserved == 100_000
    assert asm.discard() == 100_000
    assert asm.buffered == 0 and asm.reserved == 0


def test_a_read_while_waiting_for_memory_loses_nothing() -> None:
    """The owner stops reading when a frame waits; if the loop reads once more, the frame
    goes ahead (taken by force) rather than drop bytes."""
    pool = _Pool()
    pool.refuse = True
    asm = FrameAssembler(1 << 20, read_buffer=bytearray(1024), reserve=pool)
    view = asm.get_buffer()
    view[:6] = (3000).to_bytes(4, "big") + b"ab"
    asm.buffer_updated(6)
    assert asm.waiting_for_memory
    assert _feed(asm, b"c" * 2998) == [b"ab" + b"c" * 2998]
    assert pool.calls == [(3000, False), (3000, True)]


def test_a_small_frame_cut_by_a_read_is_carried_into_the_next_read() -> None:
    """A frame of at most a quarter of the read buffer that a read cuts in two goes back to
    the front of the read buffer: the next read completes it and brings more frames, and
    its reservation is taken once it is whole."""
    pool = _Pool()
    asm = FrameAssembler(1 << 20, read_buffer=bytearray(1024), reserve=pool)
    stream = b"".join(len(p).to_bytes(4, "big") + p for p in (b"a" * 100, b"b" * 200, b"c" * 50))
    view = asm.get_buffer()
    view[:150] = stream[:150]
    assert [bytes(f) for f in asm.buffer_updated(150)] == [b"a" * 100]
    assert asm.buffered == 150 - 104 and asm.reserved == 0
    assert pool.calls == [(100, True)]
    view = asm.get_buffer()
    assert len(view) == 1024 - 46  # the rest of the read buffer, after the carried bytes
    rest = stream[150:]
    view[: len(rest)] = rest
    assert [bytes(f) for f in asm.buffer_updated(len(rest))] == [b"b" * 200, b"c" * 50]
    assert pool.calls == [(100, True), (250, True)]
    assert asm.buffered == 0
