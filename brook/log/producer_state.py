"""Producer state of a partition (Kafka's ``ProducerStateManager``): each producer id's epoch
and last five batches, to reject fenced or out-of-order appends and answer retries with their
original offsets; ``<offset>.snapshot`` files bound the log scan that rebuilds it.

Transactions (KIP-98): each producer's open transaction (the offset of its first batch), ended
by a COMMIT or ABORT marker, which yields a ``CompletedTxn``; the first offset no
read_committed consumer may pass yet (``first_unstable_offset``): the start of the earliest
transaction still open, or ended by a marker not yet below the high watermark.
"""

from __future__ import annotations

import os
import struct
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from crc32c import crc32c

from brook.protocol.batch import NO_SEQUENCE, BatchHeader
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.txn_marker import TxnMarker

from .checkpoints import write_atomically
from .txn_verification import VerificationStates

NUM_BATCHES_TO_RETAIN = 5
NO_PRODUCER_EPOCH = -1
MAX_SEQUENCE = 2**31 - 1
SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 2
_V1 = 1

_SNAPSHOT_HEADER = struct.Struct(">hIi")  # version, crc32c of everything after it, entry count
_ENTRY = struct.Struct(">qhqB")  # producer id, epoch, last timestamp, batch count
# v2 adds, after each entry's batches: coordinator epoch, open transaction's first offset (-1)
_TXN = struct.Struct(">iq")
_BATCH = struct.Struct(">iiqiq")  # first seq, last seq, last offset, offset delta, timestamp


class CorruptSnapshotError(ValueError):
    """A snapshot file that fails its CRC or framing."""


@dataclass(slots=True)
class BatchMetadata:
    first_seq: int
    last_seq: int
    last_offset: int
    offset_delta: int
    timestamp: int

    @property
    def first_offset(self) -> int:
        return self.last_offset - self.offset_delta


@dataclass(slots=True)
class ProducerEntry:
    producer_id: int
    epoch: int = NO_PRODUCER_EPOCH
    batches: deque[BatchMetadata] = field(
        default_factory=lambda: deque(maxlen=NUM_BATCHES_TO_RETAIN)
    )
    last_timestamp: int = -1
    # The epoch of the transaction coordinator whose marker was last written for this producer.
    coordinator_epoch: int = -1
    # The first offset of the producer's open transaction, if one is open.
    current_txn_first_offset: int | None = None

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else NO_SEQUENCE

    def find_duplicate(self, epoch: int, first_seq: int, last_seq: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == first_seq and batch.last_seq == last_seq:
                return batch
        return None


@dataclass(frozen=True, slots=True)
class CompletedTxn:
    """A transaction ended by the marker at ``last_offset``."""

    producer_id: int
    first_offset: int
    last_offset: int
    aborted: bool


def snapshot_path(directory: Path, offset: int) -> Path:
    return directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == MAX_SEQUENCE)


class ProducerStateManager:
    """State for the batches below ``map_end_offset``."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.producers: dict[int, ProducerEntry] = {}
        self.map_end_offset = 0
        self._unsynced: list[Path] = []
        # Ended transactions whose marker is not yet below the high watermark, by first offset.
        self.unreplicated: dict[int, CompletedTxn] = {}
        # KIP-890: producers whose first transactional batch here is being verified.
        self.verifications = VerificationStates()

    def __len__(self) -> int:
        return len(self.producers)

    def last_entry(self, producer_id: int) -> ProducerEntry | None:
        return self.producers.get(producer_id)

    # ------------------------------------------------------------------ appends
    def check_append(self, header: BatchHeader) -> BatchMetadata | None:
        """Validate a client's batch against its producer's state, before it is written.

        Returns the original batch when this one is a retry of it (nothing must be written);
        raises INVALID_PRODUCER_EPOCH or OUT_OF_ORDER_SEQUENCE_NUMBER; a producer this
        partition does not know (new, or its state expired) may start at any sequence.
        """
        entry = self.producers.get(header.producer_id)
        if entry is None:
            return None
        epoch, first_seq = header.producer_epoch, header.base_sequence
        duplicate = entry.find_duplicate(epoch, first_seq, header.last_sequence)
        if duplicate is not None:
            return duplicate
        if epoch < entry.epoch:
            raise KafkaError(
                Errors.INVALID_PRODUCER_EPOCH,
                f"epoch {epoch} of producer {header.producer_id} is older than {entry.epoch}",
            )
        if entry.epoch == NO_PRODUCER_EPOCH:
            return None
        if epoch != entry.epoch:
            if first_seq != 0:
                raise KafkaError(
                    Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"new epoch {epoch} of producer {header.producer_id} starts at sequence "
                    f"{first_seq}, not 0",
                )
        elif not _in_sequence(entry.last_seq, first_seq):
            raise KafkaError(
                Errors.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {header.producer_id} sent sequence {first_seq} after {entry.last_seq}",
            )
        if entry.current_txn_first_offset is not None and not header.is_transactional:
            raise KafkaError(
                Errors.INVALID_TXN_STATE,
                f"expected a transactional write from producer {header.producer_id}: its "
                f"transaction begun at offset {entry.current_txn_first_offset} is open",
            )
        return None

    def check_marker(self, marker: TxnMarker) -> None:
        """Validate a marker written as leader (WriteTxnMarkers): INVALID_PRODUCER_EPOCH for an
        epoch older than the producer's, TRANSACTION_COORDINATOR_FENCED for a coordinator epoch
        older than the last marker's (a coordinator that lost its partition)."""
        entry = self.producers.get(marker.producer_id)
        if entry is None:
            return
        if marker.producer_epoch < entry.epoch:
            raise KafkaError(
                Errors.INVALID_PRODUCER_EPOCH,
                f"marker epoch {marker.producer_epoch} of producer {marker.producer_id} is "
                f"older than {entry.epoch}",
            )
        if marker.coordinator_epoch < entry.coordinator_epoch:
            raise KafkaError(
                Errors.TRANSACTION_COORDINATOR_FENCED,
                f"marker of coordinator epoch {marker.coordinator_epoch} for producer "
                f"{marker.producer_id} after one of epoch {entry.coordinator_epoch}",
            )

    def update(
        self,
        header: BatchHeader,
        base_offset: int,
        timestamp: int,
        marker: TxnMarker | None = None,
    ) -> CompletedTxn | None:
        """Record a written batch of a producer (``base_offset`` and ``timestamp`` as stored);
        ``marker`` is what a transaction marker batch says. Returns the transaction a marker
        ends (none for a marker of a producer with nothing open, as Kafka)."""
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = self.producers[header.producer_id] = ProducerEntry(header.producer_id)
        if header.producer_epoch != entry.epoch:
            entry.epoch = header.producer_epoch
            entry.batches.clear()
        entry.last_timestamp = timestamp
        if header.is_transactional:
            # the transaction is open here now, or ended: a verification in flight is stale
            self.verifications.clear(header.producer_id)
        if marker is not None:
            completed = None
            if entry.current_txn_first_offset is not None:
                completed = CompletedTxn(
                    header.producer_id,
                    entry.current_txn_first_offset,
                    base_offset + header.last_offset_delta,
                    not marker.commit,
                )
                self.unreplicated[completed.first_offset] = completed
            entry.current_txn_first_offset = None
            entry.coordinator_epoch = max(entry.coordinator_epoch, marker.coordinator_epoch)
            return completed
        if header.is_transactional and entry.current_txn_first_offset is None:
            entry.current_txn_first_offset = base_offset
        if not header.is_control:
            delta = header.last_offset_delta
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    base_offset + delta,
                    delta,
                    timestamp,
                )
            )
        return None

    # ------------------------------------------------------------------ transactions
    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest transaction open, or ended by a marker not yet
        replicated; None when there is none (the last stable offset is then the HW)."""
        firsts = [
            e.current_txn_first_offset
            for e in self.producers.values()
            if e.current_txn_first_offset is not None
        ]
        firsts.extend(self.unreplicated)
        return min(firsts, default=None)

    def last_stable_offset_after(self, completed: CompletedTxn) -> int:
        """The LSO once ``completed`` has ended (what its ``.txnindex`` entry records): the
        start of the earliest transaction still open by another producer, else just past the
        marker (Kafka's ProducerStateManager.lastStableOffset)."""
        others = [
            e.current_txn_first_offset
            for e in self.producers.values()
            if e.current_txn_first_offset is not None and e.producer_id != completed.producer_id
        ]
        return min(others, default=completed.last_offset + 1)

    def on_high_watermark(self, high_watermark: int) -> None:
        """Forget the ended transactions whose marker is now below the high watermark."""
        if self.unreplicated:
            self.unreplicated = {
                first: txn
                for first, txn in self.unreplicated.items()
                if txn.last_offset >= high_watermark
            }

    def replay(
        self,
        headers: Iterable[BatchHeader],
        read_marker: Callable[[BatchHeader], TxnMarker | None] | None = None,
        on_completed: Callable[[CompletedTxn], None] | None = None,
    ) -> None:
        """Rebuild from batches read back from the log; ``read_marker`` reads what a
        transactional control batch says, ``on_completed`` is told each transaction it ends."""
        for header in headers:
            if header.producer_id >= 0:
                marker = None
                if header.is_control and header.is_transactional and read_marker is not None:
                    marker = read_marker(header)
                completed = self.update(header, header.base_offset, header.max_timestamp, marker)
                if completed is not None and on_completed is not None:
                    on_completed(completed)
            self.map_end_offset = header.next_offset

    def remove_expired(self, now_ms: int, max_age_ms: int) -> int:
        # A producer with an open transaction is kept, as in Kafka: its transaction holds
        # the last stable offset until its marker comes.
        expired = [
            pid
            for pid, e in self.producers.items()
            if now_ms - e.last_timestamp >= max_age_ms and e.current_txn_first_offset is None
        ]
        for pid in expired:
            del self.producers[pid]
        self.verifications.expire(now_ms, max_age_ms)
        return len(expired)

    # ------------------------------------------------------------------ snapshots
    def snapshot_offsets(self) -> list[int]:
        offsets = []
        for path in self.dir.glob(f"*{SNAPSHOT_SUFFIX}"):
            stem = path.name[: -len(SNAPSHOT_SUFFIX)]
            if stem.isdigit():
                offsets.append(int(stem))
        return sorted(offsets)

    def take_snapshot(self, sync: bool = False) -> None:
        """Write the state at ``map_end_offset`` (``sync_snapshots`` fsyncs it later unless
        ``sync``)."""
        path = snapshot_path(self.dir, self.map_end_offset)
        write_atomically(path, self._encode(), sync=sync)
        if not sync:
            self._unsynced.append(path)

    def sync_snapshots(self) -> None:
        pending, self._unsynced = self._unsynced, []
        for path in pending:
            try:
                fd = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    def _encode(self) -> bytes:
        parts = []
        for entry in self.producers.values():
            count = len(entry.batches)
            parts.append(_ENTRY.pack(entry.producer_id, entry.epoch, entry.last_timestamp, count))
            parts.extend(
                _BATCH.pack(b.first_seq, b.last_seq, b.last_offset, b.offset_delta, b.timestamp)
                for b in entry.batches
            )
            first = entry.current_txn_first_offset
            parts.append(_TXN.pack(entry.coordinator_epoch, -1 if first is None else first))
        body = struct.pack(">i", len(self.producers)) + b"".join(parts)
        return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + body

    @staticmethod
    def _decode(data: bytes) -> dict[int, ProducerEntry]:
        try:
            version, crc, count = _SNAPSHOT_HEADER.unpack_from(data, 0)
            if version not in (_V1, SNAPSHOT_VERSION) or crc != crc32c(memoryview(data)[6:]):
                raise CorruptSnapshotError("bad version or CRC")
            producers: dict[int, ProducerEntry] = {}
            pos = _SNAPSHOT_HEADER.size
            for _ in range(count):
                pid, epoch, last_ts, n = _ENTRY.unpack_from(data, pos)
                pos += _ENTRY.size
                entry = ProducerEntry(pid, epoch, last_timestamp=last_ts)
                for _b in range(n):
                    entry.batches.append(BatchMetadata(*_BATCH.unpack_from(data, pos)))
                    pos += _BATCH.size
                if version >= SNAPSHOT_VERSION:
                    coordinator_epoch, first = _TXN.unpack_from(data, pos)
                    pos += _TXN.size
                    entry.coordinator_epoch = coordinator_epoch
                    entry.current_txn_first_offset = None if first < 0 else first
                producers[pid] = entry
        except struct.error as exc:
            raise CorruptSnapshotError(str(exc)) from None
        if pos != len(data):
            raise CorruptSnapshotError("trailing bytes")
        return producers

    def load(self, log_start_offset: int, log_end_offset: int, at_most: int | None = None) -> int:
        """Reset to the latest readable snapshot at or below the log end (dropping later or
        corrupt ones), and at or below ``at_most`` if given (a replay that must cover what is
        after it); returns the offset from which the log must be replayed."""
        self.producers = {}
        self.unreplicated = {}
        self.delete_snapshots_after(log_end_offset)
        limit = log_end_offset if at_most is None else min(at_most, log_end_offset)
        for offset in reversed(self.snapshot_offsets()):
            if offset > limit:
                continue
            path = snapshot_path(self.dir, offset)
            try:
                self.producers = self._decode(path.read_bytes())
            except (CorruptSnapshotError, OSError):
                path.unlink(missing_ok=True)
                continue
            self.map_end_offset = max(offset, log_start_offset)
            return self.map_end_offset
        self.map_end_offset = log_start_offset
        return log_start_offset

    def delete_snapshots_after(self, offset: int) -> None:
        """Remove the snapshots of offsets above ``offset``."""
        for snap in self.snapshot_offsets():
            if snap > offset:
                snapshot_path(self.dir, snap).unlink(missing_ok=True)

    def delete_snapshots_before(self, offset: int) -> None:
        for snap in self.snapshot_offsets():
            if snap < offset:
                snapshot_path(self.dir, snap).unlink(missing_ok=True)

    def truncate_fully(self, offset: int) -> None:
        """Forget everything: the log now starts empty at ``offset``."""
        self.producers = {}
        self.unreplicated = {}
        self.map_end_offset = offset
        self.delete_snapshots_after(-1)
