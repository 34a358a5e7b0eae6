"""Log directory failures (Kafka's ``LogDirFailureChannel``): where every I/O error on a log
directory is reported. The first error takes the directory offline until the node restarts:
each log in it then refuses appends, reads and flushes with KAFKA_STORAGE_ERROR, so nothing
written after a failed write (whose bytes, or whose fsync, are in doubt) is ever acknowledged,
and the handler the node installs stops serving the partitions there. The next start recovers
the directory as it would after a crash, since no clean-shutdown marker is written for it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from pathlib import Path

from brook.protocol.errors import Errors, KafkaError

log = logging.getLogger(__name__)

FailureHandler = Callable[[Path], None]


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

    def offline_dirs(self) -> dict[Path, str]:
        """Each offline directory with the error that took it offline."""
        with self._lock:
            return dict(self._offline)

    def fail(self, directory: Path, action: str, exc: BaseException) -> KafkaError:
        """Record an I/O error on ``directory`` (``action``: what was being done, as in "Error
        while <action>"); returns the KAFKA_STORAGE_ERROR to raise in its place."""
        message = f"Error while {action} in dir {directory}: {exc}"
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
