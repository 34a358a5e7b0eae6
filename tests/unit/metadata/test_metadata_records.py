"""Metadata records: Kafka's framing (frame version, api key, version, fields), every type
round-trips, damaged bytes are refused without big allocations, and the JSON records of
metadata logs written before this framing are still read."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brook.metadata.records import (
    RECORD_TYPES,
    AccessControlEntryRecord,
    BrokerFeature,
    BrokerRegistrationChangeRecord,
    ClusterIdRecord,
    ConfigRecord,
    Endpoint,
    FeatureLevelRecord,
    LegacyPartitionChangeRecord,
    MetadataRecord,
    NoOpRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RecordFormatError,
    RegisterBrokerRecord,
    RemoveAccessControlEntryRecord,
    RemoveTopicRecord,
    RemoveUserScramCredentialRecord,
    TopicRecord,
    UnregisterBrokerRecord,
    UserScramCredentialRecord,
    decode,
    encode,
)

TOPIC_ID = uuid.UUID("6f1c2f4e-8a1b-4c1e-9d3e-2b7a5c9e0f11")
INCARNATION = uuid.UUID("0f0e0d0c-0b0a-0908-0706-050403020100")
SAMPLES: list[MetadataRecord] = [
    RegisterBrokerRecord(
        3,
        INCARNATION,
        17,
        (Endpoint("PLAINTEXT", "h", 9092), Endpoint("CONTROLLER", "h", 9093, "SASL_SSL")),
        "rack-a",
        fenced=True,
        in_controlled_shutdown=True,
        features=(BrokerFeature("metadata.version", 1, 7),),
    ),
    BrokerRegistrationChangeRecord(3, 17, fenced=True),
    BrokerRegistrationChangeRecord(3, 17, fenced=False, in_controlled_shutdown=True),
    UnregisterBrokerRecord(3, 17),
    TopicRecord("orders", TOPIC_ID),
    PartitionRecord(TOPIC_ID, 2, (1, 2, 3), (1, 3), 1, 4, 9, (3,), (2,), 1),
    PartitionChangeRecord(TOPIC_ID, 2, leader=3, isr=(3,)),
    PartitionChangeRecord(TOPIC_ID, 2, leader=-1),
    PartitionChangeRecord(TOPIC_ID, 2, replicas=(1, 2), adding_replicas=(), isr=None),
    RemoveTopicRecord(TOPIC_ID),
    ConfigRecord(2, "orders", "retention.ms", "1000"),
    ConfigRecord(4, "", "log.retention.ms", None),
    ProducerIdsRecord(1, 5, 2000),
    FeatureLevelRecord("metadata.version", 7),
    NoOpRecord(),
    AccessControlEntryRecord(TOPIC_ID, 2, "orders-", 4, "User:alice", "*", 3, 3),
    RemoveAccessControlEntryRecord(TOPIC_ID),
    UserScramCredentialRecord("alice", 1, b"salt", b"stored" * 6, b"server" * 6, 8192),
    RemoveUserScramCredentialRecord("alice", 2),
]


@pytest.mark.parametrize("record", SAMPLES, ids=lambda r: type(r).__name__)
def test_round_trip(record: MetadataRecord) -> None:
    data = encode(record)
    # frame version 1, then the api key and version as Kafka's MetadataRecordSerde writes them
    assert data[0] == 1 and data[1] == record.API_KEY and data[2] == record.VERSION
    assert decode(data) == record


def test_every_record_type_is_covered_and_registered() -> None:
    assert {type(r) for r in SAMPLES} == set(RECORD_TYPES.values())
    assert all(RECORD_TYPES[cls.API_KEY] is cls for cls in RECORD_TYPES.values())


def test_tagged_fields_at_their_default_are_left_out() -> None:
    # PartitionChangeRecord with nothing changed: partition id, topic id, no tagged fields
    data = encode(PartitionChangeRecord(TOPIC_ID, 0))
    assert len(data) == 3 + 4 + 16 + 1


def test_an_older_version_reads_with_defaults() -> None:
    record = RegisterBrokerRecord(1, INCARNATION, 5, (Endpoint("PLAINTEXT", "h", 1),))
    data = bytearray(encode(record))
    # RegisterBrokerRecord v0 has no InControlledShutdown: drop its byte and say version 0
    v0 = bytes(data[:2]) + b"\x00" + bytes(data[3:-2]) + bytes(data[-1:])
    assert decode(v0) == record


@pytest.mark.parametrize(
    "data, problem",
    [
        (b"", "truncated"),
        (b"\x02\x02\x00", "frame version"),
        (b"\x01\x63\x00", "api key"),
        (b"\x01\x02\x05", "newer"),
        # TopicRecord whose name claims 2^40 bytes
        (b"\x01\x02\x00\x81\x80\x80\x80\x80\x20", "exceeds"),
        (encode(TopicRecord("t", TOPIC_ID)) + b"x", "after"),
        (encode(TopicRecord("t", TOPIC_ID))[:-3], "ends inside"),
    ],
)
def test_damaged_records_are_refused(data: bytes, problem: str) -> None:
    with pytest.raises(RecordFormatError, match=problem):
        decode(data)


@given(st.binary(max_size=64))
def test_random_bytes_never_raise_anything_but_a_format_error(data: bytes) -> None:
    try:
        decode(b"\x01" + data)
    except RecordFormatError:
        pass


def _legacy(kind: str, **data: object) -> bytes:
    return json.dumps({"type": kind, "data": data}).encode()


def test_json_records_of_older_metadata_logs_are_read() -> None:
    assert decode(_legacy("ClusterId", cluster_id="abc")) == ClusterIdRecord("abc")
    broker = decode(
        _legacy(
            "RegisterBroker",
            broker_id=1,
            incarnation_id=INCARNATION.hex,
            broker_epoch=4,
            endpoints=[
                {"name": "PLAINTEXT", "host": "h", "port": 9092, "security_protocol": "PLAINTEXT"}
            ],
            rack=None,
            fenced=False,
        )
    )
    assert broker == RegisterBrokerRecord(
        1, INCARNATION, 4, (Endpoint("PLAINTEXT", "h", 9092),), None, fenced=False
    )
    change = decode(
        _legacy(
            "PartitionChange",
            topic_id=str(TOPIC_ID),
            partition_id=0,
            leader=1,
            isr=[1],
            replicas=None,
            removing_replicas=None,
            adding_replicas=None,
            bump_leader_epoch=True,
        )
    )
    assert isinstance(change, LegacyPartitionChangeRecord) and change.bump_leader_epoch
    assert decode(_legacy("Topic", name="t", topic_id=str(TOPIC_ID))) == TopicRecord("t", TOPIC_ID)
    with pytest.raises(RecordFormatError):
        decode(_legacy("Nonsense"))
    with pytest.raises(TypeError):
        encode(ClusterIdRecord("abc"))
