"""Opening a partition directory: leftovers, index checks, recovery after an unclean
shutdown, the epoch cache and the log start checkpoint."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from brook.log.config import LogConfig
from brook.log.epoch_cache import LeaderEpochCache
from brook.log.loader import LogLoader
from brook.log.log import PartitionLog
from brook.log.segment import segment_path
from brook.protocol.records import build_simple_batch, iter_records

NOW = 1_700_000_000_000
OpenLog = Callable[..., PartitionLog]
MakeConfig = Callable[..., LogConfig]


def _fill(plog: PartitionLog, batches: int, epoch: int = 0, size: int = 100) -> None:
    for i in range(batches):
        batch = build_simple_batch([bytes([i % 256]) * size] * 2, timestamp=NOW + i)
        plog.append_as_leader(batch, epoch, NOW)


def _offsets(plog: PartitionLog) -> list[int]:
    offsets = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, 1 << 20).records
        batch_offsets = [r.offset for _, r in iter_records(data)]
        offsets.extend(o for o in batch_offsets if o >= offset)
        offset = batch_offsets[-1] + 1
    return offsets


def test_leftovers_of_interrupted_work_are_removed(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    config = make_config(segment_bytes=1000, index_interval_bytes=200)
    plog = open_log(config=config)
    _fill(plog, 10)
    plog.close()
    leftovers = [
        "00000000000000000000.log.deleted",
        "00000000000000000000.index.swap",
        "00000000000000000012.log.cleaned",
        "leader-epoch-checkpoint.tmp",
        "00000000000000999999.index",
        "00000000000000999999.timeindex",
    ]
    for name in leftovers:
        (plog.dir / name).write_bytes(b"junk")
    reopened = open_log(config=config, had_clean_shutdown=True)
    names = set(os.listdir(reopened.dir))
    assert not names & set(leftovers)
    assert _offsets(reopened) == list(range(20))


def test_clean_load_keeps_everything_and_sets_the_recovery_point(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    config = make_config(segment_bytes=1000, index_interval_bytes=200)
    plog = open_log(config=config)
    _fill(plog, 12)
    plog.close()
    reopened = open_log(config=config, had_clean_shutdown=True)
    assert reopened.log_end_offset == 24
    assert reopened.recovery_point == 24
    assert len(reopened.segments()) > 2


def test_missing_or_damaged_indexes_are_rebuilt(open_log: OpenLog, make_config: MakeConfig) -> None:
    config = make_config(segment_bytes=1000, index_interval_bytes=200)
    plog = open_log(config=config)
    _fill(plog, 12)
    plog.close()
    first, second = (s.base_offset for s in plog.segments()[:2])
    expected = segment_path(plog.dir, first, ".index").read_bytes()
    assert expected
    segment_path(plog.dir, first, ".index").unlink()
    segment_path(plog.dir, second, ".timeindex").write_bytes(b"\x00" * 13)
    reopened = open_log(config=config, had_clean_shutdown=True)
    assert segment_path(plog.dir, first, ".index").read_bytes() == expected
    assert segment_path(plog.dir, second, ".timeindex").stat().st_size % 12 == 0
    assert _offsets(reopened) == list(range(24))


def test_unclean_load_recovers_from_the_recovery_point(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    config = make_config(segment_bytes=1000, index_interval_bytes=200)
    plog = open_log(config=config)
    _fill(plog, 6)
    plog.flush()
    flushed = plog.recovery_point
    _fill(plog, 6)
    plog.close_files()
    active = plog.segments()[-1]
    with open(active.log_path, "r+b") as f:
        f.truncate(active.size - 7)
    reopened = open_log(config=config, recovery_point=flushed)
    assert reopened.log_end_offset == 22
    assert reopened.recovery_point == flushed
    assert _offsets(reopened) == list(range(22))


def test_damage_in_a_middle_segment_drops_every_later_segment(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    config = make_config(segment_bytes=1000, index_interval_bytes=200)
    plog = open_log(config=config)
    _fill(plog, 20)
    plog.close_files()
    segments = plog.segments()
    middle = segments[1]
    with open(middle.log_path, "r+b") as f:
        f.seek(middle.size - 10)
        f.write(b"\x00\x01\x02")
    reopened = open_log(config=config)
    last_good = middle.next_offset - 2  # the last batch of the middle segment is gone
    assert reopened.log_end_offset == last_good
    assert _offsets(reopened) == list(range(last_good))
    assert [s.base_offset for s in reopened.segments()] == [s.base_offset for s in segments[:2]]
    assert not segments[2].log_path.exists()


def test_a_segment_overlapping_its_predecessor_is_dropped_one_after_a_gap_kept(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    """Offsets may skip between segments (a follower rolls at the base offset of a batch a
    cleaned leader sent after a gap, as Kafka's does); offsets going back never: a segment
    starting below its predecessor's end is dropped, with every later one."""
    config = make_config(segment_bytes=1000, index_interval_bytes=200)
    plog = open_log(config=config)
    _fill(plog, 20)
    plog.close()
    segments = plog.segments()
    assert len(segments) >= 3
    # the second segment's files renamed to start inside the first one
    overlapping = segments[0].next_offset - 1
    for path in plog.dir.glob(f"{segments[1].base_offset:020d}.*"):
        path.rename(path.with_name(f"{overlapping:020d}{path.name[20:]}"))
    reopened = open_log(config=config, had_clean_shutdown=True)
    assert [s.base_offset for s in reopened.segments()] == [0]
    assert reopened.log_end_offset == segments[0].next_offset
    assert _offsets(reopened) == list(range(segments[0].next_offset))
    reopened.close()

    plog = open_log("gap-0", config=config)
    _fill(plog, 20)
    segments = plog.segments()
    last_position, last = list(segments[0].iter_headers())[-1]
    plog.close()
    # the first segment without its last batch: offsets skip before the second one
    with open(segments[0].log_path, "r+b") as f:
        f.truncate(last_position)
    reopened = open_log("gap-0", config=config, had_clean_shutdown=True)
    assert [s.base_offset for s in reopened.segments()] == [s.base_offset for s in segments]
    assert reopened.log_end_offset == 40
    lost = set(range(last.base_offset, last.next_offset))
    assert _offsets(reopened) == [o for o in range(40) if o not in lost]


def test_log_start_beyond_the_data_starts_afresh(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    plog = open_log()
    _fill(plog, 3)
    plog.close()
    reopened = open_log(log_start_offset=50, had_clean_shutdown=True)
    assert reopened.log_start_offset == reopened.log_end_offset == 50
    assert [s.base_offset for s in reopened.segments()] == [50]
    assert reopened.epoch_cache.is_empty()


def test_epoch_cache_is_rebuilt_when_its_checkpoint_is_lost(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    config = make_config(segment_bytes=1000, index_interval_bytes=200)
    plog = open_log(config=config)
    _fill(plog, 5, epoch=1)
    _fill(plog, 5, epoch=4)
    plog.close()
    expected = plog.epoch_cache.entries()
    assert expected == [(1, 0), (4, 10)]
    checkpoint = plog.dir / "leader-epoch-checkpoint"
    for damage in (b"", b"0\n2\n1 0\n", b"garbage\x00"):
        checkpoint.write_bytes(damage)
        reopened = open_log(config=config, had_clean_shutdown=True)
        assert reopened.epoch_cache.entries() == expected
        assert checkpoint.read_text() == "0\n2\n1 0\n4 10\n"
        reopened.close()
    checkpoint.unlink()
    assert open_log(config=config, had_clean_shutdown=True).epoch_cache.entries() == expected


def test_epoch_cache_is_cut_to_the_recovered_end(
    open_log: OpenLog, make_config: MakeConfig
) -> None:
    plog = open_log()
    _fill(plog, 3, epoch=2)
    _fill(plog, 3, epoch=5)
    plog.close_files()
    active = plog.segments()[-1]
    with open(active.log_path, "r+b") as f:
        f.truncate(active.size - 3 * (active.size // 6) - 1)
    reopened = open_log()
    assert reopened.log_end_offset == 4
    assert reopened.epoch_cache.entries() == [(2, 0)]


def test_loader_alone_reports_offsets(tmp_path: Path, make_config: MakeConfig) -> None:
    directory = tmp_path / "t-1"
    directory.mkdir()
    cache = LeaderEpochCache(directory / "leader-epoch-checkpoint")
    loaded = LogLoader(
        directory,
        make_config(),
        cache,
        recovery_point=0,
        log_start_offset=7,
        had_clean_shutdown=False,
        now_ms=NOW,
    ).load()
    assert [s.base_offset for s in loaded.segments] == [7]
    assert (loaded.log_start_offset, loaded.log_end_offset, loaded.recovery_point) == (7, 7, 7)
    for segment in loaded.segments:
        segment.close()
