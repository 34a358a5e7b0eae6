"""A segment's aborted-transaction index (Kafka's ``.txnindex``): one 34-byte big-endian entry
per transaction aborted in the segment (version int16 0, producer id int64, first offset int64,
last offset int64, last stable offset int64), in the order the abort markers were written.

A read_committed fetch asks every segment from the fetch offset on for the aborted transactions
that overlap what it returns, and stops at the first entry whose last stable offset is past it:
no later segment can hold a transaction aborted below that (Kafka's collectAbortedTxns).

Aborts are rare, so the file is created only by the first one (a segment without one has no
file, as in Kafka) and its entries are mirrored in memory; the descriptor comes from the log's
pool and goes back to it after every write.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .file_pool import FilePool, PooledFile, shared_pool
from .offset_index import CorruptIndexError

TXN_INDEX_SUFFIX = ".txnindex"
ABORTED_TXN_VERSION = 0
_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    """One aborted transaction: its producer, its first and last (the marker's) offsets, and
    the partition's last stable offset once the abort was written."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(
            ABORTED_TXN_VERSION,
            self.producer_id,
            self.first_offset,
            self.last_offset,
            self.last_stable_offset,
        )


def decode_entries(data: bytes | memoryview, path: Path | str = "") -> list[AbortedTxn]:
    """Whole entries of ``data``; CorruptIndexError on a version Kafka would refuse."""
    entries = []
    for pos in range(0, len(data) - len(data) % ENTRY_SIZE, ENTRY_SIZE):
        version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
        if version != ABORTED_TXN_VERSION:
            raise CorruptIndexError(f"{path}: unexpected aborted transaction version {version}")
        entries.append(AbortedTxn(pid, first, last, lso))
    return entries


class TransactionIndex:
    """The aborted transactions of the segment starting at ``base_offset``."""

    def __init__(self, path: Path, base_offset: int, files: FilePool | None = None) -> None:
        self.path = path
        self.base_offset = base_offset
        self._pool = shared_pool() if files is None else files
        self._file: PooledFile | None = None
        self.torn = False
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            self.entries: list[AbortedTxn] = []
            return
        self.torn = size % ENTRY_SIZE != 0
        self._file = self._pool.open(path, os.O_RDWR | os.O_APPEND, lazy=True)
        whole = size - size % ENTRY_SIZE
        try:
            data = os.pread(self._file.fd(), whole, 0) if whole else b""
        except BaseException:
            self._file.close()
            raise
        self._file.release()
        try:
            self.entries = decode_entries(data, path)
        except CorruptIndexError:
            # Fails the sanity check: the segment is recovered and the index rebuilt.
            self.entries = []
            self.torn = True

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def last_offset(self) -> int | None:
        return self.entries[-1].last_offset if self.entries else None

    def append(self, txn: AbortedTxn) -> None:
        """Add an abort; its marker's offset must be above every earlier one (Kafka refuses
        otherwise: the index is searched in order)."""
        last = self.last_offset
        if last is not None and txn.last_offset <= last:
            raise ValueError(
                f"aborted transaction ending at {txn.last_offset} not after the last one {last}"
            )
        if txn.last_offset < self.base_offset:
            raise ValueError(f"aborted transaction ending at {txn.last_offset} before segment")
        self._write(txn.encode())
        self.entries.append(txn)

    def collect(self, fetch_offset: int, upper_bound: int) -> tuple[list[AbortedTxn], bool]:
        """The aborted transactions overlapping [fetch_offset, upper_bound), and whether the
        search is complete (an entry's last stable offset reached ``upper_bound``)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound:
                return found, True
        return found, False

    def truncate_to(self, offset: int) -> None:
        """Drop the aborts whose marker is at or after ``offset`` (the log is cut there)."""
        keep = next(
            (i for i, t in enumerate(self.entries) if t.last_offset >= offset), len(self.entries)
        )
        self._cut(keep)

    def reset(self, entries: Sequence[AbortedTxn] = ()) -> None:
        """Replace every entry (a rebuild from the segment's batches)."""
        self._cut(0)
        for txn in entries:
            self.append(txn)

    def sanity_check(self) -> None:
        """Kafka's check: whole entries, each ending inside this segment or after it."""
        if self.torn:
            raise CorruptIndexError(f"{self.path}: size is not a multiple of {ENTRY_SIZE}")
        for txn in self.entries:
            if txn.last_offset < self.base_offset:
                raise CorruptIndexError(
                    f"{self.path}: last offset {txn.last_offset} of an aborted transaction "
                    f"is below the segment's base offset {self.base_offset}"
                )

    def release(self) -> None:
        if self._file is not None:
            self._file.release()

    def flush(self) -> None:
        if self._file is not None:
            self._file.sync()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, path)
        self.path = path
        if self._file is not None:
            self._file.path = path

    # -------------------------------------------------------------- internals

    def _handle(self) -> PooledFile:
        if self._file is None:
            self._file = self._pool.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        return self._file

    def _write(self, data: bytes) -> None:
        handle = self._handle()
        fd = handle.write_fd()
        view = memoryview(data)
        try:
            while view:
                view = view[os.write(fd, view) :]
        finally:
            handle.release()

    def _cut(self, count: int) -> None:
        if count >= len(self.entries) and not self.torn:
            return
        del self.entries[count:]
        if self._file is not None or self.path.exists():
            handle = self._handle()
            try:
                os.ftruncate(handle.write_fd(), count * ENTRY_SIZE)
            finally:
                handle.release()
        self.torn = False
