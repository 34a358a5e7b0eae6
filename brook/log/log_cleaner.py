"""The log cleaner (Kafka's ``LogCleaner``): ``log.cleaner.threads`` threads that, in turn,
take the dirtiest compacted log (cleaner_manager.py), clean it (cleaner.py) and record where
its dirty part now begins, sleeping ``log.cleaner.backoff.ms`` when no log needs cleaning.

The event loop keeps serving meanwhile: the threads read segments through their own
descriptors and write cleaned segments beside them; only the steps that look at or change a
log's segment list (choosing the log, swapping a cleaned segment in) run on the thread that
owns the logs, handed over by ``run_on_log_thread``, each a few file renames long.
"""

from __future__ import annotations

import concurrent.futures
import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from brook.protocol.errors import KafkaError

from .cleaner import Cleaner, CleanerStats, CleaningAborted, Throttler
from .cleaner_manager import LogCleanerManager, LogToClean, TopicPartition
from .log import wall_clock_ms
from .manager import LogManager
from .offset_map import OffsetMap
from .segment import SegmentView
from .swap import CleanedFiles

log = logging.getLogger(__name__)

_T = TypeVar("_T")
# Runs a function on the thread that owns the logs; the future holds its result.
RunOnLogThread = Callable[[Callable[[], Any]], "concurrent.futures.Future[Any]"]


def run_here(fn: Callable[[], _T]) -> concurrent.futures.Future[_T]:
    """``RunOnLogThread`` for a cleaner driven from the logs' own thread (tests, tools)."""
    future: concurrent.futures.Future[_T] = concurrent.futures.Future()
    try:
        future.set_result(fn())
    except BaseException as exc:
        future.set_exception(exc)
    return future


@dataclass(frozen=True)
class CleanerConfig:
    """The ``log.cleaner.*`` settings (Kafka's CleanerConfig)."""

    enabled: bool = True
    threads: int = 1
    backoff_ms: int = 15000
    dedupe_buffer_size: int = 134217728
    io_buffer_size: int = 524288
    load_factor: float = 0.9
    max_io_bytes_per_second: float = float("inf")
    swap_delay_ms: int = 0  # brook.fault.cleaner.swap.delay.ms

    @classmethod
    def from_server_config(cls, cfg: Mapping[str, Any]) -> CleanerConfig:
        return cls(
            enabled=bool(cfg["log.cleaner.enable"]),
            threads=int(cfg["log.cleaner.threads"]),
            backoff_ms=int(cfg["log.cleaner.backoff.ms"]),
            dedupe_buffer_size=int(cfg["log.cleaner.dedupe.buffer.size"]),
            io_buffer_size=int(cfg["log.cleaner.io.buffer.size"]),
            load_factor=float(cfg["log.cleaner.io.buffer.load.factor"]),
            max_io_bytes_per_second=float(cfg["log.cleaner.io.max.bytes.per.second"]),
            swap_delay_ms=int(cfg["brook.fault.cleaner.swap.delay.ms"]),
        )


class LogCleaner:
    """The cleaner threads of one node's ``log_manager``."""

    def __init__(
        self,
        log_manager: LogManager,
        config: CleanerConfig,
        *,
        run_on_log_thread: RunOnLogThread = run_here,
        high_watermark: Callable[[TopicPartition], int | None] | None = None,
        now_ms: Callable[[], int] = wall_clock_ms,
    ) -> None:
        """``high_watermark``: a log's high watermark (cleaning stops below it), None for a
        log not served; by default the log end (a node without replication)."""
        self.log_manager = log_manager
        self.config = config
        self.manager = LogCleanerManager(
            log_manager.log_dirs, log_manager.logs, log_manager.failures
        )
        log_manager.attach_cleaner(self.manager)
        self._run_on_log_thread = run_on_log_thread
        self._high_watermark = high_watermark or self._log_end
        self._now = now_ms
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._throttler = Throttler(config.max_io_bytes_per_second, self._stop.wait)
        self.last_stats: CleanerStats | None = None
        self.cleanings = 0  # finished cleanings, for tests and tools

    def _log_end(self, tp: TopicPartition) -> int | None:
        plog = self.log_manager.get_log(*tp)
        return None if plog is None else plog.log_end_offset

    # ------------------------------------------------------------------ threads
    def start(self) -> None:
        for n in range(self.config.threads):
            thread = threading.Thread(
                target=self._run, args=(n,), name=f"log-cleaner-{n}", daemon=True
            )
            self._threads.append(thread)
            thread.start()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the threads, each at its next read or swap (blocking: call it off the logs'
        thread, which the threads may be waiting on)."""
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout)
        self._threads.clear()

    def _run(self, cleaner_id: int) -> None:
        cleaner = self.new_cleaner()
        backoff = self.config.backoff_ms / 1000
        while not self._stop.is_set():
            try:
                cleaned = self.clean_once(cleaner, cleaner_id)
            except CleaningAborted:
                return  # the node is stopping
            except Exception:
                log.exception("log cleaner %d failed", cleaner_id)
                cleaned = False
            if not cleaned:
                self._stop.wait(backoff)

    def new_cleaner(self) -> Cleaner:
        """A cleaner with its share of the offset-map memory and the read buffer."""
        config = self.config
        threads = max(1, config.threads)
        return Cleaner(
            OffsetMap(config.dedupe_buffer_size // threads, config.load_factor),
            self._swap,
            io_buffer_size=config.io_buffer_size // threads // 2,
            throttler=self._throttler,
            stopping=self._stop.is_set,
            swap_delay=self._swap_delay if config.swap_delay_ms > 0 else None,
        )

    # ------------------------------------------------------------------ one cleaning
    def clean_once(self, cleaner: Cleaner, cleaner_id: int = 0) -> bool:
        """Choose and clean one log; False when none needed cleaning."""
        now = self._now()
        job: LogToClean | None = self._on_log_thread(
            lambda: self.manager.grab_filthiest(now, self._high_watermark)
        )
        if job is None:
            return False
        name = job.log.dir.name
        end_offset: int | None = None
        try:
            end_offset, stats = cleaner.clean(job, now)
        except (CleaningAborted, FileNotFoundError) as exc:
            log.info("cleaning of %s stopped: %s", name, exc)
        except KafkaError as exc:  # its directory went offline
            log.warning("cleaning of %s stopped: %s", name, exc)
        except OSError as exc:
            # As Kafka: an I/O error while cleaning takes the log directory offline.
            self.log_manager.failures.fail(job.log.log_dir, f"cleaning {name}", exc)
        except Exception:  # a corrupt batch (CorruptBatch) among others
            log.exception("%s cannot be cleaned; it is left as it is until a restart", name)
            self.manager.mark_uncleanable(job)
            return True
        else:
            self.last_stats = stats
            self.cleanings += 1
            _log_stats(cleaner_id, job, end_offset, stats)
        self.manager.done_cleaning(job, end_offset)
        return True

    def _on_log_thread(self, fn: Callable[[], _T]) -> _T:
        future = self._run_on_log_thread(fn)
        while True:
            try:
                return future.result(timeout=0.2)  # type: ignore[no-any-return]
            except concurrent.futures.TimeoutError:
                if self._stop.is_set() and future.cancel():
                    raise CleaningAborted("the node is stopping") from None

    def _swap(self, job: LogToClean, group: list[SegmentView], files: CleanedFiles) -> bool:
        return self._on_log_thread(lambda: job.log.replace_segments(group, files))

    def _swap_delay(self) -> None:
        self._stop.wait(self.config.swap_delay_ms / 1000)


def _log_stats(
    cleaner_id: int, job: LogToClean, end_offset: int | None, stats: CleanerStats
) -> None:
    elapsed = max(stats.elapsed, 1e-9)
    mb = stats.bytes_read / 1e6
    log.info(
        "log cleaner %d cleaned %s (dirty part [%d, %d)): %.1f MB in %.2f s (%.1f MB/s), "
        "%d of %d records kept, %.1f MB written in %d segment(s) (%.0f%% smaller)%s",
        cleaner_id,
        job.log.dir.name,
        job.first_dirty_offset,
        end_offset,
        mb,
        elapsed,
        mb / elapsed,
        stats.records_kept,
        stats.records_read,
        stats.bytes_written / 1e6,
        stats.groups,
        100 * (1 - stats.bytes_written / stats.bytes_read) if stats.bytes_read else 0,
        f", {stats.invalid_records} records without a key dropped" if stats.invalid_records else "",
    )


__all__ = ["CleanerConfig", "LogCleaner", "RunOnLogThread", "run_here"]
