"""The log manager: loading directories, checkpoints, the clean-shutdown marker, deletion,
meta.properties, retention and flush scheduling."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from brook.log.config import LogConfig
from brook.log.manager import LogManager
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch

NOW = 1_700_000_000_000
MakeConfig = Callable[..., LogConfig]
Exhausted = Callable[[], contextlib.AbstractContextManager[None]]


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> int:
        return self.now


def _manager(tmp_path: Path, dirs: int = 1, clock: Clock | None = None) -> LogManager:
    return LogManager(
        [str(tmp_path / f"d{i}") for i in range(dirs)],
        {"segment.bytes": 1000},
        now_ms=clock or Clock(),
    )


def _append(manager: LogManager, topic: str, partition: int, batches: int) -> None:
    plog = manager.get_log(topic, partition)
    assert plog is not None
    for _ in range(batches):
        plog.append_as_leader(build_simple_batch([b"x" * 100] * 2, timestamp=NOW), 0, NOW)


def test_logs_are_spread_over_directories_and_reloaded(
    tmp_path: Path, make_config: MakeConfig
) -> None:
    manager = _manager(tmp_path, dirs=2)
    manager.startup()
    config = make_config(segment_bytes=1000)
    names = [("my-topic.v1", 0), ("my-topic.v1", 1), ("__cluster_metadata", 0), ("a-b-c", 12)]
    for topic, partition in names:
        manager.get_or_create_log(topic, partition, config)
        _append(manager, topic, partition, 6)
    counts = [len(list((tmp_path / f"d{i}").glob("*-*"))) for i in range(2)]
    assert counts == [2, 2]
    manager.shutdown()
    for i in range(2):
        assert (tmp_path / f"d{i}" / ".kafka_cleanshutdown").exists()

    again = _manager(tmp_path, dirs=2)
    (tmp_path / "d0" / "not-a-partition").mkdir()
    (tmp_path / "d0" / "stray.txt").write_text("x")
    again.startup()
    assert sorted((p.topic, p.partition) for p in again.logs()) == sorted(names)
    assert all(p.log_end_offset == 12 for p in again.logs())
    assert all(p.recovery_point == 12 for p in again.logs())
    assert not (tmp_path / "d0" / ".kafka_cleanshutdown").exists()
    same = again.get_or_create_log("a-b-c", 12, config)
    assert same is again.get_log("a-b-c", 12)
    again.shutdown()


def test_checkpoint_files_use_kafkas_format(tmp_path: Path, make_config: MakeConfig) -> None:
    manager = _manager(tmp_path)
    manager.startup()
    manager.get_or_create_log("t", 0, make_config())
    manager.get_or_create_log("t", 1, make_config())
    _append(manager, "t", 0, 3)
    first = manager.get_log("t", 0)
    assert first is not None
    first.flush()
    manager.write_recovery_checkpoints()
    directory = tmp_path / "d0"
    assert (directory / "recovery-point-offset-checkpoint").read_text() == "0\n2\nt 0 6\nt 1 0\n"
    assert (directory / "log-start-offset-checkpoint").read_text() == "0\n2\nt 0 0\nt 1 0\n"
    manager.write_high_watermarks({("t", 0): 4, ("t", 1): 0, ("gone", 0): 9})
    assert (directory / "replication-offset-checkpoint").read_text() == "0\n2\nt 0 4\nt 1 0\n"
    assert manager.read_high_watermarks() == {("t", 0): 4, ("t", 1): 0}
    manager.shutdown()


def test_unclean_startup_recovers_from_the_checkpointed_point(
    tmp_path: Path, make_config: MakeConfig
) -> None:
    manager = _manager(tmp_path)
    manager.startup()
    plog = manager.get_or_create_log("t", 0, make_config(segment_bytes=1000))
    _append(manager, "t", 0, 4)
    plog.flush()
    manager.write_recovery_checkpoints()
    _append(manager, "t", 0, 4)
    plog.close_files()  # a crash: no snapshot, no marker
    active = plog.segments()[-1]
    with open(active.log_path, "r+b") as f:
        f.truncate(active.size - 1)
    again = _manager(tmp_path)
    again.startup()
    recovered = again.get_log("t", 0)
    assert recovered is not None
    assert recovered.log_end_offset == 14
    assert recovered.recovery_point == 8
    again.shutdown()


def test_delete_log_renames_then_removes_after_the_delay(
    tmp_path: Path, make_config: MakeConfig
) -> None:
    clock = Clock()
    manager = _manager(tmp_path, clock=clock)
    manager.startup()
    config = make_config(file_delete_delay_ms=1000)
    manager.get_or_create_log("gone-topic", 3, config)
    _append(manager, "gone-topic", 3, 2)
    manager.delete_log("gone-topic", 3)
    manager.delete_log("gone-topic", 3)
    assert manager.get_log("gone-topic", 3) is None
    [renamed] = [p.name for p in (tmp_path / "d0").iterdir() if p.is_dir()]
    assert re.fullmatch(r"gone-topic-3\.[0-9a-f]{32}-delete", renamed)
    assert manager.run_retention(NOW + 999, {}) == 0
    assert (tmp_path / "d0" / renamed).exists()
    manager.run_retention(NOW + 1000, {})
    assert not (tmp_path / "d0" / renamed).exists()
    # a directory left marked for deletion goes at the next startup
    manager.get_or_create_log("other", 0, config)
    manager.delete_log("other", 0)
    manager.shutdown()
    again = _manager(tmp_path)
    again.startup()
    assert [p for p in (tmp_path / "d0").iterdir() if p.is_dir()] == []
    again.shutdown()


def test_topic_id_is_checked_for_existing_logs(tmp_path: Path, make_config: MakeConfig) -> None:
    manager = _manager(tmp_path)
    manager.startup()
    topic_id = uuid.uuid4()
    plog = manager.get_or_create_log("t", 0, make_config(), topic_id)
    assert manager.get_or_create_log("t", 0, make_config(), topic_id) is plog
    assert plog.topic_id == topic_id
    manager.shutdown()


def test_retention_and_flush_scheduling(tmp_path: Path, make_config: MakeConfig) -> None:
    manager = _manager(tmp_path)
    manager.startup()
    config = make_config(segment_bytes=1000, retention_ms=1000, flush_messages=4)
    manager.get_or_create_log("t", 0, config)
    manager.get_or_create_log("u", 0, make_config())
    _append(manager, "t", 0, 10)
    _append(manager, "u", 0, 1)
    assert [p.topic for p in manager.flush_due(NOW)] == ["t"]
    plog = manager.get_log("t", 0)
    assert plog is not None
    segments = len(plog.segments())
    assert manager.run_retention(NOW + 2000, {("t", 0): 0}) == 0
    assert manager.run_retention(NOW + 2000, {("t", 0): 20, ("u", 0): 2}) == segments
    assert plog.log_start_offset == 20
    manager.shutdown()


def _fail_opening(monkeypatch: pytest.MonkeyPatch, suffix: str, code: int) -> None:
    real_open = os.open

    def open_(path: str | Path, flags: int, mode: int = 0o777) -> int:
        if str(path).endswith(suffix):
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, mode)

    monkeypatch.setattr(os, "open", open_)


def test_an_offline_directory_is_never_written_again(
    tmp_path: Path, make_config: MakeConfig
) -> None:
    manager = _manager(tmp_path, dirs=2)
    manager.startup()
    for p in range(4):
        manager.get_or_create_log("t", p, make_config())
        _append(manager, "t", p, 2)
    failed = manager.log_dirs[0]
    in_failed = [("t", p) for p in range(4) if (failed / f"t-{p}").exists()]
    manager.failures.fail(failed, "writing something", OSError(errno.EIO, "Input/output error"))
    assert manager.handle_dir_failure(failed) == in_failed
    assert all(manager.get_log(*tp) is None for tp in in_failed)
    assert manager.online_dirs() == [manager.log_dirs[1]]
    # new logs go to the directory left; checkpoints and the marker skip the failed one
    assert manager.get_or_create_log("new", 0, make_config()).log_dir == manager.log_dirs[1]
    checkpoint = failed / "recovery-point-offset-checkpoint"
    before = checkpoint.read_bytes() if checkpoint.exists() else None
    manager.write_recovery_checkpoints()
    manager.shutdown()
    assert not (failed / ".kafka_cleanshutdown").exists()
    assert (manager.log_dirs[1] / ".kafka_cleanshutdown").exists()
    assert (checkpoint.read_bytes() if checkpoint.exists() else None) == before

    again = _manager(tmp_path, dirs=2)
    again.startup()  # the failed directory recovers, as after a crash
    for tp in in_failed:
        plog = again.get_log(*tp)
        assert plog is not None and plog.log_end_offset == 4
    again.shutdown()


def test_no_online_directory_means_no_new_log(tmp_path: Path, make_config: MakeConfig) -> None:
    manager = _manager(tmp_path)
    manager.startup()
    manager.failures.fail(manager.log_dirs[0], "writing", OSError(errno.EROFS, "read-only"))
    manager.handle_dir_failure(manager.log_dirs[0])
    with pytest.raises(KafkaError) as info:
        manager.get_or_create_log("t", 0, make_config())
    assert info.value.code == Errors.KAFKA_STORAGE_ERROR
    assert not (manager.log_dirs[0] / "t-0").exists()


def test_a_log_that_cannot_be_created_takes_its_directory_offline(
    tmp_path: Path, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _manager(tmp_path)
    manager.startup()
    with monkeypatch.context() as patch:
        _fail_opening(patch, "partition.metadata.tmp", errno.ENOSPC)
        with pytest.raises(KafkaError) as info:
            manager.get_or_create_log("t", 0, make_config(), uuid.uuid4())
    assert info.value.code == Errors.KAFKA_STORAGE_ERROR
    assert "Error while writing partition.metadata of t-0" in str(info.value)
    assert manager.get_log("t", 0) is None
    assert manager.failures.is_offline(manager.log_dirs[0])


def test_a_checkpoint_that_cannot_be_written_takes_its_directory_offline(
    tmp_path: Path, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _manager(tmp_path, dirs=2)
    manager.startup()
    with monkeypatch.context() as patch:
        _fail_opening(patch, f"d0{os.sep}replication-offset-checkpoint.tmp", errno.ENOSPC)
        manager.write_high_watermarks({})  # no exception: the directory goes offline
    assert manager.failures.is_offline(manager.log_dirs[0])
    assert not manager.failures.is_offline(manager.log_dirs[1])
    assert (manager.log_dirs[1] / "replication-offset-checkpoint").exists()


def test_a_directory_that_cannot_be_loaded_stays_offline(
    tmp_path: Path, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = _manager(tmp_path, dirs=2)
    manager.startup()
    for p in range(4):
        manager.get_or_create_log("t", p, make_config())
        _append(manager, "t", p, 1)
    manager.shutdown()
    loading = _manager(tmp_path, dirs=2)
    with monkeypatch.context() as patch:
        # a segment of d0 cannot be opened (EIO) while loading
        _fail_opening(patch, f"d0{os.sep}t-0{os.sep}00000000000000000000.log", errno.EIO)
        loading.startup()
    assert loading.failures.is_offline(loading.log_dirs[0])
    assert sorted(p.partition for p in loading.logs()) == sorted(
        p for p in range(4) if (loading.log_dirs[1] / f"t-{p}").exists()
    )
    loading.shutdown()


def test_stray_logs_with_data_are_moved_aside_and_empty_ones_deleted(
    tmp_path: Path, make_config: MakeConfig
) -> None:
    manager = _manager(tmp_path)
    manager.startup()
    manager.get_or_create_log("full", 0, make_config())
    _append(manager, "full", 0, 1)
    manager.get_or_create_log("empty", 0, make_config())
    aside = manager.set_aside_stray_log("full", 0)
    assert aside is not None and re.fullmatch(r"full-0\.[0-9a-f]{32}-stray", aside.name)
    assert sorted(p.name for p in aside.glob("*.log")) == ["00000000000000000000.log"]
    assert manager.set_aside_stray_log("empty", 0) is None
    assert not (manager.log_dirs[0] / "empty-0").exists()
    manager.shutdown()
    again = _manager(tmp_path)
    again.startup()  # a "-stray" directory is not a log
    assert list(again.logs()) == [] and aside.exists()
    again.shutdown()


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_logs_hold_at_most_max_open_files_descriptors(
    tmp_path: Path, make_config: MakeConfig
) -> None:
    """Three files a segment, many segments: the node's descriptors stay within the pool's
    capacity however many logs it hosts, through startup, appends, reads and shutdown."""
    config = make_config(segment_bytes=1000)
    before = _open_descriptors()
    manager = LogManager(
        [str(tmp_path / "d")], {"segment.bytes": 1000}, now_ms=Clock(), max_open_files=4
    )
    manager.startup()
    for p in range(40):
        manager.get_or_create_log("t", p, config)
        _append(manager, "t", p, 8)  # rolls: several segments each
    assert _open_descriptors() - before <= 4
    manager.shutdown()
    assert _open_descriptors() == before

    again = LogManager(
        [str(tmp_path / "d")],
        {"segment.bytes": 1000},
        now_ms=Clock(),
        max_open_files=4,
        recovery_threads_per_dir=3,
    )
    again.startup()
    assert _open_descriptors() - before <= 4
    for p in range(40):
        plog = again.get_log("t", p)
        assert plog is not None and len(plog.segments()) > 2
        assert plog.read(0, 1 << 20).records  # reopens the oldest segment's file
        assert plog.recovery_point == plog.log_end_offset == 16
    again.shutdown()  # flushed on three threads
    assert _open_descriptors() == before
    assert (tmp_path / "d" / ".kafka_cleanshutdown").exists()


def _descriptors_under(directory: Path) -> list[str]:
    """The files under ``directory`` this process holds a descriptor on."""
    targets = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            targets.append(os.readlink(f"/proc/self/fd/{fd}"))
    return [t for t in targets if t.startswith(f"{directory}{os.sep}")]


def test_a_directory_that_fails_to_load_keeps_no_descriptor(
    tmp_path: Path, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A log whose loading fails after its segments were opened (its leader-epoch checkpoint
    cannot be rewritten) gives every pooled file back, as do the logs of the directory that
    loaded before it: nothing in the failed directory stays open, and the pool counts only
    the files of the logs that loaded."""
    manager = _manager(tmp_path, dirs=2)
    manager.startup()
    for p in range(6):
        manager.get_or_create_log("t", p, make_config(segment_bytes=1000))
        _append(manager, "t", p, 8)  # several segments each
    failed = manager.log_dirs[0]
    last = sorted(p.name for p in failed.iterdir() if p.is_dir())[-1]
    manager.shutdown()
    (failed / last / "leader-epoch-checkpoint").write_text("garbled\n")  # rebuilt at load
    loading = _manager(tmp_path, dirs=2)
    with monkeypatch.context() as patch:
        _fail_opening(patch, f"{last}{os.sep}leader-epoch-checkpoint.tmp", errno.EIO)
        loading.startup()
    assert loading.failures.is_offline(failed)
    assert all(plog.log_dir == manager.log_dirs[1] for plog in loading.logs())
    assert _descriptors_under(failed) == []
    assert loading.files.file_count == 3 * sum(len(p.segments()) for p in loading.logs())
    loading.shutdown()
    assert loading.files.file_count == 0 and loading.files.open_count == 0


def test_shutdown_flushes_on_threads_and_leaves_a_failed_directory_to_recovery(
    tmp_path: Path, make_config: MakeConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One log's fsync fails on a flush thread at shutdown: its directory goes offline, the
    other logs there are not counted as flushed (no checkpoint, no clean-shutdown marker
    there), the other directory shuts down cleanly, and every file is closed."""
    manager = LogManager(
        [str(tmp_path / "d0"), str(tmp_path / "d1")],
        {"segment.bytes": 1000},
        now_ms=Clock(),
        recovery_threads_per_dir=2,
    )
    manager.startup()
    for p in range(8):
        manager.get_or_create_log("t", p, make_config())
        _append(manager, "t", p, 3)
    failed, healthy = manager.log_dirs
    victim = sorted(p.name for p in failed.iterdir() if p.is_dir())[0]
    victim_log = str(failed / victim / "00000000000000000000.log")
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        if os.readlink(f"/proc/self/fd/{fd}") == victim_log:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real_fsync(fd)

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", fsync)
        manager.shutdown()
    assert manager.failures.offline_dirs().keys() == {failed}
    assert not (failed / ".kafka_cleanshutdown").exists()
    assert not (failed / "recovery-point-offset-checkpoint").exists()
    assert (healthy / ".kafka_cleanshutdown").exists()
    assert manager.files.file_count == 0 and manager.files.open_count == 0
    assert _descriptors_under(tmp_path) == []

    again = _manager(tmp_path, dirs=2)
    again.startup()  # the failed directory is recovered, as after a crash
    assert sorted(p.partition for p in again.logs()) == list(range(8))
    assert all(p.log_end_offset == 6 for p in again.logs())
    again.shutdown()


def test_out_of_descriptors_keeps_the_directories_online(
    tmp_path: Path,
    make_config: MakeConfig,
    out_of_descriptors: Exhausted,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """EMFILE is the process's shortage, not a disk's: a checkpoint or a new log that cannot
    get a descriptor fails and the directory stays online. The log created once descriptors
    are back fsyncs its directory entry, whatever the failed attempt left."""
    manager = _manager(tmp_path)
    manager.startup()
    manager.get_or_create_log("t", 0, make_config())
    _append(manager, "t", 0, 2)
    directory = manager.log_dirs[0]
    with out_of_descriptors():
        manager.write_high_watermarks({("t", 0): 4})
        manager.write_recovery_checkpoints()
        with pytest.raises(KafkaError) as info:
            manager.get_or_create_log("new", 0, make_config(), uuid.uuid4())
    assert info.value.code == Errors.KAFKA_STORAGE_ERROR
    assert os.strerror(errno.EMFILE) in str(info.value)
    assert manager.online_dirs() == [directory]
    assert manager.get_log("new", 0) is None
    manager.write_high_watermarks({("t", 0): 4})
    assert manager.read_high_watermarks() == {("t", 0): 4}
    created = manager.get_or_create_log("new", 0, make_config(), uuid.uuid4())
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    with monkeypatch.context() as patch:
        patch.setattr(os, "fsync", fsync)
        created.flush()
    assert str(directory) in synced and str(created.dir) in synced
    manager.shutdown()
    assert (directory / ".kafka_cleanshutdown").exists()


def test_out_of_descriptors_at_startup_refuses_to_start(
    tmp_path: Path, make_config: MakeConfig, out_of_descriptors: Exhausted
) -> None:
    """A node that cannot open its logs for want of descriptors does not start with a
    directory offline (and its partitions unserved): it refuses to start, naming the limit."""
    manager = _manager(tmp_path)
    manager.startup()
    manager.get_or_create_log("t", 0, make_config())
    _append(manager, "t", 0, 2)
    manager.shutdown()
    loading = _manager(tmp_path)
    with out_of_descriptors(), pytest.raises(OSError) as info:
        loading.startup()
    assert info.value.errno == errno.EMFILE
    assert "open files" in str(info.value) and str(loading.log_dirs[0]) in str(info.value)
    assert loading.failures.offline_dirs() == {}
    assert loading.files.file_count == 0
    again = _manager(tmp_path)
    again.startup()  # recovered, the marker having gone with the failed start
    plog = again.get_log("t", 0)
    assert plog is not None and plog.log_end_offset == 4
    again.shutdown()
