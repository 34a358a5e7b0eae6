"""The metadata image: what each record does to it and which changes it reports."""

from __future__ import annotations

import uuid

from brook.metadata.image import (
    BrokerChanged,
    ConfigChanged,
    MetadataImage,
    PartitionChanged,
    TopicRemoved,
)
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
    UnregisterBrokerRecord,
)

TOPIC_ID = uuid.uuid4()
EP = (Endpoint("PLAINTEXT", "h", 9092),)


def _image() -> MetadataImage:
    image = MetadataImage()
    image.apply_all(
        enumerate(
            [
                RegisterBrokerRecord(1, "a", 0, EP),
                RegisterBrokerRecord(2, "b", 1, EP),
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
    image.apply(PartitionChangeRecord(TOPIC_ID, 0, bump_leader_epoch=True), 6)
    assert image.partition("t", 0).leader_epoch == 2
    # a change for a partition that does not exist (any more) changes nothing
    assert image.apply(PartitionChangeRecord(uuid.uuid4(), 0, leader=1), 7) == []


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
