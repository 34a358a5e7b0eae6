"""A segment the log cleaner writes on its own thread: the kept batches of a group of
segments in one ``<base>.log.cleaned`` file, with the offset and time indexes a
``LogSegment`` would have built for the same appends and, when an abort marker stays, the
``.txnindex`` entries of those aborts (Kafka's cleaned index), all synced before the swap.

Its files do not go through the node's descriptor pool: the pool hands descriptors to one
thread at a time (see file_pool.py), and the cleaner's few (one file written, one segment
read at a time per thread) come from the descriptors the node keeps in reserve.
"""

from __future__ import annotations

import os
import struct

from .swap import CleanedFiles
from .time_index import NO_TIMESTAMP, entry_due
from .txn_index import TXN_INDEX_SUFFIX, AbortedTxn

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")
_WRITE_CHUNK = 1 << 20


class CleanedSegmentWriter:
    """Appends whole batches (in offset order) to a new segment at ``files.base_offset``."""

    def __init__(self, files: CleanedFiles, index_interval_bytes: int, max_index_size: int) -> None:
        self.files = files
        self.base_offset = files.base_offset
        self.index_interval_bytes = index_interval_bytes
        self._max_offset_entries = max_index_size // _OFFSET_ENTRY.size
        self._max_time_entries = max_index_size // _TIME_ENTRY.size
        self._offset_entries: list[tuple[int, int]] = []  # (relative offset, position)
        self._time_entries: list[tuple[int, int]] = []  # (timestamp, relative offset)
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = NO_TIMESTAMP
        self._offset_of_max_timestamp = self.base_offset
        self._bytes_since_index = 0
        self._pending: list[bytes | memoryview] = []
        self._aborted: list[AbortedTxn] = []
        self._pending_bytes = 0
        files.discard()  # what an earlier, interrupted cleaning may have left
        self._fd = os.open(
            files.path(".log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644
        )

    def append(self, data: bytes | memoryview, last_offset: int, max_timestamp: int) -> None:
        """One whole batch: ``LogSegment._account``'s index rules, the data buffered."""
        if max_timestamp > self.max_timestamp:
            self.max_timestamp = max_timestamp
            self._offset_of_max_timestamp = last_offset
        full = (
            len(self._offset_entries) >= self._max_offset_entries
            or len(self._time_entries) >= self._max_time_entries
        )
        if self._bytes_since_index > self.index_interval_bytes and not full:
            self._offset_entries.append((last_offset - self.base_offset, self.size))
            self._maybe_time_entry()
            self._bytes_since_index = 0
        self._bytes_since_index += len(data)
        self.size += len(data)
        self.next_offset = last_offset + 1
        self._pending.append(data)
        self._pending_bytes += len(data)
        if self._pending_bytes >= _WRITE_CHUNK:
            self._write_pending()

    def add_aborted(self, txn: AbortedTxn) -> None:
        """The ``.txnindex`` entry of an abort whose marker this segment keeps (in marker
        order, as the batches are appended)."""
        self._aborted.append(txn)

    def _maybe_time_entry(self, skip_full_check: bool = False) -> None:
        """``TimeIndex.maybe_append`` with the largest timestamp so far."""
        entries = self._time_entries
        timestamp = self.max_timestamp
        relative = self._offset_of_max_timestamp - self.base_offset
        if not skip_full_check and len(entries) >= self._max_time_entries:
            return
        if entry_due(entries[-1] if entries else None, timestamp, relative):
            entries.append((timestamp, relative))

    def _write_pending(self) -> None:
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_bytes = 0
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def finish(self, mtime_ns: int | None = None) -> None:
        """Write what is buffered and both indexes, end the time index as a rolled segment's
        (``on_become_inactive``), fsync the three files; ``mtime_ns`` becomes the log
        file's modification time (the last replaced segment's, as Kafka keeps it: it ages
        segments without timestamps)."""
        self._write_pending()
        self._maybe_time_entry(skip_full_check=True)
        os.fsync(self._fd)
        os.close(self._fd)
        self._fd = -1
        files = self.files
        written = [
            (".index", b"".join(_OFFSET_ENTRY.pack(*e) for e in self._offset_entries)),
            (".timeindex", b"".join(_TIME_ENTRY.pack(*e) for e in self._time_entries)),
        ]
        if self._aborted:  # no file without an entry, as a segment without aborts
            written.append((TXN_INDEX_SUFFIX, b"".join(t.encode() for t in self._aborted)))
        for suffix, packed in written:
            fd = os.open(
                files.path(suffix), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o644
            )
            try:
                view = memoryview(packed)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
        if mtime_ns is not None:
            os.utime(files.path(".log"), ns=(mtime_ns, mtime_ns))

    def abort(self) -> None:
        """Close and remove what was written."""
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.files.discard()
