"""A segment's sparse time index (Kafka's ``.timeindex``): 12-byte big-endian entries of a
timestamp and the relative offset of the batch that first reached it. Timestamps strictly
increase, so a lookup bisects to where the search for a target timestamp starts.
"""

from __future__ import annotations

import struct
from bisect import bisect_left, bisect_right
from collections.abc import Sequence

from .offset_index import CorruptIndexError, IndexFile, is_sorted_strictly

_ENTRY = struct.Struct(">qi")
NO_TIMESTAMP = -1


def entry_due(last: tuple[int, int] | None, timestamp: int, relative: int) -> bool:
    """Whether an entry (``timestamp``, ``relative`` offset) goes after the ``last`` one
    (None: the index is empty): timestamps strictly increase, offsets never go back, and
    a batch without a timestamp adds nothing. The rule of a segment's index and of the log
    cleaner's writer alike."""
    if timestamp <= NO_TIMESTAMP:
        return False
    return last is None or (timestamp > last[0] and relative >= last[1])


class TimeIndex(IndexFile):
    entry_size = 12

    def _load(self, data: bytes) -> None:
        entries = list(_ENTRY.iter_unpack(data))
        self._timestamps: list[int] = [ts for ts, _ in entries]
        self._offsets: list[int] = [offset for _, offset in entries]

    def __len__(self) -> int:
        return len(self._timestamps)

    def _truncate_entries(self, count: int) -> None:
        del self._timestamps[count:]
        del self._offsets[count:]

    def last_entry(self) -> tuple[int, int]:
        """(timestamp, offset) of the last entry, or (-1, base offset) when empty."""
        if not self._timestamps:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[-1], self.base_offset + self._offsets[-1]

    def entry(self, i: int) -> tuple[int, int]:
        return self._timestamps[i], self.base_offset + self._offsets[i]

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Add an entry if ``timestamp`` is above the last one (and the index has room)."""
        if self.is_full and not skip_full_check:
            return
        relative = offset - self.base_offset
        last = (self._timestamps[-1], self._offsets[-1]) if self._timestamps else None
        if not entry_due(last, timestamp, relative):
            return
        self._write(_ENTRY.pack(timestamp, relative))
        self._timestamps.append(timestamp)
        self._offsets.append(relative)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The entry with the largest timestamp <= ``timestamp``, or (-1, base offset)."""
        i = bisect_right(self._timestamps, timestamp) - 1
        if i < 0:
            return NO_TIMESTAMP, self.base_offset
        return self._timestamps[i], self.base_offset + self._offsets[i]

    def truncate_to(self, offset: int) -> None:
        """Drop the entries that point at ``offset`` or beyond."""
        self.truncate_entries(bisect_left(self._offsets, offset - self.base_offset))

    def reset(self, entries: Sequence[tuple[int, int]] = ()) -> None:
        """Replace every entry by ``entries`` (timestamp, absolute offset)."""
        self.truncate_entries(0)
        base = self.base_offset
        self._timestamps = [ts for ts, _ in entries]
        self._offsets = [offset - base for _, offset in entries]
        if entries:
            self._write(b"".join(_ENTRY.pack(ts, o - base) for ts, o in entries))

    def sanity_check(self, next_offset: int) -> None:
        """Timestamps strictly increasing, offsets ordered and inside the segment."""
        if self.torn:
            raise CorruptIndexError(f"{self.path}: size is not a multiple of {self.entry_size}")
        if not self._timestamps:
            return
        offsets = self._offsets
        if offsets[0] < 0 or self.base_offset + offsets[-1] >= next_offset:
            raise CorruptIndexError(f"{self.path}: entry outside its segment")
        if self._timestamps[0] <= NO_TIMESTAMP:
            raise CorruptIndexError(f"{self.path}: entry without a timestamp")
        if not is_sorted_strictly(self._timestamps) or list(offsets) != sorted(offsets):
            raise CorruptIndexError(f"{self.path}: entries are not increasing")
