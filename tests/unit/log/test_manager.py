"""The log manager: loading directories, checkpoints, the clean-shutdown marker, deletion,
meta.properties, retention and flush scheduling."""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path

from brook.log.config import LogConfig
from brook.log.manager import LogManager
from brook.protocol.records import build_simple_batch

NOW = 1_700_000_000_000
MakeConfig = Callable[..., LogConfig]


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


def test_meta_properties(tmp_path: Path) -> None:
    manager = _manager(tmp_path, dirs=2)
    assert manager.read_meta_properties() == {}
    manager.write_meta_properties({"version": "1", "node.id": "2", "cluster.id": "abc"})
    for i in range(2):
        text = (tmp_path / f"d{i}" / "meta.properties").read_text()
        assert text == "version=1\nnode.id=2\ncluster.id=abc\n"
    assert manager.read_meta_properties()["cluster.id"] == "abc"


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
