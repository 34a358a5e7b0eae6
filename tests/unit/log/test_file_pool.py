"""The bounded descriptor pool: at most ``capacity`` descriptors, least recently used closed
first and reopened on demand, fsyncs of files closed since they were written, pins held by
syncs on other threads, and what happens when the process runs out of descriptors."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from brook.log import file_pool
from brook.log.file_pool import FilePool, PooledFile, default_capacity

RW_CREATE = os.O_RDWR | os.O_CREAT | os.O_APPEND


def _files(pool: FilePool, directory: Path, count: int) -> list[PooledFile]:
    handles = []
    for i in range(count):
        handle = pool.open(directory / f"f{i}", RW_CREATE)
        os.write(handle.fd(), f"file {i};".encode())
        handles.append(handle)
    return handles


def _fd_target(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@pytest.fixture
def fsynced(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The files os.fsync is called on (the real fsync still runs)."""
    seen: list[str] = []
    real = os.fsync

    def recording(fd: int) -> None:
        seen.append(_fd_target(fd))
        real(fd)

    monkeypatch.setattr(file_pool.os, "fsync", recording)
    yield seen


def test_never_more_descriptors_than_capacity(tmp_path: Path) -> None:
    pool = FilePool(3)
    before = len(os.listdir("/proc/self/fd"))
    handles = _files(pool, tmp_path, 20)
    assert pool.open_count == 3 and pool.file_count == 20
    assert len(os.listdir("/proc/self/fd")) - before <= 3
    # every file is still usable: reading one reopens it (and closes another)
    for i, handle in enumerate(handles):
        assert os.pread(handle.fd(), 100, 0) == f"file {i};".encode()
        assert pool.open_count <= 3
    for handle in handles:
        handle.close()
    assert pool.open_count == 0 and pool.file_count == 0


def test_least_recently_used_is_closed_first(tmp_path: Path) -> None:
    pool = FilePool(2)
    a, b = _files(pool, tmp_path, 2)
    a.fd()  # a is now the most recently used
    c = pool.open(tmp_path / "c", RW_CREATE)
    assert a.is_open and c.is_open and not b.is_open


def test_reopening_neither_truncates_nor_creates(tmp_path: Path) -> None:
    pool = FilePool(1)
    first = pool.open(tmp_path / "kept", os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
    os.write(first.fd(), b"data")
    pool.open(tmp_path / "other", RW_CREATE)  # evicts ``first``
    assert not first.is_open
    assert os.pread(first.fd(), 10, 0) == b"data"  # reopened without O_TRUNC
    os.write(first.fd(), b"+more")  # and still appending
    assert (tmp_path / "kept").read_bytes() == b"data+more"
    pool.open(tmp_path / "third", RW_CREATE)
    (tmp_path / "kept").unlink()
    with pytest.raises(FileNotFoundError):
        first.fd()  # without O_CREAT: a vanished file is an error, not a new empty file


def test_closed_file_refuses_its_descriptor(tmp_path: Path) -> None:
    pool = FilePool(4)
    handle = pool.open(tmp_path / "f", RW_CREATE)
    handle.close()
    handle.close()  # idempotent
    with pytest.raises(OSError) as info:
        handle.fd()
    assert info.value.errno == errno.EBADF


def test_sync_reopens_a_dirty_file_the_pool_closed(tmp_path: Path, fsynced: list[str]) -> None:
    pool = FilePool(1)
    dirty = pool.open(tmp_path / "dirty", RW_CREATE)
    os.write(dirty.write_fd(), b"unsynced")
    pool.open(tmp_path / "other", RW_CREATE)  # closes ``dirty``'s descriptor, unsynced
    assert not dirty.is_open and dirty.dirty
    dirty.sync()
    assert fsynced == [str(tmp_path / "dirty")]
    assert not dirty.dirty and not dirty.is_open  # a spare descriptor, not a pooled one
    dirty.sync()  # clean now: nothing to do
    assert len(fsynced) == 1
    os.write(dirty.write_fd(), b"again")
    dirty.sync()
    assert fsynced == [str(tmp_path / "dirty")] * 2


def test_a_file_found_on_disk_counts_as_unsynced(tmp_path: Path, fsynced: list[str]) -> None:
    # A crashed process may have left it in the page cache only.
    (tmp_path / "found").write_bytes(b"from before")
    found = FilePool(4).open(tmp_path / "found", RW_CREATE)
    assert found.dirty
    found.sync()
    assert fsynced == [str(tmp_path / "found")]


def test_a_sync_pins_its_descriptor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker thread's fsync keeps its descriptor: the loop neither evicts nor closes it
    under the fsync (a closed, reused descriptor would fsync some other file)."""
    pool = FilePool(1)
    pinned = pool.open(tmp_path / "pinned", RW_CREATE)
    in_fsync, finish = threading.Event(), threading.Event()
    targets: list[str] = []
    real = os.fsync

    def slow_fsync(fd: int) -> None:
        in_fsync.set()
        assert finish.wait(10)
        targets.append(_fd_target(fd))  # still the same file once the others are done
        real(fd)

    monkeypatch.setattr(file_pool.os, "fsync", slow_fsync)
    worker = threading.Thread(target=pinned.sync)
    worker.start()
    assert in_fsync.wait(10)
    others = [pool.open(tmp_path / f"other{i}", RW_CREATE) for i in range(3)]
    assert pinned.is_open  # over capacity rather than closing a pinned descriptor
    pinned.close()  # closing for good waits for the fsync
    assert pinned.is_open and pinned.closed
    finish.set()
    worker.join(10)
    assert targets == [str(tmp_path / "pinned")]
    assert not pinned.is_open
    assert pool.open_count == 1 and all(h.fd() >= 0 for h in others)


def test_a_sync_during_a_failing_fsync_fails_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two flushes of one file at once (two produce requests on a partition): the second must
    not return as soon as the first cleared ``dirty``: it waits, and fails with the first's
    EIO. So does every later sync: the kernel reports a writeback error once, and a later
    fsync succeeding would acknowledge records whose pages were dropped."""
    pool = FilePool(4)
    handle = pool.open(tmp_path / "seg", RW_CREATE)
    os.write(handle.write_fd(), b"acknowledged only once on disk")
    in_fsync, finish = threading.Event(), threading.Event()
    calls: list[int] = []

    def failing_once(fd: int) -> None:
        calls.append(fd)
        if len(calls) == 1:
            in_fsync.set()
            assert finish.wait(10)
            raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(file_pool.os, "fsync", failing_once)
    outcomes: dict[str, BaseException | None] = {}

    def flush(name: str) -> None:
        try:
            handle.sync()
            outcomes[name] = None
        except OSError as exc:
            outcomes[name] = exc

    first = threading.Thread(target=flush, args=("first",))
    first.start()
    assert in_fsync.wait(10)
    second = threading.Thread(target=flush, args=("second",))
    second.start()
    second.join(0.3)
    assert "second" not in outcomes  # waiting for the first fsync's outcome
    finish.set()
    first.join(10)
    second.join(10)
    assert isinstance(outcomes["first"], OSError) and outcomes["first"].errno == errno.EIO
    assert isinstance(outcomes["second"], OSError) and outcomes["second"].errno == errno.EIO
    with pytest.raises(OSError, match="earlier fsync failed"):
        handle.sync()
    assert len(calls) == 1


def test_release_gives_the_descriptor_back(tmp_path: Path) -> None:
    pool = FilePool(4)
    handle = pool.open(tmp_path / "f", RW_CREATE)
    handle.release()
    assert not handle.is_open and pool.open_count == 0
    assert handle.fd() >= 0 and pool.opens == 2


def test_default_capacity_leaves_half_for_connections() -> None:
    assert default_capacity(4096) == (4096 - 64) // 2
    assert default_capacity(80) == file_pool.MIN_CAPACITY  # (80 - 64) // 2 is 8
    assert default_capacity(64) == file_pool.MIN_CAPACITY


_OUT_OF_DESCRIPTORS = """
import os, resource, sys
from pathlib import Path
from brook.log.file_pool import FilePool
directory = Path(sys.argv[1])
used = len(os.listdir("/proc/self/fd"))
resource.setrlimit(resource.RLIMIT_NOFILE, (used + 6, used + 6))
pool = FilePool(100)  # more than the process may open
handles = [pool.open(directory / f"f{i}", os.O_RDWR | os.O_CREAT) for i in range(4)]
hog = []
try:
    while True:
        hog.append(os.open("/dev/null", os.O_RDONLY))
except OSError:
    pass
# The process is out of descriptors: the pool gives up its own to open another file.
late = pool.open(directory / "late", os.O_RDWR | os.O_CREAT)
os.write(late.fd(), b"ok")
print(pool.open_count, sum(h.is_open for h in handles))
"""


def test_out_of_descriptors_the_pool_closes_its_own(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _OUT_OF_DESCRIPTORS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
    )
    assert out.returncode == 0, out.stderr
    open_count, handles_open = map(int, out.stdout.split())
    assert handles_open == 3 and open_count == 4
    assert (tmp_path / "late").read_bytes() == b"ok"
