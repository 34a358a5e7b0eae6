"""Log directory failures (Kafka's ``LogDirFailureChannel``): where every I/O error on a log
directory is reported. The first error takes the directory offline until the node restarts:
each log in it then refuses appends, reads and flushes with KAFKA_STORAGE_ERROR, so nothing
written after a failed write (whose bytes, or whose fsync, are in doubt) is ever acknowledged,
and the handler the node installs stops serving the partitions there. The next start recovers
the directory as it would after a crash, since no clean-shutdown marker is written for it.

Running out of file descriptors (EMFILE, ENFILE) is not a failure of the directory: it says
nothing about the disk, and it passes once descriptors are given back (clients disconnect,
the descriptor pool closes its own). It fails the operation with KAFKA_STORAGE_ERROR, which
clients retry, and leaves the directory online.
"""

from __future__ import annotations

import errno
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path

from brook.protocol.errors import Errors, KafkaError

log = logging.getLogger(__name__)

FailureHandler = Callable[[Path], None]
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)
_SHORTAGE_LOG_INTERVAL_S = 10.0


def out_of_descriptors(exc: BaseException) -> bool:
    """Whether ``exc`` says the process (EMFILE) or the system (ENFILE) has no descriptor
    left, rather than that the disk failed."""
    return isinstance(exc, OSError) and exc.errno in OUT_OF_DESCRIPTORS


def offline_error(name: str, directory: Path) -> KafkaError:
    """What a log in an offline directory answers (Kafka's words for an offline partition)."""
    return KafkaError(
        Errors.KAFKA_STORAGE_ERROR, f"{name} is in an offline log directory {directory}"
    )


class LogDirFailureChannel:
    """Offline log directories, shared by the log manager and every log it opens. ``fail`` may
    be called from any thread (flushes run on worker threads); the handler is called once per
    directory, on the failing thread, and must hand the work over to its own thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offline: dict[Path, str] = {}
        self._handler: FailureHandler | None = None
        self._shortages = 0  # out-of-descriptor errors reported
        self._shortage_logged = -_SHORTAGE_LOG_INTERVAL_S

    def set_handler(self, handler: FailureHandler | None) -> None:
        """Install the handler, and run it for the directories already offline."""
        with self._lock:
            self._handler = handler
            already = list(self._offline)
        if handler is not None:
            for directory in already:
                handler(directory)

    def is_offline(self, directory: Path) -> bool:
        return directory in self._offline

    def check(self, path: Path) -> None:
        """Raise KAFKA_STORAGE_ERROR if ``path`` lies in an offline directory (the descriptor
        pool asks before it opens a file, so nothing there is reopened or created)."""
        if not self._offline:
            return
        for directory in path.parents:
            if directory in self._offline:
                raise offline_error(str(path.relative_to(directory)), directory)

    def offline_dirs(self) -> dict[Path, str]:
        """Each offline directory with the error that took it offline."""
        with self._lock:
            return dict(self._offline)

    def fail(self, directory: Path, action: str, exc: BaseException) -> KafkaError:
        """Record an I/O error on ``directory`` (``action``: what was being done, as in "Error
        while <action>"); returns the KAFKA_STORAGE_ERROR to raise in its place. An error
        that only says the process is out of descriptors leaves the directory online."""
        message = f"Error while {action} in dir {directory}: {exc}"
        if out_of_descriptors(exc):
            self._report_shortage(message)
            return KafkaError(Errors.KAFKA_STORAGE_ERROR, message)
        with self._lock:
            first = directory not in self._offline
            if first:
                self._offline[directory] = message
            handler = self._handler
        if first:
            log.error(
                "%s. The log directory %s is offline: nothing in it is read or written again "
                "until the node restarts (the restart recovers it as after a crash)",
                message,
                directory,
            )
            if handler is not None:
                handler(directory)
        else:
            log.warning("%s (the directory was already offline)", message)
        return KafkaError(Errors.KAFKA_STORAGE_ERROR, message)

    def _report_shortage(self, message: str) -> None:
        """Log an out-of-descriptors error, at most one line per interval (a node out of
        descriptors fails many requests at once)."""
        with self._lock:
            self._shortages += 1
            now = time.monotonic()
            if now - self._shortage_logged < _SHORTAGE_LOG_INTERVAL_S:
                return
            self._shortage_logged = now
            count = self._shortages
        log.warning(
            "%s. The node is out of file descriptors (%d such errors so far); the log "
            "directory stays online. Raise the open-file limit (ulimit -n) or lower "
            "max.connections or brook.log.max.open.files",
            message,
            count,
        )
