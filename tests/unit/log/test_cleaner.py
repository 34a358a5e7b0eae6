"""The log cleaner's rewriting of a real partition log (cleaner.py, driven by log_cleaner.py
from the test's thread): the latest record of each key kept at its offset, batches keeping
their base offsets, tombstones kept until their delete horizon, producers' last batches and
control batches kept, segments grouped, the clean range bounded, and the log left as it was
when it changed under the cleaning."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from log_cleaning import NOW, Node, append, batches, compacted, latest_per_key, read_all

from brook.log.cleaner import CleaningAborted, group_segments_by_size
from brook.log.cleaner_manager import CLEANER_CHECKPOINT, LogToClean
from brook.log.log import PartitionLog
from brook.log.offset_map import ENTRY_BYTES
from brook.log.segment import SegmentView
from brook.log.swap import CleanedFiles
from brook.protocol.batch import CONTROL_BIT, DELETE_HORIZON_BIT
from brook.protocol.records import build_simple_batch, leader_change_batch


def _write(
    plog: PartitionLog, keys: int, rounds: int, per_segment: int
) -> list[tuple[int, tuple[bytes, bytes]]]:
    """``rounds`` values of ``keys`` keys, one record a batch, a new segment every
    ``per_segment`` batches; returns (offset, (key, value)) of each."""
    history = []
    for n in range(keys * rounds):
        entry = (b"k%d" % (n % keys), b"v%d" % n)
        history.append((append(plog, [entry], NOW + n), entry))
        if (n + 1) % per_segment == 0:
            plog.roll(NOW)
    return history


def _expected(history: list, below: int) -> list[tuple[int, bytes, bytes | None]]:
    """Records below ``below`` that are their key's latest among those below it, then every
    record from ``below`` on (the active segment is not cleaned)."""
    cleaned = latest_per_key([h for h in history if h[0] < below])
    kept = sorted((o, k, v) for k, (o, v) in cleaned.items())
    return kept + [(o, k, v) for o, (k, v) in history if o >= below]


def _records(plog: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(o, k, v) for o, k, v, _ in read_all(plog)]


def test_the_latest_record_of_each_key_is_kept_at_its_offset(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    history = _write(plog, keys=7, rounds=6, per_segment=5)
    append(plog, [(b"k0", b"active")])  # the active segment is never cleaned
    history.append((42, (b"k0", b"active")))
    before = {h.base_offset: h for h in batches(plog)}
    active = plog.segments()[-1].base_offset
    assert node.clean()
    assert _records(plog) == _expected(history, active)
    # every kept batch keeps its base offset and last offset delta
    for header in batches(plog):
        original = before[header.base_offset]
        assert header.last_offset_delta == original.last_offset_delta
    assert plog.log_end_offset == 43
    # nothing more to do until something new is written
    assert not node.clean()


def test_cleaned_segments_end_where_their_successors_begin_and_reopen_whole(
    tmp_path: Path,
) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(segment_bytes=400))
    history = _write(plog, keys=3, rounds=10, per_segment=4)
    node.clean_until_done()
    segments = plog.segments()
    for left, right in itertools.pairwise(segments):
        assert left.next_offset == right.base_offset
        assert left.size <= 400
    records = _records(plog)
    assert [o for o, _, _ in records] == sorted(o for o, _, _ in records)
    node.close()
    again = PartitionLog.open(plog.dir, compacted(segment_bytes=400))
    try:
        assert _records(again) == records
        assert again.log_end_offset == len(history)
    finally:
        again.close_files()


def test_small_cleaned_segments_are_merged_into_groups(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(segment_bytes=2000))
    _write(plog, keys=2, rounds=40, per_segment=4)
    before = len(plog.segments())
    node.clean_until_done()
    # a second pass merges what the first left small
    append(plog, [(b"k0", b"x")])
    plog.roll(NOW)
    node.clean_until_done()
    assert len(plog.segments()) < before / 4


def test_tombstones_stay_until_their_delete_horizon(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(delete_retention_ms=10_000))
    append(plog, [(b"a", b"1"), (b"b", b"1")])
    plog.roll(NOW)
    append(plog, [(b"a", None)])  # delete a
    plog.roll(NOW)
    assert node.clean()
    records = _records(plog)
    assert records == [(1, b"b", b"1"), (2, b"a", None)]
    marked = next(h for h in batches(plog) if h.base_offset == 2)
    assert marked.attributes & DELETE_HORIZON_BIT
    assert marked.delete_horizon_ms == NOW + 10_000
    # consumers still see the tombstone's own timestamp
    assert read_all(plog)[1][3] == NOW

    def clean_again() -> None:
        append(plog, [(b"c", b"1")])
        plog.roll(NOW)
        assert node.clean()

    node.now = NOW + 9_999
    clean_again()
    assert (2, b"a", None) in _records(plog)
    node.now = NOW + 10_000
    clean_again()
    assert [r for r in _records(plog) if r[1] == b"a"] == []


def test_a_tombstone_past_its_horizon_takes_the_older_values_with_it(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(delete_retention_ms=0))
    for n in range(5):
        append(plog, [(b"gone", b"%d" % n), (b"kept", b"%d" % n)])
        plog.roll(NOW)
    append(plog, [(b"gone", None)])
    plog.roll(NOW)
    node.clean()  # sets the horizon: now + 0
    append(plog, [(b"other", b"x")])
    plog.roll(NOW)
    node.now += 1
    node.clean()
    assert [k for _, k, _ in _records(plog)] == [b"kept", b"other"]


def test_every_codec_is_rebuilt_with_its_own_codec(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    for codec in (0, 1, 2, 3, 4):
        append(plog, [(b"x%d" % codec, b"old"), (b"y%d" % codec, b"kept")], codec=codec)
        append(plog, [(b"x%d" % codec, b"new")], codec=codec)
    plog.roll(NOW)
    node.clean()
    by_codec = {h.base_offset: h.codec for h in batches(plog)}
    assert [by_codec[o] for o in (0, 3, 6, 9, 12)] == [0, 1, 2, 3, 4]
    assert [(o, k, v) for o, k, v in _records(plog) if v == b"kept"] == [
        (1 + 3 * c, b"y%d" % c, b"kept") for c in range(5)
    ]
    assert sorted(v for _, _, v in _records(plog)) == [b"kept"] * 5 + [b"new"] * 5


def test_a_producers_last_batch_is_kept_empty_with_its_sequence(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    append(plog, [(b"k", b"1"), (b"k", b"2")], producer=(7, 0, 0))
    append(plog, [(b"k", b"3")])  # supersedes the producer's records
    plog.roll(NOW)
    node.clean()
    first = batches(plog)[0]
    assert (first.base_offset, first.records_count, first.last_offset_delta) == (0, 0, 1)
    assert (first.producer_id, first.base_sequence) == (7, 0)
    assert _records(plog) == [(2, b"k", b"3")]
    node.close()
    # after a restart the producer's retry of that batch is still a duplicate
    reopened = PartitionLog.open(plog.dir, compacted())
    try:
        entry = reopened.producer_state.last_entry(7)
        assert entry is not None and entry.last_seq == 1
    finally:
        reopened.close_files()


def test_control_batches_and_keyless_records(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    append(plog, [(b"k", b"1")])
    plog.append_as_follower(leader_change_batch(1, base_offset=1, leader_epoch=0, timestamp=NOW))
    # a record without a key, written before the topic was compacted, say
    plog.append_as_follower(build_simple_batch([b"no key"], base_offset=2))
    append(plog, [(b"k", b"2")])
    plog.roll(NOW)
    node.clean()
    assert [h.attributes & CONTROL_BIT for h in batches(plog)][:1] == [CONTROL_BIT]
    assert _records(plog) == [(3, b"k", b"2")]
    assert node.cleaner.last_stats is not None
    assert node.cleaner.last_stats.invalid_records == 1


def test_min_compaction_lag_holds_young_segments_back(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(min_compaction_lag_ms=60_000))
    append(plog, [(b"k", b"old")], NOW - 120_000)
    plog.roll(NOW)
    append(plog, [(b"k", b"young")], NOW - 1_000)
    plog.roll(NOW)
    append(plog, [(b"k", b"younger")], NOW)
    plog.roll(NOW)
    node.clean()
    # only the old segment was cleanable; the map saw nothing newer, so it keeps its record
    assert _records(plog) == [(0, b"k", b"old"), (1, b"k", b"young"), (2, b"k", b"younger")]
    assert node.cleaner.manager.checkpoint(("t", 0), plog.log_dir) == 1
    node.now = NOW + 120_000
    node.clean()
    assert _records(plog) == [(2, b"k", b"younger")]


def test_max_compaction_lag_cleans_below_the_dirty_ratio(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(min_cleanable_dirty_ratio=0.5, max_compaction_lag_ms=60_000))
    append(plog, [(b"distinct%d" % n, b"x" * 50) for n in range(40)], NOW)
    plog.roll(NOW)
    assert node.clean()  # all of it dirty: past the ratio
    append(plog, [(b"distinct0", b"y")], NOW)
    plog.roll(NOW)
    assert not node.clean()  # a small dirty part: below the ratio
    node.now = NOW + 60_001
    assert node.clean()  # its first batch is older than max.compaction.lag.ms
    assert [o for o, k, _ in _records(plog) if k == b"distinct0"] == [40]


def test_max_compaction_lag_bounds_the_active_segment(tmp_path: Path) -> None:
    config = compacted(max_compaction_lag_ms=5_000)
    assert config.roll_ms == 5_000
    assert compacted().roll_ms == compacted().segment_ms
    node = Node(tmp_path)
    plog = node.log(config)
    append(plog, [(b"k", b"1")], NOW)
    append(plog, [(b"k", b"2")], NOW + 5_001)
    assert len(plog.segments()) == 2


def test_cleaning_stops_below_the_high_watermark(tmp_path: Path) -> None:
    hw = {"value": 0}
    node = Node(tmp_path)
    node.cleaner._high_watermark = lambda tp: hw["value"]
    plog = node.log()
    _write(plog, keys=1, rounds=9, per_segment=3)
    plog.roll(NOW)
    hw["value"] = 4  # inside the second segment [3, 6)
    node.clean()
    assert [o for o, _, _ in _records(plog)] == [2, 3, 4, 5, 6, 7, 8]
    hw["value"] = 9
    node.clean()
    assert [o for o, _, _ in _records(plog)] == [8]


def test_a_full_offset_map_cleans_in_several_passes(tmp_path: Path) -> None:
    # a map of 9 keys: each pass maps what fits and cleans below it
    node = Node(tmp_path, dedupe_buffer_size=ENTRY_BYTES * 10, threads=1)
    assert node.worker.offset_map.capacity == 9
    plog = node.log()
    history = _write(plog, keys=30, rounds=3, per_segment=10)
    passes = node.clean_until_done()
    assert passes > 1
    assert _records(plog) == _expected(history, plog.segments()[-1].base_offset)


def test_a_restart_does_not_clean_from_scratch(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    _write(plog, keys=5, rounds=4, per_segment=5)
    node.clean_until_done()
    checkpoint = (node.dir / CLEANER_CHECKPOINT).read_text()
    assert checkpoint == "0\n1\nt 0 20\n"
    node.close()
    again = Node(tmp_path)
    plog = again.log()
    assert not again.clean()
    _write(plog, keys=5, rounds=1, per_segment=5)
    assert again.clean()
    stats = again.cleaner.last_stats
    assert stats is not None and stats.map_records == 5  # only what came after the checkpoint


def test_a_truncation_below_the_checkpoint_makes_the_rest_dirty(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    _write(plog, keys=2, rounds=5, per_segment=2)
    node.clean_until_done()
    assert node.cleaner.manager.checkpoint(("t", 0), plog.log_dir) == 10
    plog.truncate_to(7)
    assert node.cleaner.manager.checkpoint(("t", 0), plog.log_dir) == plog.log_end_offset


def test_a_log_that_changes_under_the_cleaning_is_left_as_it_was(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    _write(plog, keys=2, rounds=4, per_segment=2)
    before = _records(plog)
    real_swap = node.cleaner._swap

    def truncate_first(job: LogToClean, group: list[SegmentView], files: CleanedFiles) -> bool:
        plog.truncate_to(5)  # a follower truncating while the cleaner wrote
        return real_swap(job, group, files)

    node.worker._swap = truncate_first
    assert node.clean()  # the cleaning stopped: nothing swapped in
    assert _records(plog) == before[:5]
    assert not [p for p in plog.dir.iterdir() if p.name.endswith((".cleaned", ".swap"))]
    assert node.cleaner.manager.checkpoint(("t", 0), plog.log_dir) is None
    assert not node.cleaner.manager.in_progress(("t", 0))


def test_replace_segments_refuses_the_active_segment_and_changed_ones(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    append(plog, [(b"k", b"1")])
    active = plog.segments()[-1].view()
    files = CleanedFiles(plog.dir, 0)
    for suffix in (".log", ".index", ".timeindex"):
        files.path(suffix).write_bytes(b"")
    assert not plog.replace_segments([active], files)
    assert not files.path(".log").exists()


def test_retention_leaves_a_log_being_cleaned_alone(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(cleanup_policy="compact,delete", retention_ms=1))
    _write(plog, keys=2, rounds=2, per_segment=2)
    job = node.cleaner.manager.grab_filthiest(NOW, lambda tp: plog.log_end_offset)
    assert job is not None and job.log is plog
    assert node.manager.run_retention(NOW + 10_000, {("t", 0): plog.log_end_offset}) == 0
    node.cleaner.manager.done_cleaning(job, None)
    assert node.manager.run_retention(NOW + 10_000, {("t", 0): plog.log_end_offset}) > 0


def test_a_stopping_node_aborts_the_cleaning(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    _write(plog, keys=2, rounds=4, per_segment=2)
    before = _records(plog)
    node.cleaner._stop.set()
    with pytest.raises(CleaningAborted):
        job = node.cleaner.manager.grab_filthiest(NOW, lambda tp: plog.log_end_offset)
        assert job is not None
        node.worker.clean(job, NOW)
    assert _records(plog) == before


def test_group_segments_by_size_follows_kafkas_limits(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    for _ in range(6):
        append(plog, [(b"k", b"x" * 100)])
        plog.roll(NOW)
    views = [s.view() for s in plog.segments()[:-1]]
    size = views[0].size
    groups = group_segments_by_size(views, 2 * size, 10**6, 6)
    assert [len(g) for g in groups] == [2, 2, 2]
    # index bytes bound a group as well
    assert [len(g) for g in group_segments_by_size(views, 10**6, 0, 6)] == [1] * 6
    # so do offsets beyond 2^31 of the group's base
    assert [len(g) for g in group_segments_by_size(views, 10**6, 10**6, 2**31 + 10)] == [5, 1]


def test_a_follower_copies_a_cleaned_log_and_cleans_its_own(tmp_path: Path) -> None:
    node = Node(tmp_path)
    leader = node.log(name="leader")
    history = _write(leader, keys=4, rounds=5, per_segment=3)
    node.clean_until_done()
    follower = node.log(name="follower")
    offset = 0
    while offset < leader.log_end_offset:  # as the replica fetcher copies it
        data = leader.read(offset, 1 << 20).records
        assert isinstance(data, bytes)
        result = follower.append_as_follower(data)
        offset = result.last_offset + 1
    assert _records(follower) == _records(leader)
    # more writes on the leader, copied as they are; each replica then cleans its own log
    more = [(b"k%d" % n, b"more%d" % n) for n in range(4)]
    for entry in more:
        base = append(leader, [entry])
        follower.append_as_follower(leader.read(base, 1 << 20).records)
        history.append((base, entry))
    leader.roll(NOW)
    follower.roll(NOW)
    node.clean_until_done()
    expected = _expected(history, leader.log_end_offset)
    assert _records(leader) == _records(follower) == expected
