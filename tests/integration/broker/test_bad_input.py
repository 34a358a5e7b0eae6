"""Bad input gets Kafka's error code or a closed connection; the broker keeps serving others
and loses nothing already written.

Every test runs against a broker that already holds acknowledged records and has a second
client connected; after the bad input, that connection still works, a new one does too, and
the records are all still there.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.errors import Errors
from brook.protocol.records import build_batch, build_simple_batch, encode_record, iter_records

KEPT = [b"safe-1", b"safe-2"]


@dataclass
class Broker:
    process: BrookProcess
    bystander: RawClient

    @property
    def bootstrap(self) -> str:
        return self.process.bootstrap


def _kept_records(client: RawClient) -> list[bytes]:
    part = fetch(client, "keep", 0, 0).responses[0].partitions[0]
    assert part.error_code == 0
    return [r.value for _, r in iter_records(part.records)]


@pytest.fixture
def broker(tmp_path: Any) -> Iterator[Broker]:
    overrides = {
        "auto.create.topics.enable": "false",
        "message.max.bytes": "20000",
        "socket.request.max.bytes": "100000",
    }
    with (
        BrookProcess(tmp_path / "data", overrides) as process,
        RawClient(process.bootstrap) as bystander,
    ):
        create_topic(bystander, "keep")
        for value in KEPT:
            part = produce(bystander, "keep", 0, build_simple_batch([value]))
            assert part.responses[0].partition_responses[0].error_code == 0
        yield Broker(process, bystander)
        # the connection opened before the bad input still works, and so does a new one
        assert _kept_records(bystander) == KEPT
        with RawClient(process.bootstrap) as fresh:
            assert _kept_records(fresh) == KEPT
        assert process.proc is not None and process.proc.poll() is None


def test_frames_the_broker_cannot_parse_close_only_that_connection(broker: Broker) -> None:
    cases = [
        struct.pack(">i", -5),  # negative size
        struct.pack(">i", 200_000) + b"x" * 16,  # over socket.request.max.bytes
        struct.pack(">i", 3) + b"abc",  # shorter than a header
        struct.pack(">ihhi", 10, 999, 0, 1) + b"\x00\x00",  # unknown API key
        struct.pack(">ihhi", 10, 0, 2, 1) + b"\x00\x00",  # Produce v2: below what is served
        struct.pack(">ihhi", 10, 3, 99, 1) + b"\x00\x00",  # Metadata v99
        struct.pack(">ihhi", 14, 3, 1, 1) + b"\x00\x00" + b"\xff\xff\xff\x7f",  # garbage body
        struct.pack(">ihhih", 11, 3, 12, 1, 0) + b"\x05",  # flexible header, torn tagged fields
    ]
    for frame in cases:
        with RawClient(broker.bootstrap) as bad:
            bad.send_bytes(frame)
            assert bad.is_closed(), frame
            assert broker.bystander.request(18, 0, {}).error_code == 0


def test_unsupported_api_versions_version_gets_v0_error_35(broker: Broker) -> None:
    with RawClient(broker.bootstrap) as c:
        c.send_bytes(struct.pack(">ihhih", 10, 18, 99, 7, -1))
        frame = c.recv_frame()
        corr, error, count = struct.unpack_from(">ihi", frame, 0)
        assert (corr, error, count) == (7, Errors.UNSUPPORTED_VERSION, 1)
        assert struct.unpack_from(">hhh", frame, 10) == (18, 0, 4)
        assert (
            c.request(
                18, 3, {"client_software_name": "raw", "client_software_version": "1"}
            ).error_code
            == 0
        )


def test_record_errors_per_partition(broker: Broker) -> None:
    c = broker.bystander
    create_topic(c, "t", configs={"max.message.bytes": "5000"})

    def code(records: bytes, topic: str = "t", version: int = 9, partition: int = 0) -> int:
        resp = produce(c, topic, partition, records, version=version)
        return resp.responses[0].partition_responses[0].error_code

    good = build_simple_batch([b"ok"])
    assert code(good) == 0
    bad_crc = bytearray(build_simple_batch([b"payload"]))
    bad_crc[-1] ^= 0xFF
    assert code(bytes(bad_crc)) == Errors.CORRUPT_MESSAGE
    magic1 = bytearray(good)
    magic1[16] = 1
    assert code(bytes(magic1)) == Errors.INVALID_RECORD
    assert code(good + good) == Errors.INVALID_RECORD  # one batch per partition
    now = int(time.time() * 1000)
    two_in_one = build_batch(
        [encode_record(0, 0, None, b"a") + encode_record(1, 0, None, b"b")],
        base_timestamp=now,
        max_timestamp=now,
    )
    assert code(two_in_one) == Errors.INVALID_RECORD  # CRC right, one record more than counted
    assert code(build_simple_batch([b"x" * 6000])) == Errors.MESSAGE_TOO_LARGE  # topic limit
    assert code(build_simple_batch([b"x" * 25000]), topic="keep") == Errors.MESSAGE_TOO_LARGE
    assert (
        code(build_simple_batch([b"z"], codec=4), version=5) == Errors.UNSUPPORTED_COMPRESSION_TYPE
    )
    resp = c.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": 2,
            "timeout": 1000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": good}]}],
        },
    )
    assert resp.responses[0].partition_responses[0].error_code == Errors.INVALID_REQUIRED_ACKS
    assert code(good, partition=7) == Errors.UNKNOWN_TOPIC_OR_PARTITION
    create_topic(
        c, "strict", configs={"segment.bytes": "1500", "message.timestamp.before.max.ms": "60000"}
    )
    assert code(build_simple_batch([b"x" * 2000]), topic="strict") == Errors.RECORD_LIST_TOO_LARGE
    an_hour_ago = int(time.time() * 1000) - 3_600_000
    assert (
        code(build_simple_batch([b"old"], timestamp=an_hour_ago), topic="strict")
        == Errors.INVALID_TIMESTAMP
    )
    create_topic(c, "compacted", configs={"cleanup.policy": "compact"})
    assert code(good, topic="compacted") == Errors.INVALID_RECORD  # records need keys there
    assert code(build_simple_batch([(b"key", b"v")]), topic="compacted") == 0
    part = fetch(c, "t", 0, 0).responses[0].partitions[0]
    assert [r.value for _, r in iter_records(part.records)] == [b"ok"]  # nothing else landed


def test_produce_and_fetch_of_a_missing_topic_without_auto_creation(broker: Broker) -> None:
    c = broker.bystander
    resp = produce(c, "missing", 0, build_simple_batch([b"x"]))
    assert resp.responses[0].partition_responses[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
    assert (
        fetch(c, "missing", 0, 0).responses[0].partitions[0].error_code
        == Errors.UNKNOWN_TOPIC_OR_PARTITION
    )
    meta = c.request(
        3,
        12,
        {
            "topics": [{"name": "missing", "topic_id": None}],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False,
        },
    )
    assert meta.topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION


def test_fetch_out_of_range(broker: Broker) -> None:
    c = broker.bystander
    past_end = fetch(c, "keep", 0, 50).responses[0].partitions[0]
    assert past_end.error_code == Errors.OFFSET_OUT_OF_RANGE
    assert past_end.high_watermark == len(KEPT)
    assert (
        fetch(c, "keep", 0, -3).responses[0].partitions[0].error_code == Errors.OFFSET_OUT_OF_RANGE
    )


def test_acks0_failure_closes_the_connection(broker: Broker) -> None:
    with RawClient(broker.bootstrap) as c:
        produce(c, "nope", 0, build_simple_batch([b"x"]), acks=0)
        assert c.is_closed()


def test_invalid_topics_and_configs(broker: Broker) -> None:
    c = broker.bystander

    def create(name: str, **kw: Any) -> tuple[int, str | None]:
        configs = kw.get("configs", {})
        resp = c.request(
            19,
            7,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": kw.get("partitions", 1),
                        "replication_factor": kw.get("rf", 1),
                        "assignments": [],
                        "configs": [{"name": k, "value": v} for k, v in configs.items()],
                    }
                ],
                "timeout": 1000,
                "validate_only": False,
            },
        )
        return resp.topics[0].error_code, resp.topics[0].error_message

    assert create("bad/name")[0] == Errors.INVALID_TOPIC_EXCEPTION
    assert create("")[0] == Errors.INVALID_TOPIC_EXCEPTION
    assert create("x" * 250)[0] == Errors.INVALID_TOPIC_EXCEPTION
    assert create("ok", partitions=0)[0] == Errors.INVALID_PARTITIONS
    assert create("ok", rf=3)[0] == Errors.INVALID_REPLICATION_FACTOR
    code, message = create("ok", configs={"retention.ms": "soon"})
    assert code == Errors.INVALID_CONFIG and "retention.ms" in (message or "")
    assert create("ok", configs={"not.a.config": "1"})[0] == Errors.INVALID_CONFIG
    assert create("ok")[0] == 0
    assert create("ok")[0] == Errors.TOPIC_ALREADY_EXISTS
    meta = c.request(
        3,
        12,
        {
            "topics": [{"name": "bad name", "topic_id": None}],
            "allow_auto_topic_creation": True,
            "include_topic_authorized_operations": False,
        },
    )
    assert meta.topics[0].error_code == Errors.INVALID_TOPIC_EXCEPTION

    def alter(name: str, value: str) -> tuple[int, str | None]:
        resp = c.request(
            44,
            1,
            {
                "resources": [
                    {
                        "resource_type": 2,
                        "resource_name": "ok",
                        "configs": [{"name": name, "config_operation": 0, "value": value}],
                    }
                ],
                "validate_only": False,
            },
        )
        return resp.responses[0].error_code, resp.responses[0].error_message

    code, message = alter("segment.bytes", "-4")
    assert code == Errors.INVALID_CONFIG and "segment.bytes" in (message or "")
    assert alter("no.such.config", "1")[0] == Errors.INVALID_CONFIG
    assert alter("retention.ms", "60000") == (0, None)


def test_unknown_tagged_fields_are_skipped_as_kafka_does(broker: Broker) -> None:
    # A newer client may send tags this version's schema does not know: Kafka skips them.
    def tags(tag: int, value: bytes) -> bytes:
        return bytes([1, tag, len(value)]) + value

    c = broker.bystander
    create_topic(c, "tags")
    records = build_simple_batch([b"tagged"])
    partition = struct.pack(">i", 0) + bytes([len(records) + 1]) + records + tags(5, b"p")
    topic = b"\x05tags" + b"\x02" + partition + tags(6, b"t")
    body = b"\x00" + struct.pack(">hi", 1, 5000) + b"\x02" + topic + tags(100, b"top")
    resp = c.request(0, 9, body)
    assert resp.responses[0].partition_responses[0].error_code == 0
    metadata = c.request(3, 12, b"\x00\x01\x00" + tags(64, b"future"))  # all topics
    assert {"keep", "tags"} <= {t.name for t in metadata.topics}
    part = fetch(c, "tags", 0, 0).responses[0].partitions[0]
    assert [r.value for _, r in iter_records(part.records)] == [b"tagged"]
