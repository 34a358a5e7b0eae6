"""The metadata image: what each record does to it and which changes it reports."""

from __future__ import annotations

import uuid

import pytest

from brook.metadata.image import (
    BrokerChanged,
    ConfigChanged,
    ImageError,
    MetadataImage,
    PartitionChanged,
    TopicRemoved,
)
from brook.metadata.records import (
    BrokerRegistrationChangeRecord,
    ConfigRecord,
    ConfigResourceType,
    Endpoint,
    LegacyPartitionChangeRecord,
    PartitionChangeRecord,
    PartitionRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
)

TOPIC_ID = uuid.uuid4()
EP = (Endpoint("PLAINTEXT", "h", 9092),)


def _image() -> MetadataImage:
    image = MetadataImage()
    image.apply_all(
        enumerate(
            [
                RegisterBrokerRecord(1, uuid.uuid4(), 0, EP, fenced=False),
                RegisterBrokerRecord(2, uuid.uuid4(), 1, EP, fenced=False),
                TopicRecord("t", TOPIC_ID),
                PartitionRecord(TOPIC_ID, 0, (1, 2), (1, 2), 1),
            ]
        )
    )
    return image


def test_topics_and_partitions_by_name_and_id() -> None:
    image = _image()
    assert image.offset == 3
    assert image.topics["t"] is image.topics_by_id[TOPIC_ID]
    info = image.partition("t", 0)
    assert info is not None and (info.leader, info.leader_epoch, info.isr) == (1, 0, (1, 2))
    assert image.partition("t", 1) is None and image.partition("u", 0) is None


def test_partition_changes_bump_epochs_as_kraft_does() -> None:
    image = _image()
    isr_only = PartitionChangeRecord(TOPIC_ID, 0, isr=(1,))
    assert image.apply(isr_only, 4) == [PartitionChanged("t", image.partition("t", 0))]
    info = image.partition("t", 0)
    assert (info.leader_epoch, info.partition_epoch, info.isr) == (0, 1, (1,))
    image.apply(PartitionChangeRecord(TOPIC_ID, 0, leader=2), 5)
    info = image.partition("t", 0)
    assert (info.leader, info.leader_epoch, info.partition_epoch) == (2, 1, 2)
    # naming the same leader again bumps the leader epoch, as in KRaft
    image.apply(PartitionChangeRecord(TOPIC_ID, 0, leader=2), 6)
    assert image.partition("t", 0).leader_epoch == 2
    # a change from a JSON metadata log bumps only on a new leader or when it says so
    image.apply(LegacyPartitionChangeRecord(TOPIC_ID, 0, leader=2), 7)
    assert image.partition("t", 0).leader_epoch == 2
    image.apply(LegacyPartitionChangeRecord(TOPIC_ID, 0, bump_leader_epoch=True), 8)
    assert image.partition("t", 0).leader_epoch == 3
    # a change for a partition that does not exist (any more) changes nothing
    assert image.apply(PartitionChangeRecord(uuid.uuid4(), 0, leader=1), 9) == []


def test_configs_set_delete_and_go_with_their_topic() -> None:
    image = _image()
    changed = image.apply(ConfigRecord(ConfigResourceType.TOPIC, "t", "retention.ms", "5"), 4)
    assert changed == [ConfigChanged(ConfigResourceType.TOPIC, "t")]
    image.apply(ConfigRecord(ConfigResourceType.BROKER, "", "log.retention.ms", "9"), 5)
    assert image.topic_configs("t") == {"retention.ms": "5"}
    assert image.broker_configs("") == {"log.retention.ms": "9"}
    image.apply(ConfigRecord(ConfigResourceType.BROKER, "", "log.retention.ms", None), 6)
    assert image.broker_configs("") == {}
    (removed,) = image.apply(RemoveTopicRecord(TOPIC_ID), 7)
    assert isinstance(removed, TopicRemoved) and removed.topic.name == "t"
    assert "t" not in image.topics and TOPIC_ID not in image.topics_by_id
    assert image.topic_configs("t") == {}


def test_brokers_register_fence_and_leave() -> None:
    image = _image()
    assert [b.broker_id for b in image.live_brokers()] == [1, 2]
    assert image.apply(BrokerRegistrationChangeRecord(2, 1, fenced=True), 4) == [BrokerChanged(2)]
    assert [b.broker_id for b in image.live_brokers()] == [1]
    assert image.alive_endpoint(2, "PLAINTEXT") is None
    assert image.alive_endpoint(1, "PLAINTEXT") == EP[0]
    assert image.alive_endpoint(1, "OTHER") is None
    image.apply(UnregisterBrokerRecord(1, 0), 5)
    assert 1 not in image.brokers


def test_records_that_do_not_fit_are_refused_and_change_nothing() -> None:
    image = _image()
    with pytest.raises(ImageError):
        image.apply(TopicRecord("t", uuid.uuid4()), 4)
    with pytest.raises(ImageError):
        image.apply(PartitionRecord(uuid.uuid4(), 0, (1,), (1,), 1), 5)
    assert list(image.topics) == ["t"] and len(image.topics_by_id) == 1


def test_copy_is_independent_and_snapshot_records_rebuild_the_image() -> None:
    image = _image()
    image.apply(ConfigRecord(ConfigResourceType.TOPIC, "t", "retention.ms", "5"), 4)
    image.apply(PartitionChangeRecord(TOPIC_ID, 0, leader=2, isr=(2,)), 5)
    copy = image.copy()
    copy.apply(RemoveTopicRecord(TOPIC_ID), 6)
    assert "t" in image.topics and "t" not in copy.topics
    rebuilt = MetadataImage()
    rebuilt.apply_all((image.offset, r) for r in image.snapshot_records())
    assert rebuilt.brokers == image.brokers
    assert rebuilt.configs == image.configs
    assert {n: (t.topic_id, t.partitions) for n, t in rebuilt.topics.items()} == {
        n: (t.topic_id, t.partitions) for n, t in image.topics.items()
    }
