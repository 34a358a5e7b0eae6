"""The swap protocol's crash safety (swap.py): a node stopped at any point of a swap reopens
its log whole, with either the old segments or the cleaned one, never a mix, and without
leftover ``.cleaned`` or ``.swap`` files."""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from log_cleaning import NOW, Node, append, compacted, read_all

from brook.log.cleaner_manager import LogToClean
from brook.log.log import PartitionLog
from brook.log.segment import SegmentView
from brook.log.swap import CleanedFiles, next_offset_of

SUFFIXES = (".log", ".index", ".timeindex")


class Crash(BaseException):
    """The process stops here."""


def _cleaned_not_swapped(tmp_path: Path) -> tuple[Node, PartitionLog, list, list, list]:
    """A log of three segments whose first group was cleaned (files written and synced)
    but not swapped in. Returns the node, the log, the records before, the group and the
    cleaned files."""
    node = Node(tmp_path)
    plog = node.log(compacted(segment_bytes=10_000))
    for n in range(9):
        append(plog, [(b"k%d" % (n % 2), b"v%d" % n)])
        if n % 3 == 2:
            plog.roll(NOW)
    append(plog, [(b"k0", b"active")])
    before = read_all(plog)
    captured: list[tuple[list[SegmentView], CleanedFiles]] = []

    def stop_before_swap(job: LogToClean, group: list[SegmentView], files: CleanedFiles) -> bool:
        captured.append((group, files))
        raise Crash

    node.worker._swap = stop_before_swap
    with pytest.raises(Crash):
        node.clean()
    (group, files) = captured[0]
    assert [v.base_offset for v in group] == [0, 3, 6]
    assert all(files.path(s).exists() for s in SUFFIXES)
    return node, plog, before, group, files


def _reopen(plog: PartitionLog) -> PartitionLog:
    plog.close_files()
    return PartitionLog.open(plog.dir, plog.config, recovery_point=0)


def _check(reopened: PartitionLog, expected: list) -> None:
    try:
        assert read_all(reopened) == expected
        assert reopened.log_end_offset == 10
        segments = reopened.segments()
        for left, right in itertools.pairwise(segments):
            assert left.next_offset == right.base_offset
        names = os.listdir(reopened.dir)
        assert not [n for n in names if n.endswith((".cleaned", ".swap", ".deleted"))]
    finally:
        reopened.close_files()


def _cleaned(before: list) -> list:
    """What the cleaning makes of ``before``: below the active segment (offset 9), each
    key's latest record."""
    return [r for r in before if r[0] in (7, 8, 9)]


def test_a_crash_before_the_swap_keeps_the_old_segments(tmp_path: Path) -> None:
    _, plog, before, _, _ = _cleaned_not_swapped(tmp_path)
    _check(_reopen(plog), before)


@pytest.mark.parametrize("step", ["swap", "deleted", "renamed"])
def test_a_crash_after_a_step_of_the_swap_completes_it(tmp_path: Path, step: str) -> None:
    _, plog, before, group, files = _cleaned_not_swapped(tmp_path)

    def crash(at: str) -> None:
        if at == step:
            raise Crash

    with pytest.raises(Crash):
        plog.replace_segments(group, files, on_step=crash)
    _check(_reopen(plog), _cleaned(before))


def _partial(files: CleanedFiles, group: list[SegmentView]) -> dict[str, Callable[[], None]]:
    """The states a crash can leave within a step (each file is renamed on its own)."""

    def rename(suffix: str, stage: str, to: str) -> None:
        os.replace(files.path(suffix, stage), files.path(suffix, to))

    def within_first() -> None:
        rename(".log", ".cleaned", ".swap")  # its indexes still .cleaned

    def within_second() -> None:
        files.to_swap()
        for suffix in SUFFIXES:  # only the first old segment deleted
            path = files.path(suffix, "")
            os.replace(path, path.with_name(path.name + ".deleted"))

    def within_third() -> None:
        files.to_swap()
        for view in group:
            for suffix in SUFFIXES:
                CleanedFiles(files.dir, view.base_offset).path(suffix, "").unlink()
        rename(".log", ".swap", "")  # its indexes still .swap

    return {"first": within_first, "second": within_second, "third": within_third}


@pytest.mark.parametrize("within", ["first", "second", "third"])
def test_a_crash_within_a_step_leaves_a_whole_log(tmp_path: Path, within: str) -> None:
    _, plog, before, group, files = _cleaned_not_swapped(tmp_path)
    plog.close_files()
    _partial(files, group)[within]()
    _check(_reopen(plog), _cleaned(before))


def test_a_swap_file_without_a_batch_is_dropped(tmp_path: Path) -> None:
    _, plog, before, _, files = _cleaned_not_swapped(tmp_path)
    files.discard()
    files.path(".log", ".swap").write_bytes(b"")
    assert next_offset_of(files.path(".log", ".swap")) is None
    _check(_reopen(plog), before)
