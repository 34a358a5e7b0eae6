"""Bad input gets Kafka's error code or a closed connection; the broker keeps serving others
and loses nothing already written."""

from __future__ import annotations

import struct

import pytest
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch


@pytest.fixture
def broker(tmp_path):  # type: ignore[no-untyped-def]
    overrides = {"auto.create.topics.enable": "false", "message.max.bytes": "20000",
                 "socket.request.max.bytes": "100000"}
    with BrookProcess(tmp_path / "data", overrides) as b:
        yield b


def _healthy(broker: BrookProcess, topic: str, expected: list[bytes]) -> None:
    """Another connection still works and every record written so far is there."""
    with RawClient(broker.bootstrap) as c:
        resp = fetch(c, topic, 0, 0)
        part = resp.responses[0].partitions[0]
        assert part.error_code == 0
        from brook.protocol.records import iter_records
        assert [r.value for _, r in iter_records(part.records)] == expected


def test_frames_the_broker_cannot_parse_close_only_that_connection(broker: BrookProcess) -> None:
    with RawClient(broker.bootstrap) as c:
        create_topic(c, "keep")
        assert produce(c, "keep", 0, build_simple_batch([b"safe"])).responses[0] \
            .partition_responses[0].error_code == 0
    cases = [
        struct.pack(">i", -5),                          # negative size
        struct.pack(">i", 200_000) + b"x" * 16,          # over socket.request.max.bytes
        struct.pack(">i", 3) + b"abc",                   # shorter than a header
        struct.pack(">ihhi", 10, 999, 0, 1) + b"\x00\x00",  # unknown API key
        struct.pack(">ihhi", 10, 0, 2, 1) + b"\x00\x00",    # Produce v2: below what is served
        struct.pack(">ihhi", 10, 3, 99, 1) + b"\x00\x00",   # Metadata v99
        struct.pack(">ihhi", 14, 3, 1, 1) + b"\x00\x00" + b"\xff\xff\xff\x7f",  # garbage body
    ]
    for frame in cases:
        with RawClient(broker.bootstrap) as bad, RawClient(broker.bootstrap) as good:
            bad.send_bytes(frame)
            assert bad.is_closed(), frame
            assert good.request(18, 0, {}).error_code == 0
    _healthy(broker, "keep", [b"safe"])


def test_unsupported_api_versions_version_gets_v0_error_35(broker: BrookProcess) -> None:
    with RawClient(broker.bootstrap) as c:
        c.send_bytes(struct.pack(">ihhih", 10, 18, 99, 7, -1))
        frame = c.recv_frame()
        corr, error, count = struct.unpack_from(">ihi", frame, 0)
        assert (corr, error, count) == (7, Errors.UNSUPPORTED_VERSION, 1)
        assert struct.unpack_from(">hhh", frame, 10) == (18, 0, 4)


def test_record_errors_per_partition(broker: BrookProcess) -> None:
    with RawClient(broker.bootstrap) as c:
        create_topic(c, "t", configs={"max.message.bytes": "5000"})

        def code(records: bytes, topic: str = "t", version: int = 9) -> int:
            resp = produce(c, topic, 0, records, version=version)
            return resp.responses[0].partition_responses[0].error_code

        good = build_simple_batch([b"ok"])
        assert code(good) == 0
        bad_crc = bytearray(build_simple_batch([b"payload"]))
        bad_crc[-1] ^= 0xFF
        assert code(bytes(bad_crc)) == Errors.CORRUPT_MESSAGE
        magic1 = bytearray(good)
        magic1[16] = 1
        assert code(bytes(magic1)) == Errors.INVALID_RECORD
        assert code(build_simple_batch([b"x" * 6000])) == Errors.MESSAGE_TOO_LARGE
        assert code(good + good) == Errors.INVALID_RECORD
        assert code(good, topic="missing") == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert code(build_simple_batch([b"z"], codec=4), version=5) == \
            Errors.UNSUPPORTED_COMPRESSION_TYPE
        resp = c.request(0, 9, {"transactional_id": None, "acks": 2, "timeout": 1000,
                                "topic_data": [{"name": "t", "partition_data": [
                                    {"index": 0, "records": good}]}]})
        assert resp.responses[0].partition_responses[0].error_code == Errors.INVALID_REQUIRED_ACKS
        unknown_partition = produce(c, "t", 7, good)
        assert unknown_partition.responses[0].partition_responses[0].error_code == \
            Errors.UNKNOWN_TOPIC_OR_PARTITION
        out_of_range = fetch(c, "t", 0, 50).responses[0].partitions[0]
        assert out_of_range.error_code == Errors.OFFSET_OUT_OF_RANGE
        assert out_of_range.high_watermark == 1
    _healthy(broker, "t", [b"ok"])


def test_acks0_failure_closes_the_connection(broker: BrookProcess) -> None:
    with RawClient(broker.bootstrap) as c:
        produce(c, "nope", 0, build_simple_batch([b"x"]), acks=0)
        assert c.is_closed()


def test_invalid_topics_and_configs(broker: BrookProcess) -> None:
    with RawClient(broker.bootstrap) as c:
        def create(name: str, **kw: object) -> tuple[int, str | None]:
            configs = kw.get("configs", {})
            resp = c.request(19, 7, {
                "topics": [{"name": name, "num_partitions": kw.get("partitions", 1),
                            "replication_factor": kw.get("rf", 1), "assignments": [],
                            "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
                "timeout": 1000, "validate_only": False})
            return resp.topics[0].error_code, resp.topics[0].error_message

        assert create("bad/name")[0] == Errors.INVALID_TOPIC_EXCEPTION
        assert create("")[0] == Errors.INVALID_TOPIC_EXCEPTION
        assert create("ok", partitions=0)[0] == Errors.INVALID_PARTITIONS
        assert create("ok", rf=3)[0] == Errors.INVALID_REPLICATION_FACTOR
        code, message = create("ok", configs={"retention.ms": "soon"})
        assert code == Errors.INVALID_CONFIG and "retention.ms" in (message or "")
        assert create("ok", configs={"not.a.config": "1"})[0] == Errors.INVALID_CONFIG
        assert create("ok")[0] == 0
        assert create("ok")[0] == Errors.TOPIC_ALREADY_EXISTS
        meta = c.request(3, 12, {"topics": [{"name": "no-such", "topic_id": None}],
                                 "allow_auto_topic_creation": True,
                                 "include_topic_authorized_operations": False})
        assert meta.topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        meta = c.request(3, 12, {"topics": [{"name": "bad name", "topic_id": None}],
                                 "allow_auto_topic_creation": True,
                                 "include_topic_authorized_operations": False})
        assert meta.topics[0].error_code == Errors.INVALID_TOPIC_EXCEPTION
