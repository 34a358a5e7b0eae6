"""The leader-epoch cache: assignment rules, end offset for an epoch, truncation, the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from brook.log.epoch_cache import LeaderEpochCache


def _cache(tmp_path: Path, *entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path / "leader-epoch-checkpoint")
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def test_assign_only_new_epochs_or_earlier_starts(tmp_path: Path) -> None:
    cache = _cache(tmp_path)
    assert cache.latest_epoch() is None
    assert cache.assign(2, 10)
    assert not cache.assign(2, 15)
    assert cache.assign(2, 5)
    assert cache.assign(3, 20)
    assert cache.entries() == [(2, 5), (3, 20)]
    assert cache.latest_entry() == (3, 20)
    assert cache.earliest_entry() == (2, 5)


def test_assign_removes_contradicted_entries(tmp_path: Path) -> None:
    cache = _cache(tmp_path, (1, 0), (3, 10), (5, 20))
    cache.assign(4, 15)
    assert cache.entries() == [(1, 0), (3, 10), (4, 15)]
    cache.assign(6, 12)
    assert cache.entries() == [(1, 0), (3, 10), (6, 12)]
    with pytest.raises(ValueError):
        cache.assign(-1, 0)


def test_the_file_follows_every_change(tmp_path: Path) -> None:
    _cache(tmp_path, (0, 0), (4, 120))
    path = tmp_path / "leader-epoch-checkpoint"
    assert path.read_text() == "0\n2\n0 0\n4 120\n"
    reloaded = LeaderEpochCache(path)
    assert reloaded.loaded_cleanly and reloaded.entries() == [(0, 0), (4, 120)]


@pytest.mark.parametrize(
    "text", ["garbage", "0\n2\n0 0\n", "0\n2\n3 0\n1 10\n", "0\n2\n1 10\n2 5\n", "0\n1\n-1 0\n"]
)
def test_unreadable_or_disordered_file_is_flagged(tmp_path: Path, text: str) -> None:
    path = tmp_path / "leader-epoch-checkpoint"
    path.write_text(text)
    cache = LeaderEpochCache(path)
    assert not cache.loaded_cleanly and cache.is_empty()


def test_missing_file_is_flagged(tmp_path: Path) -> None:
    assert not LeaderEpochCache(tmp_path / "leader-epoch-checkpoint").loaded_cleanly


def test_end_offset_for(tmp_path: Path) -> None:
    empty = _cache(tmp_path)
    assert empty.end_offset_for(3, 100) == (-1, -1)
    cache = _cache(tmp_path, (2, 10), (4, 30), (7, 50))
    leo = 80
    assert cache.end_offset_for(7, leo) == (7, leo)
    assert cache.end_offset_for(4, leo) == (4, 50)
    assert cache.end_offset_for(2, leo) == (2, 30)
    # an epoch between known ones ends where the next higher epoch starts
    assert cache.end_offset_for(5, leo) == (4, 50)
    assert cache.end_offset_for(3, leo) == (2, 30)
    # below every known epoch: the requested epoch and the first start offset
    assert cache.end_offset_for(1, leo) == (1, 10)
    assert cache.end_offset_for(8, leo) == (-1, -1)
    assert cache.end_offset_for(-1, leo) == (-1, -1)


def test_truncate_from_end(tmp_path: Path) -> None:
    cache = _cache(tmp_path, (2, 10), (4, 30), (7, 50))
    cache.truncate_from_end(51)
    assert cache.latest_epoch() == 7
    cache.truncate_from_end(30)
    assert cache.entries() == [(2, 10)]
    assert LeaderEpochCache(tmp_path / "leader-epoch-checkpoint").entries() == [(2, 10)]


def test_truncate_from_start(tmp_path: Path) -> None:
    cache = _cache(tmp_path, (2, 10), (4, 30), (7, 50))
    cache.truncate_from_start(5)
    assert cache.entries() == [(2, 10), (4, 30), (7, 50)]
    cache.truncate_from_start(35)
    assert cache.entries() == [(4, 35), (7, 50)]
    cache.truncate_from_start(50)
    assert cache.entries() == [(7, 50)]
    cache.truncate_from_start(60)
    assert cache.entries() == [(7, 60)]


def test_epoch_for_offset_and_clear(tmp_path: Path) -> None:
    cache = _cache(tmp_path, (2, 10), (4, 30))
    assert cache.epoch_for_offset(5) is None
    assert cache.epoch_for_offset(10) == 2
    assert cache.epoch_for_offset(29) == 2
    assert cache.epoch_for_offset(1000) == 4
    cache.clear()
    assert cache.is_empty()
    assert (tmp_path / "leader-epoch-checkpoint").read_text() == "0\n0\n"
