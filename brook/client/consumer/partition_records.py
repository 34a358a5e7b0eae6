"""One partition's part of a Fetch response, turned into records lazily, batch by batch, as
poll() asks for them (Java's CompletedFetch): CRCs checked when check.crcs, batches
decompressed, control batches and aborted transactions (read_committed) skipped, and records
before the fetch position inside the first batch dropped."""

from __future__ import annotations

import gc
import heapq
from collections.abc import Callable, Sequence
from typing import Any

from brook.protocol.batch import (
    CODEC_MASK,
    CONTROL_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    CorruptBatch,
    batch_size_at,
    check_batch,
    read_header,
)
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import batch_payload, decode_records_into

from ..cluster import TopicPartition
from .errors import RecordDeserializationError
from .record import ConsumerRecord

__all__ = ["PartitionRecords"]

_new = tuple.__new__
Deserializer = Callable[[Any], Any] | None


class PartitionRecords:
    """Records of ``tp`` from ``records`` (the raw bytes the broker sent), starting at
    ``fetch_offset``. ``take`` hands them out; ``next_offset`` is the position after them."""

    __slots__ = (
        "_aborted",
        "_aborted_producers",
        "_check_crcs",
        "_data",
        "_error",
        "_key_deserializer",
        "_pending",
        "_pending_at",
        "_pending_next",
        "_pos",
        "_read_committed",
        "_value_deserializer",
        "assignment_id",
        "consumed",
        "epoch",
        "fetch_offset",
        "next_offset",
        "tp",
    )

    def __init__(
        self,
        tp: TopicPartition,
        fetch_offset: int,
        records: bytes,
        *,
        check_crcs: bool = True,
        read_committed: bool = False,
        aborted_transactions: Sequence[tuple[int, int]] = (),
        key_deserializer: Deserializer = None,
        value_deserializer: Deserializer = None,
        assignment_id: int = 0,
    ) -> None:
        self.tp = tp
        self.fetch_offset = fetch_offset
        self.next_offset = fetch_offset
        self.epoch = -1
        self.assignment_id = assignment_id
        self._data = records
        self._pos = 0
        self._check_crcs = check_crcs
        self._read_committed = read_committed
        # (first offset, producer id) of aborted transactions, earliest first.
        self._aborted = [(first, pid) for pid, first in aborted_transactions]
        heapq.heapify(self._aborted)
        self._aborted_producers: set[int] = set()
        self._error: KafkaError | None = None
        self._pending: list[ConsumerRecord] = []
        self._pending_at = 0
        self._pending_next = fetch_offset
        self._key_deserializer = key_deserializer
        self._value_deserializer = value_deserializer
        self.consumed = not records

    @property
    def size(self) -> int:
        """Bytes of the partition's fetched records."""
        return len(self._data)

    def __repr__(self) -> str:
        return f"<PartitionRecords {self.tp.topic}-{self.tp.partition} next={self.next_offset}>"

    def take(self, max_records: int) -> list[ConsumerRecord]:
        """Up to ``max_records`` records; sets ``consumed`` when none are left.

        A bad batch after good ones: the good records are handed out first and the error is
        raised by the next call (as Java's CompletedFetch), the position staying at the bad
        batch until the application seeks past it.
        """
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        out: list[ConsumerRecord] = []
        while len(out) < max_records and not self.consumed:
            if self._pending_at >= len(self._pending):
                try:
                    more = self._next_batch()
                except KafkaError as exc:
                    if not out:
                        raise
                    self._error = exc
                    break
                if not more:
                    self.consumed = True
                    break
            pending = self._pending
            start = self._pending_at
            stop = min(len(pending), start + max_records - len(out))
            chunk = pending[start:stop] if start or stop < len(pending) else pending
            short = False
            if self._key_deserializer is not None or self._value_deserializer is not None:
                wanted = stop - start
                chunk = self._deserialize(chunk, out)
                stop = start + len(chunk)
                short = len(chunk) < wanted
            out.extend(chunk)
            self._pending_at = stop
            if stop >= len(pending):
                self.next_offset = max(self.next_offset, self._pending_next)
            elif chunk:
                self.next_offset = chunk[-1][2] + 1
            if short:
                break  # a record that does not deserialize: the next take raises for it
        return out

    def _deserialize(
        self, chunk: list[ConsumerRecord], taken: list[ConsumerRecord]
    ) -> list[ConsumerRecord]:
        kd, vd = self._key_deserializer, self._value_deserializer
        result = []
        for r in chunk:
            try:
                key = r[5] if kd is None else kd(r[5])
                value = r[6] if vd is None else vd(r[6])
            except Exception as exc:
                if result or taken:
                    break  # hand out what came before; the next take raises
                self.next_offset = r[2]
                raise RecordDeserializationError(self.tp, r[2], exc) from exc
            result.append(_new(ConsumerRecord, (*r[:5], key, value, *r[7:])))
        return result

    def _next_batch(self) -> bool:
        """Decode the next batch that has records at or after the position; False at the end."""
        data = self._data
        end = len(data)
        while True:
            pos = self._pos
            size = batch_size_at(data, pos)
            if size < 0 or pos + size > end or end - pos < HEADER_SIZE:
                if pos == 0 and end:
                    # Not even one whole batch: a pre-KIP-74 broker cut the first batch short.
                    raise KafkaError(
                        Errors.MESSAGE_TOO_LARGE,
                        f"the first batch at offset {self.fetch_offset} of "
                        f"{self.tp.topic}-{self.tp.partition} is larger than the fetch size; "
                        "raise max.partition.fetch.bytes",
                    )
                return False
            header = self._header(pos, pos + size)
            self.epoch = header.partition_leader_epoch
            if header.next_offset <= self.next_offset:
                self._pos = pos + size
                continue
            if self._skip(header, pos):
                self._pos = pos + size
                self.next_offset = header.next_offset
                continue
            records: list[ConsumerRecord] = []
            # Thousands of new tuples would trigger the cyclic GC many times per batch, and
            # none can be part of a cycle: decoding runs with it paused (about 1.4x faster).
            gc_was_enabled = gc.isenabled()
            gc.disable()
            try:
                if header.attributes & CODEC_MASK:
                    payload, first, last = batch_payload(data, pos, header), 0, None
                else:
                    payload, first, last = data, pos + HEADER_SIZE, pos + size
                decode_records_into(
                    records,
                    ConsumerRecord,
                    payload,
                    header.records_count,
                    base_offset=header.base_offset,
                    base_timestamp=header.base_timestamp,
                    topic=self.tp.topic,
                    partition=self.tp.partition,
                    timestamp_type=1 if header.attributes & TIMESTAMP_TYPE_BIT else 0,
                    leader_epoch=header.partition_leader_epoch,
                    min_offset=self.next_offset,
                    log_append_time=(
                        header.max_timestamp if header.attributes & TIMESTAMP_TYPE_BIT else None
                    ),
                    start=first,
                    end=last,
                )
            except CorruptBatch as exc:
                # The position stays at this batch: every later take raises for it again.
                raise self._corrupt(header.base_offset, str(exc)) from None
            finally:
                if gc_was_enabled:
                    gc.enable()
            self._pos = pos + size
            self._pending = records
            self._pending_at = 0
            self._pending_next = header.next_offset
            if records:
                return True
            self.next_offset = header.next_offset

    def _header(self, pos: int, end: int) -> BatchHeader:
        try:
            if self._check_crcs:
                return check_batch(self._data, pos, end)
            header = read_header(self._data, pos)
        except CorruptBatch as exc:
            base = int.from_bytes(self._data[pos : pos + 8], "big", signed=True)
            raise self._corrupt(base, str(exc)) from None
        if header.magic != MAGIC:
            raise self._corrupt(header.base_offset, f"unsupported magic {header.magic}")
        if header.batch_length + LOG_OVERHEAD < HEADER_SIZE:
            raise self._corrupt(header.base_offset, "batch shorter than its header")
        return header

    def _skip(self, header: BatchHeader, pos: int) -> bool:
        """Control batches always; batches of aborted transactions under read_committed."""
        control = bool(header.attributes & CONTROL_BIT)
        if not self._read_committed:
            return control
        aborted = self._aborted
        while aborted and aborted[0][0] <= header.last_offset:
            self._aborted_producers.add(heapq.heappop(aborted)[1])
        if control:
            # The abort marker ends the producer's aborted transaction (a commit ends nothing
            # that was aborted).
            if self._control_type(header, pos) == 0:
                self._aborted_producers.discard(header.producer_id)
            return True
        return bool(
            header.attributes & TRANSACTIONAL_BIT and header.producer_id in self._aborted_producers
        )

    def _control_type(self, header: BatchHeader, pos: int) -> int:
        # A control record's key is (version int16, type int16): 0 abort, 1 commit.
        records: list[ConsumerRecord] = []
        try:
            payload = batch_payload(self._data, pos, header)
            decode_records_into(
                records, ConsumerRecord, payload, header.records_count,
                base_offset=header.base_offset, base_timestamp=header.base_timestamp,
                topic=self.tp.topic, partition=self.tp.partition, timestamp_type=0,
                leader_epoch=-1,
            )  # fmt: skip
        except CorruptBatch:
            return -1
        key = records[0][5] if records else None
        if not key or len(key) < 4:
            return -1
        return int.from_bytes(key[2:4], "big", signed=True)

    def _corrupt(self, offset: int, why: str) -> KafkaError:
        return KafkaError(
            Errors.CORRUPT_MESSAGE,
            f"record batch at offset {offset} of {self.tp.topic}-{self.tp.partition} is "
            f"corrupt: {why}",
        )

    def drain(self) -> None:
        """Drop what is left (the partition was sought, paused or unassigned)."""
        self.consumed = True
        self._pending = []
        self._data = b""
