"""The swap protocol's crash safety (swap.py): a node stopped at any point of a swap reopens
its log whole, with either the old segments or the cleaned one, never a mix, and without
leftover ``.cleaned`` or ``.swap`` files; a cleaned segment's ``.txnindex`` included."""

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
from brook.protocol.records import build_batch, encode_record
from brook.protocol.txn_marker import TxnMarker

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


def _aborted_then_cleaned(tmp_path: Path) -> tuple[PartitionLog, list, list, list, CleanedFiles]:
    """A log whose first group holds an aborted transaction whose marker the cleaning keeps
    (with its ``.txnindex`` entry), cleaned but not swapped in. Returns the log, its records
    before, its aborted transactions, the group and the cleaned files."""
    node = Node(tmp_path)
    plog = node.log(compacted(segment_bytes=10_000))

    def transactional(offset_key: bytes, value: bytes, seq: int) -> None:
        batch = build_batch(
            [encode_record(0, 0, offset_key, value, ())],
            base_timestamp=NOW, max_timestamp=NOW, producer_id=7, producer_epoch=0,
            base_sequence=seq, transactional=True,
        )  # fmt: skip
        plog.append_as_leader(batch, 0, NOW)

    # The aborted batch is not its producer's last: it goes whole, and replaying the log
    # from its start could not find the abort again (only the carried entry keeps it).
    transactional(b"k0", b"aborted", 0)  # 0
    plog.append_marker(TxnMarker(7, 0, False, 0), 0, NOW)  # 1
    transactional(b"k1", b"committed", 1)  # 2
    plog.roll(NOW)
    plog.append_marker(TxnMarker(7, 0, True, 0), 0, NOW)  # 3
    for n in range(4, 9):
        append(plog, [(b"k%d" % (n % 2), b"v%d" % n)])
        if n % 3 == 2:
            plog.roll(NOW)
    append(plog, [(b"k0", b"active")])  # 9
    before = read_all(plog)
    aborted = plog.aborted_transactions(0, plog.log_end_offset)
    assert len(aborted) == 1
    captured: list[tuple[list[SegmentView], CleanedFiles]] = []

    def stop_before_swap(job: LogToClean, group: list[SegmentView], files: CleanedFiles) -> bool:
        captured.append((group, files))
        raise Crash

    node.worker._swap = stop_before_swap
    with pytest.raises(Crash):
        node.clean()
    group, files = captured[0]
    assert files.path(".txnindex").exists()
    plog.close_files()
    return plog, before, aborted, group, files


def _txn_states(files: CleanedFiles, group: list[SegmentView]) -> dict[str, Callable[[], None]]:
    """Every state the swap of a segment with a ``.txnindex`` passes through."""
    every = (*SUFFIXES, ".txnindex")

    def log_swapped() -> None:  # within step 1: the log file renamed, the rest not yet
        os.replace(files.path(".log"), files.path(".log", ".swap"))

    def old_deleted() -> None:
        files.to_swap()
        for view in group:
            for suffix in every:
                CleanedFiles(files.dir, view.base_offset).path(suffix, "").unlink(missing_ok=True)

    def log_in_place() -> None:  # within step 3
        old_deleted()
        os.replace(files.path(".log", ".swap"), files.path(".log", ""))

    return {
        "log-swapped": log_swapped,
        "all-swapped": files.to_swap,
        "old-deleted": old_deleted,
        "log-in-place": log_in_place,
    }


@pytest.mark.parametrize("state", ["log-swapped", "all-swapped", "old-deleted", "log-in-place"])
def test_a_crash_during_the_swap_keeps_the_aborted_transactions(tmp_path: Path, state: str) -> None:
    plog, before, aborted, group, files = _aborted_then_cleaned(tmp_path)
    _txn_states(files, group)[state]()
    # Everything below the active segment was flushed: no segment is recovered, so no
    # replay could rebuild the entry (a replay from the start would not find it: its batch
    # is gone); it comes from the cleaned segment's own .txnindex.
    reopened = PartitionLog.open(plog.dir, plog.config, recovery_point=9)
    try:
        # the aborted record is gone; its marker and index entry stay
        assert aborted == reopened.aborted_transactions(0, reopened.log_end_offset)
    finally:
        reopened.close_files()
    _check(_reopen(plog), _cleaned(before))


def test_a_crash_before_the_swap_keeps_the_old_index(tmp_path: Path) -> None:
    plog, before, aborted, _, _ = _aborted_then_cleaned(tmp_path)
    reopened = PartitionLog.open(plog.dir, plog.config, recovery_point=9)
    try:
        assert reopened.aborted_transactions(0, reopened.log_end_offset) == aborted
    finally:
        reopened.close_files()
    _check(_reopen(plog), before)
