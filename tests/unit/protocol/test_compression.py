"""Codec round trips, and the framings Kafka clients expect."""

from __future__ import annotations

import os
import struct

import cramjam
import pytest
from hypothesis import given
from hypothesis import strategies as st

from brook.protocol.compression import (
    Codec,
    CompressionError,
    _xxh32,
    compress,
    decompress,
    decompress_bounded,
)


@given(st.sampled_from(list(Codec)), st.binary(max_size=300_000))
def test_round_trip(codec: Codec, data: bytes) -> None:
    assert decompress(codec, compress(codec, data)) == data


def test_snappy_reads_raw_and_writes_xerial() -> None:
    data = os.urandom(1000) * 50
    assert compress(Codec.SNAPPY, data).startswith(b"\x82SNAPPY\x00")
    assert decompress(Codec.SNAPPY, bytes(cramjam.snappy.compress_raw(data))) == data


def test_lz4_frames_are_standard_and_block_independent() -> None:
    data = b"0123456789" * 30000  # several 64 KiB blocks
    frame = compress(Codec.LZ4, data)
    assert frame[4] & 0x20  # block independence flag
    assert bytes(cramjam.lz4.decompress(frame)) == data


def test_xxh32_reference_values() -> None:
    # Reference values of the xxHash32 specification.
    assert _xxh32(b"") == 0x02CC5D05
    assert _xxh32(b"a") == 0x550D7456
    assert _xxh32(b"abc") == 0x32D153FF
    assert _xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


def test_garbage_raises_a_compression_error() -> None:
    with pytest.raises(CompressionError):
        decompress(Codec.GZIP, b"not gzip at all")


@given(st.sampled_from(list(Codec)), st.binary(max_size=200_000), st.integers(0, 300_000))
def test_bounded_decompression_agrees_within_its_limit(
    codec: Codec, data: bytes, limit: int
) -> None:
    got = decompress_bounded(codec, compress(codec, data), limit)
    assert got == (data if len(data) <= limit else None)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_a_small_batch_that_expands_enormously_is_not_held(codec: Codec) -> None:
    bomb = compress(codec, bytes(50_000_000))
    assert len(bomb) < 3_000_000
    assert decompress_bounded(codec, bomb, 1 << 20) is None
    raw_snappy = bytes(cramjam.snappy.compress_raw(bytes(5_000_000)))
    assert decompress_bounded(Codec.SNAPPY, raw_snappy, 1 << 20) is None
    assert decompress_bounded(Codec.SNAPPY, raw_snappy, 5_000_000) == bytes(5_000_000)


@pytest.mark.parametrize("codec", [Codec.GZIP, Codec.SNAPPY, Codec.LZ4, Codec.ZSTD])
def test_bounded_decompression_of_garbage_is_an_error(codec: Codec) -> None:
    garbage = b"\xff\xff\xff\xff\x0fgarbage, not compressed data"
    if codec == Codec.SNAPPY:  # one xerial block that is not snappy
        garbage = b"\x82SNAPPY\x00" + struct.pack(">iii", 1, 1, len(garbage)) + garbage
    with pytest.raises(CompressionError):
        decompress(codec, garbage)
    with pytest.raises(CompressionError):
        decompress_bounded(codec, garbage, 1 << 20)
