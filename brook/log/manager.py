"""A node's log directories (Kafka's ``LogManager``): loading every partition log at startup
(recovering them after an unclean shutdown), creating and deleting logs, the per-directory
checkpoints, the clean-shutdown marker, ``meta.properties``, retention and flush scheduling.
Every log's files share one bounded pool of descriptors (``file_pool.py``).
"""

from __future__ import annotations

import logging
import os
import shutil
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .checkpoints import (
    CheckpointError,
    OffsetCheckpointFile,
    read_properties,
    write_atomically,
    write_properties,
)
from .config import LogConfig
from .file_pool import FilePool
from .log import PartitionLog, parse_topic_partition, wall_clock_ms

log = logging.getLogger(__name__)

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint"
CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"
META_PROPERTIES = "meta.properties"
DELETE_DIR_SUFFIX = "-delete"
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
        self.files = FilePool(max_open_files)
        self._logs: dict[TopicPartition, PartitionLog] = {}
        # logs per directory, so that placing a new log does not count them all
        self._dir_counts: Counter[Path] = Counter()
        self._pending_deletes: list[tuple[Path, int]] = []  # renamed dir, when to remove it

    # ------------------------------------------------------------------ lifecycle
    def startup(self) -> None:
        """Load every partition directory, recovering logs unless the last shutdown was clean.

        One log after the other, on this thread: a pooled descriptor is used right after it
        is handed out, which holds only while one thread at a time takes descriptors."""
        for directory in self.log_dirs:
            directory.mkdir(parents=True, exist_ok=True)
            marker = directory / CLEAN_SHUTDOWN_MARKER
            clean = marker.exists()
            recovery_points = self._read_offsets(directory / RECOVERY_POINT_CHECKPOINT)
            log_starts = self._read_offsets(directory / LOG_START_CHECKPOINT)
            for name in sorted(os.listdir(directory)):
                path = directory / name
                if not path.is_dir():
                    continue
                if name.endswith(DELETE_DIR_SUFFIX):
                    shutil.rmtree(path, ignore_errors=True)
                    continue
                try:
                    tp = parse_topic_partition(name)
                except ValueError:
                    continue
                if tp in self._logs:
                    raise RuntimeError(f"{tp[0]}-{tp[1]} found in two log directories")
                self._logs[tp] = PartitionLog.open(
                    path,
                    self.default_config,
                    recovery_point=recovery_points.get(tp, 0),
                    log_start_offset=log_starts.get(tp, 0),
                    had_clean_shutdown=clean,
                    now_ms=self._now(),
                    files=self.files,
                )
                self._dir_counts[directory] += 1
            marker.unlink(missing_ok=True)
        log.info("loaded %d logs from %s", len(self._logs), ", ".join(map(str, self.log_dirs)))

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
        """Close every log, write the checkpoints, then mark each directory cleanly shut down.

        The flushes and producer snapshots run on the recovery threads (fsyncs of thousands
        of small files are latency-bound); the checkpoints and markers follow them all."""
        logs = list(self._logs.values())
        self._on_threads(PartitionLog.flush_for_close, logs)
        for plog in logs:
            plog.close_files()
        self.write_recovery_checkpoints()
        for directory in self.log_dirs:
            write_atomically(directory / CLEAN_SHUTDOWN_MARKER, b"")

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
            if existing.config != config:
                existing.update_config(config)
            existing.assign_topic_id(topic_id)
            return existing
        parent = self._emptiest_dir()  # created by startup
        # The new directory is fsynced (into its parent) by the log's first flush.
        plog = PartitionLog.open(
            parent / f"{topic}-{partition}",
            config,
            topic_id=topic_id,
            now_ms=self._now(),
            files=self.files,
        )
        self._logs[(topic, partition)] = plog
        self._dir_counts[parent] += 1
        return plog

    def _emptiest_dir(self) -> Path:
        if len(self.log_dirs) == 1:
            return self.log_dirs[0]
        return min(self.log_dirs, key=lambda d: self._dir_counts[d])

    def delete_log(self, topic: str, partition: int) -> None:
        """Rename the directory to ``<name>.<uuid>-delete``; ``remove_deleted_logs`` removes it
        after file.delete.delay.ms (and startup removes any left)."""
        plog = self._logs.pop((topic, partition), None)
        if plog is None:
            return
        self._dir_counts[plog.dir.parent] -= 1
        plog.close_files()
        doomed = plog.dir.with_name(f"{plog.dir.name}.{uuid.uuid4().hex}{DELETE_DIR_SUFFIX}")
        # Not fsynced: if a crash undoes the rename, the next start finds a log that the
        # metadata no longer assigns to this broker and deletes it then.
        os.replace(plog.dir, doomed)
        self._pending_deletes.append((doomed, self._now() + plog.config.file_delete_delay_ms))

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
        """Recovery points and log start offsets of every log, per directory."""
        files: CheckpointFiles = {}
        for directory in self.log_dirs:
            logs = self._logs_in(directory)
            files[directory / RECOVERY_POINT_CHECKPOINT] = {
                tp: plog.recovery_point for tp, plog in logs.items()
            }
            files[directory / LOG_START_CHECKPOINT] = {
                tp: plog.log_start_offset for tp, plog in logs.items()
            }
        return files

    def high_watermark_files(self, hws: Mapping[TopicPartition, int]) -> CheckpointFiles:
        """The broker's high watermarks, each in the directory holding its log."""
        files: CheckpointFiles = {}
        for directory in self.log_dirs:
            logs = self._logs_in(directory)
            files[directory / HIGH_WATERMARK_CHECKPOINT] = {
                tp: hw for tp, hw in hws.items() if tp in logs
            }
        return files

    @staticmethod
    def write_checkpoints(files: CheckpointFiles) -> None:
        for path, offsets in files.items():
            OffsetCheckpointFile(path).write(offsets)

    def write_recovery_checkpoints(self) -> None:
        self.write_checkpoints(self.recovery_checkpoint_files())

    def write_high_watermarks(self, hws: Mapping[TopicPartition, int]) -> None:
        self.write_checkpoints(self.high_watermark_files(hws))

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        hws: dict[TopicPartition, int] = {}
        for directory in self.log_dirs:
            hws.update(self._read_offsets(directory / HIGH_WATERMARK_CHECKPOINT))
        return hws

    def read_meta_properties(self) -> dict[str, str]:
        """``meta.properties`` of the first directory that has one (empty if none has)."""
        for directory in self.log_dirs:
            props = read_properties(directory / META_PROPERTIES)
            if props:
                return props
        return {}

    def write_meta_properties(self, props: Mapping[str, str]) -> None:
        for directory in self.log_dirs:
            directory.mkdir(parents=True, exist_ok=True)
            write_properties(directory / META_PROPERTIES, props)

    # ------------------------------------------------------------------ maintenance
    def run_retention(self, now_ms: int, high_watermarks: Mapping[TopicPartition, int]) -> int:
        """Apply every log's retention (bounded by its high watermark), expire idle producer
        ids and remove deleted directories whose delay passed; returns segments deleted."""
        deleted = 0
        for tp, plog in list(self._logs.items()):
            deleted += plog.delete_old_segments(now_ms, high_watermarks.get(tp))
            plog.producer_state.remove_expired(now_ms, self.producer_id_expiration_ms)
        self.remove_deleted_logs(now_ms)
        return deleted

    def flush_due(self, now_ms: int) -> list[PartitionLog]:
        """Logs whose flush.messages / flush.ms policy asks for an fsync now."""
        return [plog for plog in self._logs.values() if plog.needs_flush(now_ms)]
