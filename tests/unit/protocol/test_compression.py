"""Codec round trips, and the framings Kafka clients expect."""

from __future__ import annotations

import os

import cramjam
import pytest
from hypothesis import given
from hypothesis import strategies as st

from brook.protocol.compression import Codec, CompressionError, _xxh32, compress, decompress


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
