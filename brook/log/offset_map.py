"""The log cleaner's offset map (Kafka's ``SkimpyOffsetMap``): each key of a log's dirty part
mapped to the latest offset it was written at, in a fixed memory budget.

Keys are held by their MD5 digest, as Kafka holds them: two keys with the same digest would
be taken for one, a chance Kafka accepts too (2^-128 a pair). The budget is
``log.cleaner.dedupe.buffer.size`` divided between the cleaner threads; Kafka's slots take 24
bytes (digest and offset in one buffer), a key here takes ``ENTRY_BYTES`` (a dict of 16-byte
digests to ints: at most 141 bytes measured, rounded up), so a budget maps fewer keys than
Kafka's and a log with more distinct dirty keys is cleaned in more passes. A dict rather than
an open-addressed table in arrays: the arrays would take Kafka's 24 bytes, but probing them
in Python costs 2.4x the dict's time per key, and the cleaner's speed is mostly this map.
"""

from __future__ import annotations

import hashlib

# Bytes one mapped key takes: the digest (a 16-byte bytes object, 56 with its header), the
# offset (an int object, 32) and the dict's entry and index share, largest just after the
# dict grows (tracemalloc: 110-141 bytes a key from 1,000 to 350,000 keys).
ENTRY_BYTES = 144

_md5 = hashlib.md5


def key_digest(key: bytes) -> bytes:
    """The 16 bytes a key is mapped by."""
    return _md5(key, usedforsecurity=False).digest()


class OffsetMap:
    """At most ``capacity`` keys, each with the latest offset put for it.

    ``latest_offset`` is the highest offset the map speaks for: records above it were not
    read into the map, and the cleaner keeps them whatever their key.
    """

    __slots__ = ("_map", "capacity", "latest_offset", "slots")

    def __init__(self, memory: int, load_factor: float = 0.9) -> None:
        """``memory``: this map's share of log.cleaner.dedupe.buffer.size; ``load_factor``:
        log.cleaner.io.buffer.load.factor, the fraction of the slots the map fills."""
        self.slots = max(1, memory // ENTRY_BYTES)
        self.capacity = max(1, int(self.slots * load_factor))
        self._map: dict[bytes, int] = {}
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self._map)

    @property
    def full(self) -> bool:
        return len(self._map) >= self.capacity

    @property
    def utilization(self) -> float:
        return len(self._map) / self.slots

    def put(self, key: bytes, offset: int) -> None:
        """Map ``key`` to ``offset``. The cleaner checks ``full`` between batches, so a map
        may pass its capacity by the keys of one batch: each pass maps at least one batch
        and always makes progress."""
        self._map[_md5(key, usedforsecurity=False).digest()] = offset

    def put_digest(self, digest: bytes, offset: int) -> None:
        """``put`` for a key whose digest the caller already has."""
        self._map[digest] = offset

    def get(self, key: bytes) -> int:
        """The latest offset of ``key``, or -1 if it is not mapped."""
        return self._map.get(_md5(key, usedforsecurity=False).digest(), -1)

    def get_digest(self, digest: bytes) -> int:
        return self._map.get(digest, -1)

    def update_latest_offset(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset

    def clear(self) -> None:
        """Empty the map (and give its memory back) for the next cleaning."""
        self._map = {}
        self.latest_offset = -1
