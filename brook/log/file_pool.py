"""A bounded pool of open file descriptors shared by every log of a node.

Kafka keeps one descriptor per segment (its indexes are memory-mapped), so a node's handles
grow with its partitions until ``ulimit -n`` refuses new clients and even a restart. Here
each segment file is a ``PooledFile``: its descriptor is opened on first use, kept in a
least-recently-used order, closed when the pool is over its capacity, and reopened on
demand. The capacity comes from ``brook.log.max.open.files`` or, by default, from
RLIMIT_NOFILE with half of it left for connections.

Durability does not depend on a descriptor staying open: a file written since its last fsync
is ``dirty``, and ``sync`` fsyncs it through its open descriptor or, when the pool closed
that descriptor meanwhile, through a descriptor opened for the purpose (on Linux fsync writes
back every dirty page of the inode, whichever descriptor wrote it, and reports a writeback
error to the next fsync that has not seen it). Eviction never fsyncs, so nothing on the event
loop waits for a disk. Two syncs of one file never overlap (the second would otherwise return
while the first's fsync is still running, and acknowledge what that fsync then fails to
write), and a file whose fsync failed never syncs again: the kernel reports a writeback error
once and drops the pages, so a later fsync's success would mean nothing.

Threads: one thread at a time takes descriptors with ``fd()`` (the event loop while
serving, the loading thread at startup) and uses each at once, never across another
``fd()``, so an eviction cannot close a descriptor under its user. ``sync`` may run on other
threads (flushes, the shutdown's flush threads) and pins the descriptor it fsyncs, which is
then neither evicted nor closed until the fsync is over.

Out of descriptors (EMFILE, ENFILE) when opening, the pool closes its own least recently
used ones and tries again; if it has none left to close, the error goes to the caller, for
whom it is not a failure of the log directory (``dir_failure.out_of_descriptors``).

A pool given the node's ``LogDirFailureChannel`` opens nothing in an offline log directory:
neither a descriptor it had closed, nor a sync's spare one, nor a new file; it raises the
directory's KAFKA_STORAGE_ERROR instead.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from collections import OrderedDict
from pathlib import Path

from .dir_failure import OUT_OF_DESCRIPTORS, LogDirFailureChannel

# Descriptors a node needs besides log files and client connections: stdio, the event
# loop's own, listening sockets, checkpoint and snapshot writes, fsyncs of closed files from
# worker threads.
RESERVED_DESCRIPTORS = 64
MIN_CAPACITY = 8
MIN_CONNECTIONS = 16
# Flags that only make sense the first time a file is opened.
_FIRST_OPEN_ONLY = os.O_CREAT | os.O_TRUNC | os.O_EXCL


def nofile_limit() -> int:
    """The soft RLIMIT_NOFILE (a large number when unlimited)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return 1 << 20 if soft == resource.RLIM_INFINITY else int(soft)


def default_capacity(nofile: int | None = None) -> int:
    """Half of what the descriptor limit leaves after the reserve: the other half is for
    client connections."""
    limit = nofile_limit() if nofile is None else nofile
    return max(MIN_CAPACITY, (limit - RESERVED_DESCRIPTORS) // 2)


def connection_capacity(files: int, nofile: int | None = None) -> int:
    """The connections a node can take beside ``files`` pooled descriptors and the reserve
    (the default of max.connections)."""
    limit = nofile_limit() if nofile is None else nofile
    return max(MIN_CONNECTIONS, limit - RESERVED_DESCRIPTORS - files)


class PooledFile:
    """One file whose descriptor the pool may close and reopen."""

    __slots__ = (
        "_fd",
        "_flags",
        "_mode",
        "_pins",
        "_sync_error",
        "_sync_lock",
        "closed",
        "dirty",
        "path",
        "pool",
    )

    def __init__(self, pool: FilePool, path: Path, flags: int, mode: int) -> None:
        self.pool = pool
        self.path = path
        self._flags = flags & ~_FIRST_OPEN_ONLY
        self._mode = mode
        self._fd = -1
        self._pins = 0  # syncs using the descriptor now: it is neither evicted nor closed
        self.closed = False
        # Whether a write may not be on disk yet: true from the first open (a file found on
        # disk may hold what a crashed process wrote) until an fsync.
        self.dirty = True
        # One fsync at a time: a second caller waits for the first's outcome instead of
        # returning at once because the first cleared ``dirty``. A failed fsync is final: the
        # kernel may have dropped the dirty pages and reports the error only once, so a later
        # fsync could succeed without them.
        self._sync_lock = threading.Lock()
        self._sync_error: OSError | None = None

    @property
    def is_open(self) -> bool:
        """Whether the file holds a descriptor now."""
        return self._fd >= 0

    def fd(self) -> int:
        """The descriptor, reopened if the pool closed it; now the most recently used."""
        pool = self.pool
        with pool._lock:
            if self.closed:
                raise OSError(errno.EBADF, "file closed", str(self.path))
            if self._fd >= 0:
                pool._lru.move_to_end(self)
                return self._fd
            return pool._open_locked(self, self._flags)

    def check_online(self) -> None:
        """Raise KAFKA_STORAGE_ERROR if the file's directory is offline, whether or not it
        holds a descriptor: for a read that comes long after the log's own check (a fetch
        response sent from the segment a chunk at a time)."""
        self.pool._check(self.path)

    def write_fd(self) -> int:
        """``fd()`` for a write or truncation: the file is dirty until the next ``sync``."""
        fd = self.fd()
        self.dirty = True
        return fd

    def sync(self) -> None:
        """fsync the file if it may hold unsynced writes (any thread); once an fsync of it has
        failed, every later one fails the same way."""
        with self._sync_lock:
            if self._sync_error is not None:
                error = self._sync_error
                raise OSError(
                    error.errno, f"an earlier fsync failed: {error.strerror}", str(self.path)
                )
            self._sync_once()

    def _sync_once(self) -> None:
        pool = self.pool
        with pool._lock:
            if not self.dirty or self.closed:
                return
            # Cleared before the fsync: a write racing it sets it again.
            self.dirty = False
            fd = self._fd
            if fd >= 0:
                self._pins += 1
        try:
            if fd >= 0:
                self._fsync(fd)
            else:
                pool._check(self.path)
                spare = os.open(self.path, self._flags)
                try:
                    self._fsync(spare)
                finally:
                    os.close(spare)
        except BaseException:
            self.dirty = True
            raise
        finally:
            if fd >= 0:
                with pool._lock:
                    self._pins -= 1
                    if self._pins == 0 and self.closed and self._fd >= 0:
                        pool._evict_locked(self)

    def _fsync(self, fd: int) -> None:
        try:
            os.fsync(fd)
        except OSError as exc:
            self._sync_error = exc
            raise

    def release(self) -> None:
        """Close the descriptor now (unless a sync holds it); the file stays usable."""
        with self.pool._lock:
            if self._fd >= 0 and self._pins == 0:
                self.pool._evict_locked(self)

    def close(self) -> None:
        """Close for good (after a sync in progress, if any)."""
        pool = self.pool
        with pool._lock:
            if self.closed:
                return
            self.closed = True
            pool.file_count -= 1
            if self._fd >= 0 and self._pins == 0:
                pool._evict_locked(self)

    def __repr__(self) -> str:
        state = "closed" if self.closed else f"fd={self._fd}"
        return f"PooledFile({self.path.name}, {state}, dirty={self.dirty})"


class FilePool:
    """At most ``capacity`` descriptors open at once (a sync in progress may hold one more
    each), the least recently used closed first."""

    def __init__(
        self, capacity: int | None = None, failures: LogDirFailureChannel | None = None
    ) -> None:
        """``failures``: the offline directories, where nothing is opened (none: no check)."""
        self.capacity = max(1, default_capacity() if capacity is None else capacity)
        self.failures = failures
        self._lock = threading.Lock()
        self._lru: OrderedDict[PooledFile, None] = OrderedDict()
        self.opens = 0  # descriptors opened, first opens and reopens alike
        self.file_count = 0  # files opened and not closed for good

    def open(self, path: Path, flags: int, mode: int = 0o644, *, lazy: bool = False) -> PooledFile:
        """Open ``path`` now (so a missing file or a bad flag raises here); later opens of the
        same file drop O_CREAT, O_TRUNC and O_EXCL. With ``lazy``, for a file known to exist,
        the first use opens it (loading thousands of empty segments then opens none)."""
        handle = PooledFile(self, path, flags, mode)
        with self._lock:
            if not lazy:
                self._open_locked(handle, flags)
            self.file_count += 1
        return handle

    @property
    def open_count(self) -> int:
        return len(self._lru)

    def _check(self, path: Path) -> None:
        if self.failures is not None:
            self.failures.check(path)

    # Everything below runs with ``_lock`` held.
    def _open_locked(self, handle: PooledFile, flags: int) -> int:
        self._check(handle.path)
        while len(self._lru) >= self.capacity and self._evict_lru_locked():
            pass
        while True:
            try:
                fd = os.open(handle.path, flags | os.O_CLOEXEC, handle._mode)
                break
            except OSError as exc:
                # The process is out of descriptors (connections hold them): give up ours.
                if exc.errno not in OUT_OF_DESCRIPTORS or not self._evict_lru_locked():
                    raise
        self.opens += 1
        handle._fd = fd
        self._lru[handle] = None
        return fd

    def _evict_lru_locked(self) -> bool:
        """Close the least recently used descriptor no sync holds; False if there is none."""
        for candidate in self._lru:
            if candidate._pins == 0:
                self._evict_locked(candidate)
                return True
        return False

    def _evict_locked(self, handle: PooledFile) -> None:
        del self._lru[handle]
        fd, handle._fd = handle._fd, -1
        os.close(fd)


_shared: FilePool | None = None
_shared_lock = threading.Lock()


def shared_pool() -> FilePool:
    """The pool of logs opened without one (tools and tests); a node's LogManager has its own."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = FilePool()
        return _shared
