"""Which log the cleaner takes and over what range (cleaner_manager.py): the dirtiest past
its ratio, the checkpoint and its resets, the logs being cleaned or uncleanable, the
checkpoint file."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from log_cleaning import NOW, Node, append, compacted

from brook.log.checkpoints import OffsetCheckpointFile
from brook.log.cleaner_manager import CLEANER_CHECKPOINT, cleanable_bytes, cleanable_offsets
from brook.log.config import LogConfig
from brook.log.log import PartitionLog


def _segments(plog: PartitionLog, count: int, per: int = 1, key: bytes = b"k") -> None:
    for _ in range(count):
        for _ in range(per):
            append(plog, [(key, b"v" * 40)])
        plog.roll(NOW)


def _everything(tp: tuple[str, int]) -> int:
    return 1 << 40


def test_the_dirtiest_compacted_log_is_taken_once(tmp_path: Path) -> None:
    node = Node(tmp_path)
    less = node.log(compacted(min_cleanable_dirty_ratio=0.1), "less")
    more = node.log(compacted(min_cleanable_dirty_ratio=0.1), "more")
    plain = node.log(LogConfig.from_topic_config({}), "plain")
    for plog in (less, more, plain):
        _segments(plog, 4)
    node.clean_until_done()
    _segments(less, 1)
    _segments(more, 3)
    _segments(plain, 3)
    manager = node.cleaner.manager
    job = manager.grab_filthiest(NOW, _everything)
    assert job is not None and job.tp == ("more", 0)
    assert 0.5 < job.cleanable_ratio < 1
    assert manager.in_progress(("more", 0))
    second = manager.grab_filthiest(NOW, _everything)
    assert second is not None and second.tp == ("less", 0)
    assert manager.grab_filthiest(NOW, _everything) is None  # plain is not compacted
    manager.done_cleaning(job, None)
    assert not manager.in_progress(("more", 0))


def test_below_the_ratio_nothing_is_taken(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(min_cleanable_dirty_ratio=0.5, segment_bytes=10_000))
    append(plog, [(b"a%d" % n, b"v" * 40) for n in range(20)])
    plog.roll(NOW)
    node.clean_until_done()
    _segments(plog, 1, per=1, key=b"b")
    job = node.cleaner.manager._log_to_clean(plog, ("t", 0), 10**9, {("t", 0): 20}, NOW)
    assert job is not None and 0 < job.cleanable_ratio < 0.5
    assert node.cleaner.manager.grab_filthiest(NOW, _everything) is None
    assert node.cleaner.manager.dirtiest_ratio == job.cleanable_ratio


def test_unserved_uncleanable_and_offline_logs_are_skipped(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log()
    _segments(plog, 3)
    manager = node.cleaner.manager
    assert manager.grab_filthiest(NOW, lambda tp: None) is None
    job = manager.grab_filthiest(NOW, _everything)
    assert job is not None
    manager.mark_uncleanable(job)
    assert manager.uncleanable() == {("t", 0)}
    assert manager.grab_filthiest(NOW, _everything) is None
    manager.forget(plog)
    assert manager.grab_filthiest(NOW, _everything) is not None


def test_cleanable_offsets_follow_kafkas_bounds(tmp_path: Path) -> None:
    node = Node(tmp_path)
    plog = node.log(compacted(min_compaction_lag_ms=1_000))
    for n in range(5):
        append(plog, [(b"k", b"v")], NOW - 9_000 + n * 3_000)  # the last two are young
        plog.roll(NOW)
    views, active = plog.cleanable_segments()
    assert active == 5

    def offsets(checkpoint: int | None, hw: int = 5, start: int = 0) -> tuple[int, int, bool]:
        return cleanable_offsets(
            views,
            active,
            log_start=start,
            log_end=plog.log_end_offset,
            checkpoint=checkpoint,
            high_watermark=hw,
            config=plog.config,
            now_ms=NOW,
        )

    assert offsets(None) == (0, 3, False)  # segment 3 holds a record younger than the lag
    assert offsets(1, hw=2) == (1, 2, False)
    assert offsets(9) == (0, 3, True)  # past the log end: from the start again
    assert offsets(0, start=2) == (2, 3, True)  # below the log start (retention)
    assert offsets(4) == (4, 4, False)  # nothing to clean: never below the first dirty
    # the range ends at a segment boundary: the segment holding the bound is not cleaned
    assert cleanable_bytes(views, active, 0, 2) == (2, views[0].size + views[1].size)


def test_the_checkpoint_file_is_kafkas_and_survives_a_restart(tmp_path: Path) -> None:
    node = Node(tmp_path)
    for name in ("a", "b"):
        _segments(node.log(name=name), 3)
    node.clean_until_done()
    assert (node.dir / CLEANER_CHECKPOINT).read_text() == "0\n2\na 0 3\nb 0 3\n"
    node.manager.delete_log("b", 0)
    a = node.log(name="a")
    a.truncate_to(1)
    end = a.log_end_offset
    assert end <= 1
    node.close()
    assert (node.dir / CLEANER_CHECKPOINT).read_text() == f"0\n1\na 0 {end}\n"
    again = Node(tmp_path)
    assert again.cleaner.manager.checkpoint(("a", 0), again.dir) == end


def test_an_unreadable_checkpoint_file_starts_from_the_log_starts(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / CLEANER_CHECKPOINT).write_text("garbage")
    node = Node(tmp_path)
    plog = node.log()
    _segments(plog, 2)
    job = node.cleaner.manager.grab_filthiest(NOW, _everything)
    assert job is not None and job.first_dirty_offset == 0


def test_checkpoints_of_logs_gone_while_the_node_was_down_are_dropped(tmp_path: Path) -> None:
    node = Node(tmp_path)
    _segments(node.log(name="a"), 2)
    node.clean_until_done()
    node.close()
    text = (node.dir / CLEANER_CHECKPOINT).read_text()
    (node.dir / CLEANER_CHECKPOINT).write_text(text.replace("0\n1\n", "0\n2\ngone 0 5\n"))
    again = Node(tmp_path)
    assert again.cleaner.manager.checkpoint(("gone", 0), again.dir) is None
    assert again.cleaner.manager.checkpoint(("a", 0), again.dir) == 2


def test_the_logs_thread_never_waits_for_a_checkpoint_file_being_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cleaner thread writes (and fsyncs) the checkpoint file after a cleaning; what the
    event loop asks of the manager meanwhile (truncations, retention, the next selection)
    is answered without waiting for that disk write."""
    node = Node(tmp_path)
    plog = node.log()
    _segments(plog, 3)
    manager = node.cleaner.manager
    job = manager.grab_filthiest(NOW, _everything)
    assert job is not None
    writing, release = threading.Event(), threading.Event()
    write = OffsetCheckpointFile.write

    def held_write(self: OffsetCheckpointFile, offsets: dict[tuple[str, int], int]) -> None:
        writing.set()
        release.wait(60)
        write(self, offsets)

    monkeypatch.setattr(OffsetCheckpointFile, "write", held_write)
    cleaner = threading.Thread(target=manager.done_cleaning, args=(job, 2))
    cleaner.start()
    answered = threading.Event()

    def event_loop() -> None:
        manager.in_progress(job.tp)
        manager.truncated(plog, 1)
        manager.grab_filthiest(NOW, _everything)
        answered.set()

    try:
        assert writing.wait(30)
        threading.Thread(target=event_loop, daemon=True).start()
        assert answered.wait(30), "the logs' thread waited for the checkpoint file"
    finally:
        release.set()
        cleaner.join(60)
    assert manager.checkpoint(job.tp, plog.log_dir) == 1


def test_a_log_deleted_while_it_is_cleaned_leaves_no_checkpoint(tmp_path: Path) -> None:
    """A topic deleted (and created again) during a cleaning: the end of that cleaning
    records nothing, so the new log is cleaned from its start; it may be cleaned at once."""
    node = Node(tmp_path)
    plog = node.log()
    _segments(plog, 3)
    manager = node.cleaner.manager
    job = manager.grab_filthiest(NOW, _everything)
    assert job is not None and job.log is plog
    node.manager.delete_log("t", 0)
    assert not manager.in_progress(("t", 0))
    again = node.log()
    _segments(again, 3)
    second = manager.grab_filthiest(NOW, _everything)
    assert second is not None and second.log is again
    manager.done_cleaning(job, 2)  # the deleted log's cleaning ends
    assert manager.checkpoint(("t", 0), again.log_dir) is None
    assert manager.in_progress(("t", 0))  # the new log's cleaning goes on
    manager.done_cleaning(second, 3)
    assert manager.checkpoint(("t", 0), again.log_dir) == 3
