"""The replica manager hosts exactly the partitions the metadata image assigns to its broker,
leads them or not as the image says, follows config changes and removals, and restores
checkpointed high watermarks within the log."""

from __future__ import annotations

import asyncio
import errno
import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from brook.broker.partition import Partition
from brook.broker.replica_manager import ReplicaManager
from brook.config.server import parse_server_config, topic_defaults
from brook.log.config import LogConfig
from brook.log.manager import LogManager
from brook.metadata.image import MetadataImage
from brook.metadata.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    ConfigResourceType,
    Endpoint,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_simple_batch

T1, T2 = uuid.uuid4(), uuid.uuid4()
NOW = 1_700_000_000_000


@pytest.fixture
def setup(tmp_path: Path) -> Iterator[tuple[ReplicaManager, list[tuple[str, bool]]]]:
    config = parse_server_config({"log.dirs": str(tmp_path)})
    manager = LogManager([str(tmp_path)], topic_defaults(config))
    manager.startup()
    # a log left from a topic the metadata no longer has, and a checkpointed HW past the end
    stray = manager.get_or_create_log("old", 0, LogConfig.from_topic_config({}))
    stray.append_as_leader(build_simple_batch([b"x"], timestamp=NOW), 0, NOW)
    kept = manager.get_or_create_log("t", 0, LogConfig.from_topic_config({}), T1)
    kept.append_as_leader(build_simple_batch([b"a", b"b"], timestamp=NOW), 0, NOW)
    manager.write_high_watermarks({("t", 0): 99})
    image = MetadataImage()
    ep = (Endpoint("PLAINTEXT", "h", 1),)
    image.apply_all(
        enumerate(
            [
                RegisterBrokerRecord(1, uuid.uuid4(), 0, ep, fenced=False),
                RegisterBrokerRecord(2, uuid.uuid4(), 1, ep, fenced=False),
                TopicRecord("t", T1),
                PartitionRecord(T1, 0, (1, 2), (1, 2), 1),
                PartitionRecord(T1, 1, (2, 1), (2, 1), 2),
                TopicRecord("u", T2),
                PartitionRecord(T2, 0, (2,), (2,), 2),
            ]
        )
    )
    rm = ReplicaManager(1, config, manager, image)
    events: list[tuple[str, bool]] = []
    rm.add_leadership_listener(
        lambda p, leader: events.append((f"{p.topic}-{p.partition}", leader))
    )
    rm.startup()
    yield rm, events
    rm.shutdown()


def test_hosts_what_the_image_assigns(setup: tuple[ReplicaManager, list]) -> None:
    rm, events = setup
    assert sorted(rm.partitions) == [("t", 0), ("t", 1)]  # not u-0: broker 2's alone
    assert rm.log_manager.get_log("old", 0) is None  # the stray log is gone
    assert events == [("t-0", True)]
    t0 = rm.partitions[("t", 0)]
    assert t0.is_leader and not rm.partitions[("t", 1)].is_leader
    assert t0.high_watermark == 2  # the checkpoint said 99; the log ends at 2
    assert rm.leader_partition("t", 0) == (t0, Errors.NONE)
    assert rm.leader_partition("t", 1) == (None, Errors.NOT_LEADER_OR_FOLLOWER)
    assert rm.leader_partition("u", 0) == (None, Errors.NOT_LEADER_OR_FOLLOWER)
    assert rm.leader_partition("t", 9) == (None, Errors.UNKNOWN_TOPIC_OR_PARTITION)


def test_follows_metadata_changes(setup: tuple[ReplicaManager, list]) -> None:
    rm, events = setup
    image = rm.image
    apply = lambda record: rm.on_metadata_changes(image.apply(record, image.offset + 1))  # noqa: E731
    apply(PartitionChangeRecord(T1, 1, leader=1))
    t1: Partition = rm.partitions[("t", 1)]
    assert t1.is_leader and t1.leader_epoch == 1 and events[-1] == ("t-1", True)
    apply(ConfigRecord(ConfigResourceType.TOPIC, "t", "retention.ms", "1234"))
    assert rm.partitions[("t", 0)].log.config.retention_ms == 1234
    apply(ConfigRecord(ConfigResourceType.BROKER, "", "log.retention.bytes", "777"))
    assert rm.partitions[("t", 1)].log.config.retention_bytes == 777
    apply(PartitionChangeRecord(T1, 0, replicas=(2,), isr=(2,), leader=2))
    assert ("t", 0) not in rm.partitions and events[-1] == ("t-0", False)
    apply(RemoveTopicRecord(T1))
    assert rm.partitions == {}
    assert rm.log_manager.get_log("t", 1) is None


def test_an_unfenced_follower_already_caught_up_joins_the_isr(
    setup: tuple[ReplicaManager, list],
) -> None:
    # Broker 2 fetched up to the end while fenced; nothing new is appended after (acks=all is
    # refused below min.insync.replicas), so no fetch of it reads this partition again: the
    # unfencing alone must take it into the ISR.
    rm, _ = setup
    image = rm.image
    apply = lambda record: rm.on_metadata_changes(image.apply(record, image.offset + 1))  # noqa: E731
    sent: list[object] = []
    rm.submit_isr_update = lambda p, u: sent.append(u)
    apply(PartitionChangeRecord(T1, 0, isr=(1,)))
    apply(BrokerRegistrationChangeRecord(2, 1, fenced=True))
    t0 = rm.partitions[("t", 0)]
    t0.record_follower_fetch(2, 2, 0, 1)
    assert sent == []  # fenced: not eligible
    apply(BrokerRegistrationChangeRecord(2, 1, fenced=False))
    assert [u.new_isr for u in sent] == [(1, 2)]  # type: ignore[attr-defined]


def test_a_failed_directory_takes_its_partitions_offline(
    setup: tuple[ReplicaManager, list],
) -> None:
    rm, events = setup
    t0 = rm.partitions[("t", 0)]
    t0.append_as_leader(build_simple_batch([b"c"], timestamp=NOW), -1, NOW)
    directory = t0.log.log_dir

    async def fail_while_waiting() -> BaseException | None:
        # acks=all waits for broker 2, in the ISR, which has not fetched the batch
        waiter = t0.wait_for_acks(t0.log.log_end_offset)
        assert waiter is not None
        error = OSError(errno.ENOSPC, "No space left on device")
        rm.log_manager.failures.fail(directory, "appending", error)
        assert sorted(rm.on_log_dir_failure(directory)) == [("t", 0), ("t", 1)]
        return waiter.exception()

    failure = asyncio.run(fail_while_waiting())
    assert isinstance(failure, KafkaError) and failure.code == Errors.KAFKA_STORAGE_ERROR
    assert events[-1] == ("t-0", False)
    assert rm.partitions == {}
    assert rm.leader_partition("t", 0) == (None, Errors.KAFKA_STORAGE_ERROR)
    assert rm.leader_partition("t", 1) == (None, Errors.KAFKA_STORAGE_ERROR)
    # metadata changes do not bring them back before a restart
    image = rm.image
    rm.on_metadata_changes(image.apply(PartitionChangeRecord(T1, 0, leader=1), image.offset + 1))
    assert rm.leader_partition("t", 0) == (None, Errors.KAFKA_STORAGE_ERROR)
    assert rm.log_manager.get_log("t", 0) is None


def test_new_logs_are_prepared_before_their_records_commit(
    setup: tuple[ReplicaManager, list],
) -> None:
    rm, _ = setup
    topic_id = uuid.uuid4()
    records = [
        TopicRecord("v", topic_id),
        ConfigRecord(ConfigResourceType.TOPIC, "v", "segment.bytes", "2000"),
        PartitionRecord(topic_id, 0, (1,), (1,), 1),
        PartitionRecord(topic_id, 1, (2,), (2,), 2),  # broker 2's: nothing here
    ]
    undo = rm.prepare_logs(records)
    plog = rm.log_manager.get_log("v", 0)
    assert plog is not None and plog.topic_id == topic_id
    assert plog.config.segment_bytes == 2000  # with the topic's own configs
    assert rm.log_manager.get_log("v", 1) is None
    undo()  # the commit failed
    assert rm.log_manager.get_log("v", 0) is None and not plog.dir.exists()


def test_a_log_that_cannot_be_prepared_fails_the_change(
    setup: tuple[ReplicaManager, list], monkeypatch: pytest.MonkeyPatch
) -> None:
    rm, _ = setup
    topic_id = uuid.uuid4()
    records = [
        TopicRecord("w", topic_id),
        PartitionRecord(topic_id, 0, (1,), (1,), 1),
        PartitionRecord(topic_id, 1, (1,), (1,), 1),
    ]
    real_open = os.open

    def open_(path: str | Path, flags: int, mode: int = 0o777) -> int:
        if "w-1" in str(path):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_open(path, flags, mode)

    with monkeypatch.context() as patch:
        patch.setattr(os, "open", open_)
        with pytest.raises(KafkaError) as info:
            rm.prepare_logs(records)
    assert info.value.code == Errors.KAFKA_STORAGE_ERROR
    assert rm.log_manager.get_log("w", 0) is None  # the one that worked is undone too


def test_startup_sets_aside_a_log_of_another_topic_id(tmp_path: Path) -> None:
    """A topic deleted and created again under its name while the old directory stayed
    (a crash undid the rename): the old data is moved aside, the new topic starts empty, and
    the node starts instead of failing with INCONSISTENT_TOPIC_ID."""
    config = parse_server_config({"log.dirs": str(tmp_path)})
    manager = LogManager([str(tmp_path)], topic_defaults(config))
    manager.startup()
    old = manager.get_or_create_log("t", 0, LogConfig.from_topic_config({}), T2)
    old.append_as_leader(build_simple_batch([b"old"], timestamp=NOW), 0, NOW)
    image = MetadataImage()
    ep = (Endpoint("PLAINTEXT", "h", 1),)
    image.apply_all(
        enumerate(
            [
                RegisterBrokerRecord(1, "a", 0, ep),
                TopicRecord("t", T1),
                PartitionRecord(T1, 0, (1,), (1,), 1),
            ]
        )
    )
    rm = ReplicaManager(1, config, manager, image)
    rm.startup()
    partition = rm.partitions[("t", 0)]
    assert partition.log.topic_id == T1 and partition.log.log_end_offset == 0
    assert [p.name for p in tmp_path.glob("t-0.*-stray")] != []
    rm.shutdown()


def test_partitions_whose_logs_may_be_in_an_unloaded_directory_stay_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A directory failed to load at start: a partition with no log in the others is not
    given a fresh empty log (it would hand out its offsets again), it is offline."""
    dirs = [str(tmp_path / "d0"), str(tmp_path / "d1")]
    config = parse_server_config({"log.dirs": ",".join(dirs)})
    manager = LogManager(dirs, topic_defaults(config))
    manager.startup()
    for p in (0, 1):
        plog = manager.get_or_create_log("t", p, LogConfig.from_topic_config({}), T1)
        plog.append_as_leader(build_simple_batch([b"kept"], timestamp=NOW), 0, NOW)
    lost = next(p for p in (0, 1) if (tmp_path / "d1" / f"t-{p}").exists())
    manager.shutdown()

    image = MetadataImage()
    image.apply_all(
        enumerate(
            [
                RegisterBrokerRecord(1, "a", 0, (Endpoint("PLAINTEXT", "h", 1),)),
                TopicRecord("t", T1),
                PartitionRecord(T1, 0, (1,), (1,), 1),
                PartitionRecord(T1, 1, (1,), (1,), 1),
            ]
        )
    )
    restarted = LogManager(dirs, topic_defaults(config))
    real_listdir = os.listdir

    def listdir(path: str | Path) -> list[str]:
        if str(path) == dirs[1]:
            raise OSError(errno.EIO, "Input/output error")
        return real_listdir(path)

    with monkeypatch.context() as patch:
        patch.setattr(os, "listdir", listdir)
        restarted.startup()
    rm = ReplicaManager(1, config, restarted, image)
    rm.startup()
    assert rm.leader_partition("t", lost) == (None, Errors.KAFKA_STORAGE_ERROR)
    assert rm.partitions[("t", 1 - lost)].log.log_end_offset == 1
    assert not (tmp_path / "d0" / f"t-{lost}").exists()
    rm.shutdown()
    restarted.shutdown()


def test_role_listeners_hear_every_role_change(tmp_path: Path) -> None:
    config = parse_server_config({"log.dirs": str(tmp_path)})
    manager = LogManager([str(tmp_path)], topic_defaults(config))
    manager.startup()
    image = MetadataImage()
    ep = (Endpoint("PLAINTEXT", "h", 1),)
    image.apply_all(
        enumerate(
            [
                RegisterBrokerRecord(1, uuid.uuid4(), 0, ep, fenced=False),
                RegisterBrokerRecord(2, uuid.uuid4(), 1, ep, fenced=False),
                TopicRecord("t", T1),
                PartitionRecord(T1, 0, (1, 2), (1, 2), 1),
                PartitionRecord(T1, 1, (2, 1), (2, 1), 2),
            ]
        )
    )
    rm = ReplicaManager(1, config, manager, image)
    roles: list[tuple[str, int, bool]] = []
    rm.add_role_listener(lambda p, leader: roles.append((f"t-{p.partition}", p.leader_id, leader)))
    rm.startup()
    # a leader and a follower from the start
    assert sorted(roles) == [("t-0", 1, True), ("t-1", 2, False)]
    apply = lambda record: rm.on_metadata_changes(image.apply(record, image.offset + 1))  # noqa: E731
    roles.clear()
    apply(PartitionChangeRecord(T1, 0, isr=(1,)))  # an ISR change: no new role
    assert roles == []
    apply(PartitionChangeRecord(T1, 0, leader=2))  # leader -> follower
    apply(PartitionChangeRecord(T1, 1, leader=2))  # following a new epoch of the same leader
    apply(PartitionChangeRecord(T1, 1, leader=1))  # follower -> leader
    apply(PartitionChangeRecord(T1, 1, replicas=(1,), isr=(1,), leader=1))  # leader again
    apply(PartitionChangeRecord(T1, 0, replicas=(2,), isr=(2,)))  # removed from here
    assert roles == [
        ("t-0", 2, False),
        ("t-1", 2, False),
        ("t-1", 1, True),
        ("t-1", 1, True),
        ("t-0", -1, False),
    ]
    rm.shutdown()
