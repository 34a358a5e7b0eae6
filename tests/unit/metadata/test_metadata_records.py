"""Metadata records survive their encoding in the metadata log unchanged, every type."""

from __future__ import annotations

import json
import uuid

import pytest

from brook.metadata.records import (
    RECORD_TYPES,
    BrokerRegistrationChangeRecord,
    ClusterIdRecord,
    ConfigRecord,
    Endpoint,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RegisterBrokerRecord,
    RemoveTopicRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    decode,
    encode,
)

TOPIC_ID = uuid.UUID("6f1c2f4e-8a1b-4c1e-9d3e-2b7a5c9e0f11")
SAMPLES: list[MetadataRecord] = [
    RegisterBrokerRecord(
        3,
        "inc",
        17,
        (Endpoint("PLAINTEXT", "h", 9092), Endpoint("CONTROLLER", "h", 9093)),
        "rack-a",
    ),
    BrokerRegistrationChangeRecord(3, 17, fenced=True),
    UnregisterBrokerRecord(3, 17),
    TopicRecord("orders", TOPIC_ID),
    PartitionRecord(TOPIC_ID, 2, (1, 2, 3), (1, 3), 1, 4, 9, (3,), (2,)),
    PartitionChangeRecord(TOPIC_ID, 2, leader=3, isr=(3,), bump_leader_epoch=True),
    PartitionChangeRecord(TOPIC_ID, 2, replicas=(1, 2), adding_replicas=(), isr=None),
    RemoveTopicRecord(TOPIC_ID),
    ConfigRecord(2, "orders", "retention.ms", "1000"),
    ConfigRecord(4, "", "log.retention.ms", None),
    ProducerIdsRecord(1, 5, 2000),
    ClusterIdRecord("abc"),
    NoOpRecord(),
]


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_round_trip(record: MetadataRecord) -> None:
    data = encode(record)
    assert json.loads(data)["type"] == record.TYPE  # readable JSON, tagged with its type
    assert decode(data) == record


def test_every_record_type_is_covered_and_registered() -> None:
    assert {type(r) for r in SAMPLES} == set(RECORD_TYPES.values())
    assert all(RECORD_TYPES[cls.TYPE] is cls for cls in RECORD_TYPES.values())
