"""The cleaner's offset map: the latest offset per key, a fixed number of keys from its memory
budget, and the offsets it speaks for."""

from __future__ import annotations

from brook.log.offset_map import ENTRY_BYTES, OffsetMap, key_digest


def test_latest_offset_per_key() -> None:
    m = OffsetMap(1 << 20)
    assert m.get(b"a") == -1
    m.put(b"a", 3)
    m.put(b"b", 4)
    m.put(b"a", 9)
    assert (m.get(b"a"), m.get(b"b"), len(m)) == (9, 4, 2)
    assert m.get_digest(key_digest(b"a")) == 9
    m.put_digest(key_digest(b"c"), 10)
    assert m.get(b"c") == 10


def test_capacity_comes_from_the_memory_budget_and_load_factor() -> None:
    m = OffsetMap(ENTRY_BYTES * 100, load_factor=0.5)
    assert (m.slots, m.capacity) == (100, 50)
    for n in range(49):
        m.put(b"k%d" % n, n)
    assert not m.full
    m.put(b"k0", 99)  # a key already mapped moves to a later offset, and takes no room
    assert not m.full and m.get(b"k0") == 99
    m.put(b"k49", 49)
    assert m.full and m.utilization == 0.5


def test_latest_offset_only_moves_up_and_clear_resets() -> None:
    m = OffsetMap(1 << 20)
    assert m.latest_offset == -1
    m.update_latest_offset(10)
    m.update_latest_offset(5)
    assert m.latest_offset == 10
    m.put(b"a", 1)
    m.clear()
    assert (m.latest_offset, len(m), m.get(b"a")) == (-1, 0, -1)


def test_a_tiny_budget_still_maps_one_key() -> None:
    m = OffsetMap(1)
    assert m.capacity == 1 and not m.full
    m.put(b"a", 0)
    assert m.full
