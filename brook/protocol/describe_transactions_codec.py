"""DescribeTransactions v0 responses read by hand.

kio types TransactionStartTimeMs as a timestamp and refuses to read a negative one, but Kafka
sends -1 there for a transactional id with no transaction running (Empty, and after
InitProducerId), so a client decoding with kio could not describe such an id. This reader
keeps the field an int (-1: none), checks every length and count against the bytes that
remain, and skips tagged fields, as Kafka's reader does.
"""

from __future__ import annotations

from dataclasses import dataclass

from .primitives import INT16, INT32, INT64, read_uvarint, skip_tagged_fields

__all__ = ["MAX_VERSION", "DescribedTransaction", "read_describe_transactions_response"]

MAX_VERSION = 0  # the layout read here; a newer version is not asked for

_INT64_SIZE, _INT32_SIZE, _INT16_SIZE = 8, 4, 2


@dataclass(frozen=True, slots=True)
class DescribedTransaction:
    """One TransactionState entry, fields as on the wire."""

    error_code: int
    transactional_id: str
    transaction_state: str
    transaction_timeout_ms: int
    transaction_start_time_ms: int
    producer_id: int
    producer_epoch: int
    topics: tuple[tuple[str, tuple[int, ...]], ...]


class _Reader:
    def __init__(self, data: bytes | memoryview) -> None:
        self.data = memoryview(data)
        self.pos = 0

    def _take(self, size: int) -> int:
        start = self.pos
        if start + size > len(self.data):
            raise ValueError("DescribeTransactions response ends early")
        self.pos = start + size
        return start

    def int16(self) -> int:
        return int(INT16.unpack_from(self.data, self._take(_INT16_SIZE))[0])

    def int32(self) -> int:
        return int(INT32.unpack_from(self.data, self._take(_INT32_SIZE))[0])

    def int64(self) -> int:
        return int(INT64.unpack_from(self.data, self._take(_INT64_SIZE))[0])

    def count(self, item_size: int) -> int:
        """A compact array's length; each item needs at least ``item_size`` bytes."""
        raw, self.pos = read_uvarint(self.data, self.pos)
        if raw == 0:
            raise ValueError("null array in a DescribeTransactions response")
        count = raw - 1
        if count * item_size > len(self.data) - self.pos:
            raise ValueError(f"array of {count} items longer than the response")
        return count

    def string(self) -> str:
        raw, self.pos = read_uvarint(self.data, self.pos)
        if raw == 0:
            raise ValueError("null string in a DescribeTransactions response")
        start = self._take(raw - 1)
        return bytes(self.data[start : self.pos]).decode("utf-8")

    def tags(self) -> None:
        self.pos = skip_tagged_fields(self.data, self.pos)


def read_describe_transactions_response(
    body: bytes | memoryview,
) -> tuple[int, list[DescribedTransaction]]:
    """(throttle time, states) of a v0 response body (header removed); ValueError when the
    bytes are not one."""
    r = _Reader(body)
    throttle = r.int32()
    states = []
    for _ in range(r.count(1)):
        error_code = r.int16()
        tid = r.string()
        state = r.string()
        timeout = r.int32()
        start = r.int64()
        producer_id = r.int64()
        epoch = r.int16()
        topics = []
        for _ in range(r.count(1)):
            topic = r.string()
            partitions = tuple(r.int32() for _ in range(r.count(_INT32_SIZE)))
            r.tags()
            topics.append((topic, partitions))
        r.tags()
        states.append(
            DescribedTransaction(
                error_code, tid, state, timeout, start, producer_id, epoch, tuple(topics)
            )
        )
    r.tags()
    if r.pos != len(r.data):
        raise ValueError("bytes left after a DescribeTransactions response")
    return throttle, states
