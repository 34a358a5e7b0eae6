"""One partition's batch in the making: records encoded straight into its buffer at send(), its
estimated wire size (KIP-794 counts it), and the v2 header stamped when it is drained.

Records are encoded once, in the caller's thread, with offset and timestamp deltas relative to
the batch's first record; the header (61 bytes) is built at drain time, when the producer id,
epoch and sequence are known, and restamped if a retry has to re-sequence the batch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from brook.protocol.batch import (
    CODEC_MASK,
    HEADER_SIZE,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TRANSACTIONAL_BIT,
)
from brook.protocol.compression import Codec, compress
from brook.protocol.primitives import uvarint
from brook.protocol.records import _crecords, batch_header

from .record import ProduceResult, RecordFuture

__all__ = [
    "RECORD_OVERHEAD",
    "CompressionRatioEstimator",
    "ProducerBatch",
    "encode_headers",
    "encode_record_body",
]

Headers = Sequence[tuple[str, bytes | None]]

# Java's MemoryRecordsBuilder: the estimate pads the observed compression ratio by 5%.
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05
_IMPROVING_STEP = 0.005
_DETERIORATE_STEP = 0.05


# A record's length prefix, attributes and two deltas, generously: Java's upper bound, used
# for the max.request.size check and the memory a new batch reserves.
RECORD_OVERHEAD = 21

# Zig-zag varints of small values, the common case for every record field.
_ZZ_CACHE = 1 << 14
_ZZ = [uvarint(z) for z in range(_ZZ_CACHE)]
_NULL = b"\x01"  # varint(-1)


def _zz(value: int) -> bytes:
    z = (value << 1) ^ (value >> 63)
    return _ZZ[z] if z < _ZZ_CACHE else uvarint(z)


def encode_headers(headers: Headers) -> bytes:
    """Header count and headers of one record, as they follow its value."""
    parts = [_zz(len(headers))]
    for hkey, hvalue in headers:
        encoded = hkey.encode("utf-8")
        parts.append(_zz(len(encoded)))
        parts.append(encoded)
        if hvalue is None:
            parts.append(_NULL)
        else:
            parts.append(_zz(len(hvalue)))
            parts.append(bytes(hvalue))
    return b"".join(parts)


def _encode_record_body_py(key: bytes | None, value: bytes | None, headers: bytes | None) -> bytes:
    """A record from its key length to its end: key, value and the encoded header section
    (None = no headers); the batch puts length, attributes and deltas in front."""
    if key is None:
        kpart = _NULL
    else:
        klen = len(key)
        kpart = (_ZZ[klen << 1] if klen < 8192 else _zz(klen)) + key
    if value is None:
        return kpart + _NULL + (headers or b"\x00")
    vlen = len(value)
    if headers is None:
        return b"".join((kpart, _ZZ[vlen << 1] if vlen < 8192 else _zz(vlen), value, b"\x00"))
    return b"".join((kpart, _ZZ[vlen << 1] if vlen < 8192 else _zz(vlen), value, headers))


def _append_record_py(
    buf: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    body: bytes,
    limit: int,
    factor: float,
) -> int:
    """Append one record (length, attributes, deltas, then ``body``) to ``buf``; return the
    estimated size of all its records: their bytes, times ``factor`` when factor > 0 (their
    estimated compressed size). When offset_delta > 0 and that would pass ``limit``, append
    nothing and return -1."""
    ts = _ZZ[timestamp_delta << 1] if 0 <= timestamp_delta < 8192 else _zz(timestamp_delta)
    od = _ZZ[offset_delta << 1] if 0 <= offset_delta < 8192 else _zz(offset_delta)
    size = 1 + len(ts) + len(od) + len(body)
    prefix = _ZZ[size << 1] if size < 8192 else _zz(size)
    written = len(buf) + size + len(prefix)
    estimated = int(written * factor) if factor > 0 else written
    if offset_delta > 0 and estimated > limit:
        return -1
    buf += prefix
    buf += b"\x00"
    buf += ts
    buf += od
    buf += body
    return estimated


# The C versions (same contracts) when the extension was built.
if _crecords is None:
    encode_record_body = _encode_record_body_py
    _append_record = _append_record_py
else:
    encode_record_body = _crecords.encode_record_body
    _append_record = _crecords.append_record


class CompressionRatioEstimator:
    """Per-topic estimated compression ratio of each codec (Java's CompressionRatioEstimator):
    moves down slowly, up fast, toward each closed batch's observed ratio."""

    def __init__(self) -> None:
        self._ratios: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()

    def estimate(self, topic: str, codec: int) -> float:
        return self._ratios.get((topic, codec), 1.0)

    def update(self, topic: str, codec: int, observed: float) -> float:
        with self._lock:
            current = self._ratios.get((topic, codec), 1.0)
            if observed > current:
                current = max(current + _DETERIORATE_STEP, observed)
            elif observed < current:
                current = max(current - _IMPROVING_STEP, observed)
            self._ratios[(topic, codec)] = current
            return current


class ProducerBatch:
    """Records for one partition; see the module docstring.

    Appends happen under the partition deque's lock; once drained the batch is closed and only
    the sender touches it.
    """

    __slots__ = (
        "alloc_size",
        "attempts",
        "attempts_when_leader_changed",
        "base_sequence",
        "base_timestamp",
        "buf",
        "closed",
        "codec",
        "compressed_size",
        "count",
        "created_ms",
        "current_leader_epoch",
        "estimate_factor",
        "estimated",
        "header",
        "in_flight_node",
        "last_attempt_ms",
        "max_record_size",
        "max_timestamp",
        "payload",
        "producer_epoch",
        "producer_id",
        "result",
        "retry_backoff_ms",
        "sequence_reset",
        "tp",
        "transactional",
        "write_limit",
    )

    def __init__(
        self,
        tp: tuple[str, int],
        created_ms: float,
        write_limit: int,
        codec: int = Codec.NONE,
        ratio_estimate: float = 1.0,
        alloc_size: int = 0,
    ) -> None:
        self.tp = tp
        self.result = ProduceResult(tp[0], tp[1])
        self.buf = bytearray()
        self.count = 0
        self.base_timestamp = 0
        self.max_timestamp = -1
        self.created_ms = created_ms
        self.last_attempt_ms = created_ms
        self.write_limit = write_limit
        self.codec = codec
        # Java's estimatedBytesWritten: uncompressed bytes x estimated ratio x 1.05; 0.0 for
        # an uncompressed batch, whose bytes count as they are.
        self.estimate_factor = ratio_estimate * COMPRESSION_RATE_ESTIMATION_FACTOR if codec else 0.0
        self.alloc_size = alloc_size
        self.estimated = HEADER_SIZE
        self.closed = False
        self.attempts = 0
        self.retry_backoff_ms = 0.0
        self.current_leader_epoch = -1
        self.attempts_when_leader_changed = 0
        self.producer_id = NO_PRODUCER_ID
        self.producer_epoch = -1
        self.base_sequence = NO_SEQUENCE
        self.sequence_reset = False
        self.max_record_size = 0  # the longest record body appended
        self.header: bytes | None = None
        self.payload: bytes | bytearray | None = None
        self.compressed_size = 0
        self.in_flight_node = -1
        self.transactional = False

    def __repr__(self) -> str:
        return (
            f"<ProducerBatch {self.tp[0]}-{self.tp[1]} records={self.count} "
            f"seq={self.base_sequence} attempts={self.attempts}>"
        )

    # -- appending (under the deque lock) --------------------------------------------------

    def estimated_size(self) -> int:
        """Estimated bytes on the wire, the 61-byte header included."""
        return self.estimated

    def is_full(self) -> bool:
        """Closed for appends, or at its size limit (Java's ProducerBatch.isFull)."""
        return self.closed or (self.count > 0 and self.write_limit <= self.estimated)

    def try_append(
        self,
        timestamp: int,
        body: bytes,
        key_size: int,
        value_size: int,
        callback: Callable[..., Any] | None,
    ) -> RecordFuture | None:
        """Append one record; None (and the batch closes) when it does not fit.

        ``body`` is the record from its key length on (see :func:`encode_record_body`): the
        part that does not depend on the batch, encoded once in the caller's thread.
        """
        if self.closed:
            return None
        count = self.count
        if not count:
            self.base_timestamp = timestamp
        estimated = _append_record(
            self.buf,
            count,
            timestamp - self.base_timestamp,
            body,
            self.write_limit - HEADER_SIZE,
            self.estimate_factor,
        )
        if estimated < 0:
            self.closed = True
            return None
        self.estimated = HEADER_SIZE + estimated
        self.count = count + 1
        if timestamp > self.max_timestamp:
            self.max_timestamp = timestamp
        if len(body) > self.max_record_size:
            self.max_record_size = len(body)
        future = RecordFuture(self.result, count, timestamp, key_size, value_size)
        if callback is not None:
            # No lock needed: the batch is open, nothing can complete it meanwhile.
            self.result._callbacks.append((future, callback, True))  # type: ignore[union-attr]
        return future

    def close(self) -> None:
        """No more appends; compress the records (once) so the wire size is known."""
        self.closed = True
        if self.payload is None:
            if self.codec:
                self.payload = compress(self.codec, self.buf)
                self.compressed_size = len(self.payload)
            else:
                self.payload = self.buf
                self.compressed_size = len(self.buf)

    # -- idempotence -----------------------------------------------------------------------

    @property
    def has_sequence(self) -> bool:
        return self.base_sequence != NO_SEQUENCE

    @property
    def last_sequence(self) -> int:
        return (self.base_sequence + self.count - 1) & 0x7FFFFFFF

    def set_producer_state(self, producer_id: int, epoch: int, base_sequence: int) -> None:
        self.producer_id = producer_id
        self.producer_epoch = epoch
        self.base_sequence = base_sequence
        self.header = None

    def reset_producer_state(self, producer_id: int, epoch: int, base_sequence: int) -> None:
        """Re-sequence an in-flight batch after an epoch bump (its payload stays as it is)."""
        self.sequence_reset = True
        self.set_producer_state(producer_id, epoch, base_sequence)

    # -- retries and KIP-951 ---------------------------------------------------------------

    def maybe_update_leader_epoch(self, epoch: int) -> bool:
        """Note a newer leader epoch from the metadata; the retry it starts skips backoff."""
        if epoch >= 0 and epoch > self.current_leader_epoch:
            self.current_leader_epoch = epoch
            self.attempts_when_leader_changed = self.attempts
            return True
        return False

    def leader_changed_for_ongoing_retry(self) -> bool:
        attempts = self.attempts
        return attempts >= 1 and attempts == self.attempts_when_leader_changed

    def reenqueued(self, now_ms: float, backoff_ms: float) -> None:
        self.attempts += 1
        self.last_attempt_ms = now_ms
        self.retry_backoff_ms = backoff_ms
        self.in_flight_node = -1

    # -- wire form -------------------------------------------------------------------------

    def wire(self) -> tuple[bytes, bytes | bytearray]:
        """(61-byte header, records) ready to send; the records are never copied."""
        if self.payload is None:
            self.close()
        payload = self.payload
        assert payload is not None
        header = self.header
        if header is None:
            header = self.header = batch_header(
                payload,
                attributes=(self.codec & CODEC_MASK)
                | (TRANSACTIONAL_BIT if self.transactional else 0),
                count=self.count,
                base_timestamp=self.base_timestamp,
                max_timestamp=self.max_timestamp,
                producer_id=self.producer_id,
                producer_epoch=self.producer_epoch,
                base_sequence=self.base_sequence,
            )
        return header, payload

    def wire_size(self) -> int:
        if self.payload is None:
            self.close()
        assert self.payload is not None
        return HEADER_SIZE + len(self.payload)

    def compression_ratio(self) -> float:
        """Compressed / uncompressed record bytes (1.0 without compression)."""
        if not self.codec or not self.buf:
            return 1.0
        return self.compressed_size / len(self.buf)

    # -- completion ------------------------------------------------------------------------

    def done(
        self,
        base_offset: int,
        log_append_time: int,
        error: BaseException | None,
        record_errors: Callable[[int], BaseException] | None = None,
    ) -> bool:
        return self.result.complete(base_offset, log_append_time, error, record_errors)

    @property
    def is_done(self) -> bool:
        return self.result.done
