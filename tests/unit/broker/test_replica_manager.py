"""The replica manager hosts exactly the partitions the metadata image assigns to its broker,
leads them or not as the image says, follows config changes and removals, and restores
checkpointed high watermarks within the log."""

from __future__ import annotations

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
    ConfigRecord,
    ConfigResourceType,
    Endpoint,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from brook.protocol.errors import Errors
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
