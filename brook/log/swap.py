"""Kafka's swap protocol for putting cleaned segments in place of the ones they were cleaned
from, crash-safe at every step, and its completion when a node starts.

A cleaned segment is written under ``<base>.log.cleaned`` (with ``.index.cleaned``,
``.timeindex.cleaned`` and, if it keeps an abort, ``.txnindex.cleaned``) and fsynced; its
base offset is that of the first segment it replaces. The swap then renames

1. the ``.cleaned`` files to ``.swap`` (the log file first),
2. the replaced segments' files to ``.deleted`` and removes them,
3. the ``.swap`` files to their final names (the log file first).

A crash before step 1 leaves ``.cleaned`` files, which the next start deletes: the old
segments are whole. From step 1 on, the ``.log.swap`` file is whole and synced, so the next
start completes the swap: it deletes every other file of a segment whose base offset lies in
the swap's offset range ``[base, next offset of its last batch)``, then renames every
``.swap`` file into place, and the ``.cleaned`` files of a segment whose ``.log.swap`` is
there (whole and synced as well: step 1 was cut short). An index found missing is rebuilt
from the log, but a ``.txnindex`` is not (the aborts are known from the markers only when
the producer state is replayed over them), so none of its entries may be lost that way.
The cleaner keeps the last batch of every cleaned group (empty if need be), so that range
covers exactly the segments replaced, and a cleaned segment ends where its successor begins.
As in Kafka, the order of the renames and removals within the directory is what the
filesystem keeps (journaling filesystems commit a directory's changes in order); the
directory itself is fsynced by the log's next flush.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from brook.protocol.batch import HEADER_SIZE, read_header

from .segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX, segment_path
from .txn_index import TXN_INDEX_SUFFIX

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
# the log file first; a cleaned segment without an abort has no .txnindex
_SUFFIXES = (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)
_OPTIONAL = (TXN_INDEX_SUFFIX,)


class CleanedFiles:
    """The files of one cleaned segment on their way into the log."""

    def __init__(self, directory: Path, base_offset: int) -> None:
        self.dir = directory
        self.base_offset = base_offset

    def path(self, suffix: str, stage: str = CLEANED_SUFFIX) -> Path:
        """The file of ``suffix`` (``.log``, ``.index``, ``.timeindex``) at ``stage``
        (``.cleaned``, ``.swap``, or ``""`` for its final name)."""
        final = segment_path(self.dir, self.base_offset, suffix)
        return final.with_name(final.name + stage) if stage else final

    def to_swap(self) -> None:
        """Step 1: from now on the next start completes the swap."""
        for suffix in _SUFFIXES:
            _rename(self.path(suffix), self.path(suffix, SWAP_SUFFIX), suffix in _OPTIONAL)

    def swap_in(self) -> None:
        """Step 3 (once the replaced segments are gone): the final names."""
        for suffix in _SUFFIXES:
            _rename(self.path(suffix, SWAP_SUFFIX), self.path(suffix, ""), suffix in _OPTIONAL)

    def discard(self) -> None:
        """Remove the files of a cleaning that was not swapped in."""
        for suffix in _SUFFIXES:
            for stage in (CLEANED_SUFFIX, SWAP_SUFFIX):
                self.path(suffix, stage).unlink(missing_ok=True)


def _rename(source: Path, target: Path, optional: bool) -> None:
    try:
        os.replace(source, target)
    except FileNotFoundError:
        if not optional:
            raise


def next_offset_of(path: Path) -> int | None:
    """The offset after the last batch of a (whole, synced) log file, walking the batch
    headers; None if the file holds no batch."""
    last: int | None = None
    fd = os.open(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        pos = 0
        while size - pos >= HEADER_SIZE:
            header = read_header(os.pread(fd, HEADER_SIZE, pos))
            if header.size < HEADER_SIZE or pos + header.size > size:
                break
            last = header.next_offset
            pos += header.size
    finally:
        os.close(fd)
    return last


def complete_interrupted_swaps(directory: Path, names: list[str]) -> bool:
    """What a crash left of swaps in ``directory`` (whose files are ``names``): each
    ``.log.swap`` replaces the segments in its offset range, every ``.swap`` file takes its
    final name, and so do the ``.cleaned`` files of a segment with a ``.log.swap``; other
    ``.cleaned`` files are deleted. Returns whether anything was done (the
    caller lists the directory again)."""
    changed = False
    ranges: list[tuple[int, int]] = []
    for name in names:
        if name.endswith(LOG_SUFFIX + SWAP_SUFFIX) and name.partition(".")[0].isdigit():
            base = int(name.partition(".")[0])
            end = next_offset_of(directory / name)
            if end is None:
                # Never written by a cleaning (every cleaned segment keeps a batch): leave
                # the segments it would replace alone.
                log.warning("%s: ignoring %s, which holds no batch", directory, name)
                for suffix in _SUFFIXES:
                    CleanedFiles(directory, base).path(suffix, SWAP_SUFFIX).unlink(missing_ok=True)
                changed = True
                continue
            log.info("%s: completing the interrupted swap of %s", directory, name)
            ranges.append((base, end))
    swapping = {base for base, _ in ranges}
    for name in names:
        if name.endswith(CLEANED_SUFFIX):
            path = directory / name
            stem = name.partition(".")[0]
            if stem.isdigit() and int(stem) in swapping and path.exists():
                # Step 1 was cut short after the log file: this file is whole and synced too.
                os.replace(path, path.with_name(name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX))
            else:
                path.unlink(missing_ok=True)
            changed = True
    names = os.listdir(directory)
    for name in names:
        stem, dot, suffix = name.partition(".")
        if not dot or not stem.isdigit() or name.endswith((SWAP_SUFFIX, CLEANED_SUFFIX)):
            continue
        offset = int(stem)
        if any(base <= offset < end for base, end in ranges):
            (directory / name).unlink(missing_ok=True)
            changed = True
    for name in names:
        path = directory / name
        if name.endswith(SWAP_SUFFIX) and path.exists():
            os.replace(path, path.with_name(name[: -len(SWAP_SUFFIX)]))
            changed = True
    return changed
