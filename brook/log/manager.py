"""A node's log directories (Kafka's ``LogManager``): loading every partition log at startup
(recovering them after an unclean shutdown), creating and deleting logs, the per-directory
checkpoints, the clean-shutdown marker, ``meta.properties``, retention and flush scheduling.
A directory with an I/O error goes offline (``failures``): its logs are dropped and nothing
is written in it again, checkpoints and the clean-shutdown marker included. Every log's files
share one bounded pool of descriptors (``file_pool.py``).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brook.protocol.errors import Errors, KafkaError

from .checkpoints import (
    CheckpointError,
    OffsetCheckpointFile,
    write_atomically,
)
from .config import LogConfig
from .dir_failure import LogDirFailureChannel, out_of_descriptors
from .file_pool import FilePool
from .log import PartitionLog, parse_topic_partition, wall_clock_ms

if TYPE_CHECKING:
    from .cleaner_manager import LogCleanerManager

log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
META_PROPERTIES = "meta.properties"
DELETE_DIR_SUFFIX = "-delete"
STRAY_DIR_SUFFIX = "-stray"
# Kafka's producer.id.expiration.ms default: idempotence state of silent producers is dropped.
PRODUCER_ID_EXPIRATION_MS = 86_400_000

TopicPartition = tuple[str, int]
# checkpoint file -> the offsets it is to hold
CheckpointFiles = dict[Path, dict[TopicPartition, int]]


class LogManager:
    def __init__(
        self,
        log_dirs: list[str],
        topic_defaults: Mapping[str, Any],
        *,
        now_ms: Callable[[], int] = wall_clock_ms,
        producer_id_expiration_ms: int = PRODUCER_ID_EXPIRATION_MS,
        max_open_files: int | None = None,
        recovery_threads_per_dir: int = 1,
    ) -> None:
        """``max_open_files``: the descriptors the logs may hold at once (None: sized from
        RLIMIT_NOFILE, see ``file_pool.default_capacity``). ``recovery_threads_per_dir``:
        Kafka's num.recovery.threads.per.data.dir, here the threads that flush the logs at
        shutdown, each log on one thread."""
        if not log_dirs:
            raise ValueError("at least one log directory is needed")
        self.log_dirs = [Path(d) for d in log_dirs]
        self.default_config = LogConfig.from_topic_config(topic_defaults)
        self.producer_id_expiration_ms = producer_id_expiration_ms
        self._now = now_ms
        self._threads = max(1, recovery_threads_per_dir) * len(self.log_dirs)
        self.failures = LogDirFailureChannel()
        # The pool knows the offline directories: it opens nothing there.
        self.files = FilePool(max_open_files, self.failures)
        self._logs: dict[TopicPartition, PartitionLog] = {}
        # logs per directory, so that placing a new log does not count them all
        self._dir_counts: Counter[Path] = Counter()
        self._pending_deletes: list[tuple[Path, int]] = []  # renamed dir, when to remove it
        # The log cleaner's state, when it runs (log_cleaner.py): retention leaves the logs
        # it is cleaning alone, truncations and deletions update its checkpoints.
        self.cleaner: LogCleanerManager | None = None

    def attach_cleaner(self, cleaner: LogCleanerManager | None) -> None:
        self.cleaner = cleaner
        for plog in self._logs.values():
            plog.on_truncated = None if cleaner is None else cleaner.truncated

    def _added(self, plog: PartitionLog) -> None:
        if self.cleaner is not None:
            plog.on_truncated = self.cleaner.truncated

    def _removed(self, plog: PartitionLog) -> None:
        plog.on_truncated = None
        if self.cleaner is not None:
            self.cleaner.forget(plog)

    def online_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if not self.failures.is_offline(d)]

    # ------------------------------------------------------------------ lifecycle
    def startup(self) -> None:
        """Load every partition directory, recovering logs unless the last shutdown was clean.
        A directory that cannot be loaded (an I/O error) is left offline, its logs unloaded
        and their files back in the pool. Running out of descriptors is no reason to take a
        directory offline: the start fails instead (OSError, EMFILE), naming the limit.

        One log after the other, on this thread: a pooled descriptor is used right after it
        is handed out, which holds only while one thread at a time takes descriptors."""
        for directory in self.log_dirs:
            try:
                loaded = self._load_dir(directory)
            except (OSError, KafkaError) as exc:
                if isinstance(exc, KafkaError) and exc.code != Errors.KAFKA_STORAGE_ERROR:
                    raise
                if _caused_by_shortage(exc):
                    raise OSError(
                        errno.EMFILE,
                        f"{os.strerror(errno.EMFILE)} while loading the logs in {directory}: "
                        "the node cannot open its logs under this open-file limit; raise it "
                        f"(ulimit -n) or lower brook.log.max.open.files ({exc})",
                    ) from exc
                if isinstance(exc, OSError):
                    self.failures.fail(directory, "loading logs", exc)
                continue
            for tp in loaded:
                if tp in self._logs:
                    raise RuntimeError(f"{tp[0]}-{tp[1]} found in two log directories")
            self._logs.update(loaded)
            self._dir_counts[directory] += len(loaded)
            for plog in loaded.values():
                self._added(plog)
        log.info("loaded %d logs from %s", len(self._logs), ", ".join(map(str, self.log_dirs)))

    def _load_dir(self, directory: Path) -> dict[TopicPartition, PartitionLog]:
        directory.mkdir(parents=True, exist_ok=True)
        marker = directory / CLEAN_SHUTDOWN_MARKER
        clean = marker.exists()
        # Removed before loading: loading writes (recovery, rebuilt indexes), and a start that
        # fails halfway must not leave the directory looking cleanly shut down.
        marker.unlink(missing_ok=True)
        recovery_points = self._read_offsets(directory / RECOVERY_POINT_CHECKPOINT)
        log_starts = self._read_offsets(directory / LOG_START_CHECKPOINT)
        loaded: dict[TopicPartition, PartitionLog] = {}
        try:
            for name in sorted(os.listdir(directory)):
                path = directory / name
                if not path.is_dir():
                    continue
                if name.endswith(DELETE_DIR_SUFFIX):
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                try:
                    tp = parse_topic_partition(name)  # "-stray" directories are not logs
                except ValueError:
                    continue
                loaded[tp] = PartitionLog.open(
                    path,
                    self.default_config,
                    recovery_point=recovery_points.get(tp, 0),
                    log_start_offset=log_starts.get(tp, 0),
                    had_clean_shutdown=clean,
                    now_ms=self._now(),
                    failures=self.failures,
                    files=self.files,
                )
        except BaseException:
            for plog in loaded.values():
                plog.close_files()
            raise
        return loaded

    def _on_threads(self, fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
        """``fn`` over ``items`` on the recovery threads, results in order; the first error
        raises once every item is done. ``fn`` must not take pooled descriptors (syncs,
        which pin theirs, may)."""
        if self._threads == 1 or len(items) < 2:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(self._threads, thread_name_prefix="log-recovery") as pool:
            futures = [pool.submit(fn, item) for item in items]
        return [future.result() for future in futures]

    def shutdown(self) -> None:
        """Close every log, write the checkpoints, then mark each directory cleanly shut down,
        except the offline ones: the next start recovers those.

        The flushes and producer snapshots run on the recovery threads (fsyncs of thousands
        of small files are latency-bound); the checkpoints and markers follow them all, so a
        directory that one of them takes offline gets neither."""
        logs = list(self._logs.values())
        flushed = self._on_threads(_flush_for_close, logs)
        unflushed = {plog.log_dir for plog, ok in zip(logs, flushed, strict=True) if not ok}
        for plog in logs:
            plog.close_files()
        self.write_recovery_checkpoints()
        if self.cleaner is not None:
            self.cleaner.write_checkpoints()
        for directory in self.online_dirs():
            if directory in unflushed:
                log.warning("%s is not marked cleanly shut down: a log was not flushed", directory)
                continue
            try:
                write_atomically(directory / CLEAN_SHUTDOWN_MARKER, b"")
            except OSError as exc:
                self.failures.fail(directory, "writing the clean-shutdown marker", exc)

    def close_files(self) -> None:
        """Close every log's files and write nothing: the next start recovers them as after
        a crash (a node whose start failed)."""
        for plog in self._logs.values():
            plog.close_files()

    def handle_dir_failure(self, directory: Path) -> list[TopicPartition]:
        """Drop (and close) the logs of an offline directory; returns their partitions."""
        gone = [tp for tp, plog in self._logs.items() if plog.log_dir == directory]
        for tp in gone:
            self._forget(tp).close_files()
        log.warning(
            "logs for partitions %s are offline due to the failure of log directory %s",
            ", ".join(f"{t}-{p}" for t, p in gone) or "(none)",
            directory,
        )
        return gone

    # ------------------------------------------------------------------ logs
    def get_log(self, topic: str, partition: int) -> PartitionLog | None:
        return self._logs.get((topic, partition))

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        config: LogConfig,
        topic_id: uuid.UUID | None = None,
    ) -> PartitionLog:
        """The log of a partition, created in the emptiest directory when new; an existing
        log takes ``config`` and is checked against ``topic_id``."""
        existing = self._logs.get((topic, partition))
        if existing is not None:
            existing.assign_topic_id(topic_id)  # first: a log of another topic keeps its config
            if existing.config != config:
                existing.update_config(config)
            return existing
        parent = self._emptiest_dir()
        path = parent / f"{topic}-{partition}"
        new = not path.exists()
        # The new directory is fsynced (into its parent) by the log's first flush.
        try:
            parent.mkdir(parents=True, exist_ok=True)
            plog = PartitionLog.open(
                path,
                config,
                topic_id=topic_id,
                now_ms=self._now(),
                failures=self.failures,
                files=self.files,
            )
        except OSError as exc:
            error = self.failures.fail(parent, f"creating the log of {topic}-{partition}", exc)
            self._remove_partial_log(path, new)
            raise error from exc
        except KafkaError:
            self._remove_partial_log(path, new)
            raise
        self._logs[(topic, partition)] = plog
        self._dir_counts[parent] += 1
        self._added(plog)
        return plog

    def _remove_partial_log(self, path: Path, new: bool) -> None:
        """What a failed creation left of a new log, while its directory is online (the
        process was out of descriptors): best effort, since the log that a retry creates
        fsyncs its directory entry anyway (``LoadedLog.fresh``)."""
        if new and not self.failures.is_offline(path.parent):
            shutil.rmtree(path, ignore_errors=True)

    def _forget(self, tp: TopicPartition) -> PartitionLog:
        """Drop a log from the ones this manager holds (and from its directory's count)."""
        plog = self._logs.pop(tp)
        self._dir_counts[plog.log_dir] -= 1
        self._removed(plog)
        return plog

    def _emptiest_dir(self) -> Path:
        online = self.online_dirs()
        if not online:
            raise KafkaError(
                Errors.KAFKA_STORAGE_ERROR,
                f"every log directory is offline: {', '.join(map(str, self.log_dirs))}",
            )
        if len(online) == 1:
            return online[0]
        return min(online, key=lambda d: self._dir_counts[d])

    def delete_log(self, topic: str, partition: int) -> None:
        """Rename the directory to ``<name>.<uuid>-delete``; ``remove_deleted_logs`` removes it
        after file.delete.delay.ms (and startup removes any left)."""
        if (topic, partition) not in self._logs:
            return
        plog = self._forget((topic, partition))
        plog.close_files()
        if self.failures.is_offline(plog.log_dir):
            return  # the next start finds it a stray log
        doomed = plog.dir.with_name(f"{plog.dir.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        # Not fsynced: if a crash undoes the rename, the next start finds a log that the
        # metadata no longer assigns to this broker and sets it aside then.
        try:
            os.replace(plog.dir, doomed)
        except OSError as exc:
            raise self.failures.fail(plog.log_dir, f"deleting {plog.dir.name}", exc) from exc
        self._pending_deletes.append((doomed, self._now() + plog.config.file_delete_delay_ms))

    def set_aside_stray_log(self, topic: str, partition: int) -> Path | None:
        """A log this node must not host (Kafka's stray log): one holding data is moved aside
        to ``<topic>-<partition>.<id>-stray``, never deleted, since the metadata that disowns
        it may itself be what went wrong; an empty one is deleted. Returns the new place."""
        if (topic, partition) not in self._logs:
            return None
        plog = self._forget((topic, partition))
        empty = plog.size_in_bytes() == 0
        plog.close_files()
        try:
            if empty:
                shutil.rmtree(plog.dir)
                return None
            aside = plog.dir.with_name(f"{plog.dir.name}.{uuid.uuid4().hex}{STRAY_DIR_SUFFIX}")
            os.replace(plog.dir, aside)
        except OSError as exc:
            raise self.failures.fail(plog.log_dir, f"setting aside {plog.dir.name}", exc) from exc
        return aside

    def discard_new_log(self, topic: str, partition: int) -> None:
        """Remove a log created for a change that was then not committed."""
        if (topic, partition) not in self._logs:
            return
        plog = self._forget((topic, partition))
        plog.close_files()
        if not self.failures.is_offline(plog.log_dir):
            shutil.rmtree(plog.dir, ignore_errors=True)

    def remove_deleted_logs(self, now_ms: int) -> int:
        """Remove the renamed directories whose delay has passed; returns how many."""
        due = [entry for entry in self._pending_deletes if entry[1] <= now_ms]
        self._pending_deletes = [entry for entry in self._pending_deletes if entry[1] > now_ms]
        for path, _ in due:
            shutil.rmtree(path, ignore_errors=True)
        return len(due)

    def logs(self) -> Iterable[PartitionLog]:
        return list(self._logs.values())

    # ------------------------------------------------------------------ checkpoints
    def _logs_in(self, directory: Path) -> dict[TopicPartition, PartitionLog]:
        return {tp: plog for tp, plog in self._logs.items() if plog.dir.parent == directory}

    @staticmethod
    def _read_offsets(path: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(path).read()
        except CheckpointError as exc:
            log.warning("ignoring unreadable checkpoint: %s", exc)
            return {}

    # The ``*_files`` methods take a snapshot (on the thread that changes the logs) and
    # ``write_checkpoints`` does the I/O, so a worker thread can do the fsyncs.
    def recovery_checkpoint_files(self) -> CheckpointFiles:
        """Recovery points and log start offsets of every log, per online directory."""
        files: CheckpointFiles = {}
        for directory in self.online_dirs():
            logs = self._logs_in(directory)
            files[directory / RECOVERY_POINT_CHECKPOINT] = {
                tp: plog.recovery_point for tp, plog in logs.items()
            }
            files[directory / LOG_START_CHECKPOINT] = {
                tp: plog.log_start_offset for tp, plog in logs.items()
            }
        return files

    def high_watermark_files(self, hws: Mapping[TopicPartition, int]) -> CheckpointFiles:
        """The broker's high watermarks, each in the (online) directory holding its log."""
        files: CheckpointFiles = {}
        for directory in self.online_dirs():
            logs = self._logs_in(directory)
            files[directory / HIGH_WATERMARK_CHECKPOINT] = {
                tp: hw for tp, hw in hws.items() if tp in logs
            }
        return files

    def write_checkpoints(self, files: CheckpointFiles) -> None:
        """Write each file (safe on a worker thread); a failure takes its directory offline."""
        for path, offsets in files.items():
            if self.failures.is_offline(path.parent):
                continue
            try:
                OffsetCheckpointFile(path).write(offsets)
            except OSError as exc:
                self.failures.fail(path.parent, f"writing {path.name}", exc)

    def write_recovery_checkpoints(self) -> None:
        self.write_checkpoints(self.recovery_checkpoint_files())

    def write_high_watermarks(self, hws: Mapping[TopicPartition, int]) -> None:
        self.write_checkpoints(self.high_watermark_files(hws))

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        hws: dict[TopicPartition, int] = {}
        for directory in self.log_dirs:
            hws.update(self._read_offsets(directory / HIGH_WATERMARK_CHECKPOINT))
        return hws

    # ------------------------------------------------------------------ maintenance
    def run_retention(self, now_ms: int, high_watermarks: Mapping[TopicPartition, int]) -> int:
        """Apply every log's retention (bounded by its high watermark), expire idle producer
        ids and remove deleted directories whose delay passed; returns segments deleted. A
        log the cleaner is cleaning waits for the next run (Kafka's cleaner applies a
        compacted log's retention itself for the same reason)."""
        deleted = 0
        for tp, plog in list(self._logs.items()):
            if self.cleaner is not None and self.cleaner.in_progress(tp):
                continue  # the cleaner swaps its segments: next time
            try:
                deleted += plog.delete_old_segments(now_ms, high_watermarks.get(tp))
            except KafkaError:
                continue  # its directory is offline now
            plog.producer_state.remove_expired(now_ms, self.producer_id_expiration_ms)
        self.remove_deleted_logs(now_ms)
        return deleted

    def flush_due(self, now_ms: int) -> list[PartitionLog]:
        """Logs whose flush.messages / flush.ms policy asks for an fsync now."""
        return [plog for plog in self._logs.values() if plog.needs_flush(now_ms)]


def _flush_for_close(plog: PartitionLog) -> bool:
    """``PartitionLog.flush_for_close`` on a shutdown thread; False if it failed. A storage
    error is not raised: an I/O error has taken the directory offline (its logs recover at
    the next start, and it gets no checkpoint or marker); out of descriptors, the directory
    stays online but gets no marker either, so the next start recovers it too."""
    try:
        plog.flush_for_close()
    except KafkaError as exc:
        log.error("could not flush %s at shutdown: %s", plog.dir.name, exc)
        return False
    return True


def _caused_by_shortage(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it was raised from) is the process running out of
    descriptors."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        if out_of_descriptors(cause):
            return True
        seen.add(id(cause))
        cause = cause.__cause__
    return False
