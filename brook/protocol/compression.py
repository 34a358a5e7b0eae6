"""The four codecs of Kafka record batches (gzip, snappy, lz4, zstd), through cramjam.

Framing follows what Kafka's clients write and read:
- snappy: Java writes xerial-framed snappy (a magic header, then length-prefixed raw blocks);
  librdkafka may send raw snappy. Both are read; xerial framing is written.
- lz4: the LZ4 frame format with independent 64 KiB blocks (what Kafka's
  KafkaLZ4BlockOutputStream writes); the frame is written here block by block.
"""

from __future__ import annotations

import enum
import struct

import cramjam


class Codec(enum.IntEnum):
    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


CODEC_BY_NAME = {
    "none": Codec.NONE,
    "uncompressed": Codec.NONE,
    "gzip": Codec.GZIP,
    "snappy": Codec.SNAPPY,
    "lz4": Codec.LZ4,
    "zstd": Codec.ZSTD,
}


class CompressionError(ValueError):
    pass


# ---------------------------------------------------------------- snappy (xerial framing)
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK = 32 * 1024
_BE32 = struct.Struct(">i")


def _snappy_compress(data: bytes) -> bytes:
    out = [_XERIAL_HEADER]
    view = memoryview(data)
    for start in range(0, len(data), _XERIAL_BLOCK):
        block = bytes(cramjam.snappy.compress_raw(view[start : start + _XERIAL_BLOCK]))
        out.append(_BE32.pack(len(block)))
        out.append(block)
    return b"".join(out)


def _snappy_decompress(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    pos = len(_XERIAL_HEADER)
    out = []
    view = memoryview(data)
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError("truncated xerial snappy block length")
        (size,) = _BE32.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CompressionError("truncated xerial snappy block")
        out.append(bytes(cramjam.snappy.decompress_raw(view[pos : pos + size])))
        pos += size
    return b"".join(out)


# ---------------------------------------------------------------- lz4 (frame, independent blocks)
_LZ4_MAGIC = struct.pack("<I", 0x184D2204)
_LZ4_FLG = 0x60  # version 01, block independence, no checksums, no content size
_LZ4_BD = 0x40  # 64 KiB max block size
_LZ4_BLOCK = 64 * 1024
_LE32 = struct.Struct("<I")


def _xxh32(data: bytes, seed: int = 0) -> int:
    """xxHash32, only used for the 2-byte LZ4 frame descriptor checksum."""
    p1, p2, p3, p4, p5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
    mask = 0xFFFFFFFF

    def rotl(x: int, r: int) -> int:
        return ((x << r) | (x >> (32 - r))) & mask

    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + p1 + p2) & mask, (seed + p2) & mask, seed & mask, (seed - p1) & mask]
        while pos + 16 <= n:
            for i in range(4):
                lane = _LE32.unpack_from(data, pos)[0]
                v[i] = (rotl((v[i] + lane * p2) & mask, 13) * p1) & mask
                pos += 4
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) + rotl(v[3], 18)) & mask
    else:
        h = (seed + p5) & mask
    h = (h + n) & mask
    while pos + 4 <= n:
        h = (rotl((h + _LE32.unpack_from(data, pos)[0] * p3) & mask, 17) * p4) & mask
        pos += 4
    while pos < n:
        h = (rotl((h + data[pos] * p5) & mask, 11) * p1) & mask
        pos += 1
    h ^= h >> 15
    h = (h * p2) & mask
    h ^= h >> 13
    h = (h * p3) & mask
    h ^= h >> 16
    return h


_LZ4_HEADER = _LZ4_MAGIC + bytes(
    (_LZ4_FLG, _LZ4_BD, (_xxh32(bytes((_LZ4_FLG, _LZ4_BD))) >> 8) & 0xFF)
)


def _lz4_compress(data: bytes) -> bytes:
    out = [_LZ4_HEADER]
    view = memoryview(data)
    for start in range(0, len(data), _LZ4_BLOCK):
        chunk = view[start : start + _LZ4_BLOCK]
        block = bytes(cramjam.lz4.compress_block(chunk, store_size=False))
        if len(block) >= len(chunk):
            out.append(_LE32.pack(len(chunk) | 0x80000000))
            out.append(bytes(chunk))
        else:
            out.append(_LE32.pack(len(block)))
            out.append(block)
    out.append(b"\x00\x00\x00\x00")
    return b"".join(out)


# ---------------------------------------------------------------- dispatch


def compress(codec: int, data: bytes) -> bytes:
    try:
        if codec == Codec.NONE:
            return data
        if codec == Codec.GZIP:
            return bytes(cramjam.gzip.compress(data))
        if codec == Codec.SNAPPY:
            return _snappy_compress(data)
        if codec == Codec.LZ4:
            return _lz4_compress(data)
        if codec == Codec.ZSTD:
            return bytes(cramjam.zstd.compress(data))
    except cramjam.CompressionError as exc:  # pragma: no cover - cramjam internal failure
        raise CompressionError(str(exc)) from None
    raise CompressionError(f"unknown compression codec {codec}")


def decompress(codec: int, data: bytes | memoryview) -> bytes:
    try:
        if codec == Codec.NONE:
            return bytes(data)
        if codec == Codec.GZIP:
            return bytes(cramjam.gzip.decompress(data))
        if codec == Codec.SNAPPY:
            return _snappy_decompress(bytes(data))
        if codec == Codec.LZ4:
            return bytes(cramjam.lz4.decompress(data))
        if codec == Codec.ZSTD:
            return bytes(cramjam.zstd.decompress(data))
    except cramjam.DecompressionError as exc:
        raise _decompression_error(codec, exc) from None
    raise CompressionError(f"unknown compression codec {codec}")


def _decompression_error(codec: int, exc: Exception) -> CompressionError:
    return CompressionError(f"cannot decompress {Codec(codec).name.lower()} data: {exc}")


# ---------------------------------------------------------------- bounded decompression
_FIRST_OUTPUT = 64 * 1024
_STREAMED = {Codec.GZIP: cramjam.gzip, Codec.LZ4: cramjam.lz4, Codec.ZSTD: cramjam.zstd}
_OUTPUT_FULL = "failed to write whole buffer"  # cramjam's error when the output is too small


# Snappy's densest element, a 64-byte copy, takes 3 bytes: no block expands more than this.
_SNAPPY_MAX_RATIO = 32


def _snappy_block_length(block: bytes | memoryview) -> int:
    length = int(cramjam.snappy.decompress_raw_len(block))
    if length > _SNAPPY_MAX_RATIO * len(block) + 64:
        raise CompressionError(f"snappy block of {len(block)} bytes declares {length}")
    return length


def _snappy_length(data: bytes) -> int:
    """The decompressed size of raw or xerial-framed snappy, from its length headers."""
    if not data.startswith(_XERIAL_MAGIC):
        return _snappy_block_length(data)
    total = 0
    pos = len(_XERIAL_HEADER)
    view = memoryview(data)
    while pos + 4 <= len(data):
        (size,) = _BE32.unpack_from(data, pos)
        pos += 4
        if size < 0 or pos + size > len(data):
            raise CompressionError("truncated xerial snappy block")
        total += _snappy_block_length(view[pos : pos + size])
        pos += size
    return total


def decompress_bounded(codec: int, data: bytes | memoryview, limit: int) -> bytes | None:
    """As :func:`decompress`, but None when the data would decompress to more than ``limit``
    bytes, found without ever holding much more than ``limit`` bytes: a guard against a small
    batch that expands enormously (zstd reaches ratios in the tens of thousands)."""
    module = _STREAMED.get(codec)  # type: ignore[call-overload]
    try:
        if module is None:
            if codec == Codec.SNAPPY and _snappy_length(bytes(data)) > limit:
                return None
            out = decompress(codec, data)
            return out if len(out) <= limit else None
        size = min(limit, max(_FIRST_OUTPUT, 4 * len(data)))
        while True:
            buf = bytearray(size + 1)  # one byte over: a full buffer means "more than size"
            try:
                written = int(module.decompress_into(data, buf))
            except cramjam.DecompressionError as exc:
                if _OUTPUT_FULL not in str(exc):
                    raise
                written = len(buf)
            if written <= size:
                return bytes(memoryview(buf)[:written])
            if size >= limit:
                return None
            size = min(limit, size * 8)
    except cramjam.DecompressionError as exc:
        raise _decompression_error(codec, exc) from None
