"""A segment's sparse offset index (Kafka's ``.index``): 8-byte big-endian entries of relative
offset and file position, mirrored in memory for bisection. ``IndexFile`` is the file handling
the time index shares (Kafka's ``AbstractIndex``).
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from .file_pool import FilePool, shared_pool

_ENTRY = struct.Struct(">ii")


class CorruptIndexError(ValueError):
    """An index file whose entries cannot describe its segment; it gets rebuilt."""


def is_sorted_strictly(values: Sequence[int]) -> bool:
    """True when each value is greater than the one before (C-speed: sort and dedupe)."""
    as_list = list(values)
    return as_list == sorted(set(as_list))


class IndexFile:
    """An append-only file of fixed-size entries, never preallocated, so it is always trimmed.

    Its entries are mirrored in memory, so the file's descriptor is needed only to write: it
    goes back to the pool once the entries are read, and is reopened by the next write."""

    entry_size: ClassVar[int]

    def __init__(
        self, path: Path, base_offset: int, max_index_size: int, files: FilePool | None = None
    ) -> None:
        self.path = path
        self.base_offset = base_offset
        self.max_entries = max(0, max_index_size // self.entry_size)
        pool = shared_pool() if files is None else files
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND
        try:
            size = os.stat(path).st_size
        except FileNotFoundError:
            self.existed = False
            self._file = pool.open(path, flags)  # created empty
            self.torn = False
            self._load(b"")
            self._file.release()
            return
        self.existed = True
        self.torn = size % self.entry_size != 0
        whole = size - size % self.entry_size
        # An empty index is not opened until written to.
        self._file = pool.open(path, flags, lazy=whole == 0)
        try:
            self._load(os.pread(self._file.fd(), whole, 0) if whole else b"")
        except BaseException:
            self._file.close()
            raise
        self._file.release()

    @property
    def closed(self) -> bool:
        return self._file.closed

    def release(self) -> None:
        """Give the descriptor back to the pool; the next write reopens it."""
        self._file.release()

    def _load(self, data: bytes) -> None:
        raise NotImplementedError

    def __len__(self) -> int:
        raise NotImplementedError

    def _truncate_entries(self, count: int) -> None:
        raise NotImplementedError

    @property
    def is_full(self) -> bool:
        return len(self) >= self.max_entries

    def resize(self, max_index_size: int) -> None:
        self.max_entries = max(0, max_index_size // self.entry_size)

    def _write(self, data: bytes) -> None:
        fd = self._file.write_fd()
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]

    def truncate_entries(self, count: int) -> None:
        """Keep the first ``count`` entries, in memory and on disk."""
        if count < len(self) or self.torn:
            self._truncate_entries(count)
            os.ftruncate(self._file.write_fd(), count * self.entry_size)
            self.torn = False

    def roll_back(self, count: int) -> None:
        """Keep the first ``count`` entries and cut the file after them, whatever a failed
        write left there (``truncate_entries`` skips the cut when no whole entry goes)."""
        if count < len(self):
            self._truncate_entries(count)
        os.ftruncate(self._file.write_fd(), count * self.entry_size)
        self.torn = False

    def flush(self) -> None:
        """fsync the file if it was written since the last flush (reopening it if needed)."""
        self._file.sync()

    def close(self) -> None:
        self._file.close()

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def rename(self, path: Path) -> None:
        os.replace(self.path, path)
        self.path = self._file.path = path


class OffsetIndex(IndexFile):
    """Entry i maps the last offset of a batch to the file position where that batch starts."""

    entry_size = 8

    def _load(self, data: bytes) -> None:
        pairs = array("i")
        pairs.frombytes(data)
        if sys.byteorder == "little":
            pairs.byteswap()
        self._offsets: array[int] = pairs[0::2]
        self._positions: array[int] = pairs[1::2]

    def __len__(self) -> int:
        return len(self._offsets)

    def _truncate_entries(self, count: int) -> None:
        del self._offsets[count:]
        del self._positions[count:]

    @property
    def last_offset(self) -> int:
        """The last indexed offset, or the base offset when empty (as Kafka)."""
        return self.base_offset + self._offsets[-1] if self._offsets else self.base_offset

    def entry(self, i: int) -> tuple[int, int]:
        return self.base_offset + self._offsets[i], self._positions[i]

    def append(self, offset: int, position: int) -> None:
        relative = offset - self.base_offset
        if self._offsets and relative <= self._offsets[-1]:
            raise ValueError(f"index offset {offset} not above the last one {self.last_offset}")
        self._write(_ENTRY.pack(relative, position))
        self._offsets.append(relative)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The entry with the largest offset <= ``offset``, or (base offset, 0)."""
        i = bisect_right(self._offsets, offset - self.base_offset) - 1
        if i < 0:
            return self.base_offset, 0
        return self.base_offset + self._offsets[i], self._positions[i]

    def last_position_within(self, position: int, offset: int | None) -> int:
        """The position of the last entry at or before ``position`` whose offset is at most
        ``offset`` (when given), or 0: a batch boundary with whole batches before it."""
        i = bisect_right(self._positions, position) - 1
        if offset is not None:
            i = min(i, bisect_right(self._offsets, offset - self.base_offset) - 1)
        return self._positions[i] if i >= 0 else 0

    def truncate_to_position(self, size: int) -> None:
        """Drop the entries of batches at or after file position ``size``."""
        self.truncate_entries(bisect_left(self._positions, size))

    def reset(self, entries: Sequence[tuple[int, int]] = ()) -> None:
        """Replace every entry by ``entries`` (absolute offset, position), as a rebuild does."""
        self.truncate_entries(0)
        base = self.base_offset
        self._offsets = array("i", [offset - base for offset, _ in entries])
        self._positions = array("i", [position for _, position in entries])
        if entries:
            self._write(b"".join(_ENTRY.pack(o - base, p) for o, p in entries))

    def sanity_check(self, log_size: int) -> None:
        """Entries strictly increasing and inside the segment, else CorruptIndexError."""
        if self.torn:
            raise CorruptIndexError(f"{self.path}: size is not a multiple of {self.entry_size}")
        if not self._offsets:
            return
        if self._offsets[0] < 0 or self._positions[0] < 0 or self._positions[-1] >= log_size:
            raise CorruptIndexError(f"{self.path}: entry outside its segment")
        if not (is_sorted_strictly(self._offsets) and is_sorted_strictly(self._positions)):
            raise CorruptIndexError(f"{self.path}: entries are not increasing")
