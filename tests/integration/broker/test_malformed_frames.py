"""Frames a hostile or broken client may send, against a real broker process: each closes only
its own connection with one line in the log (or gets Kafka's error code), the process lives,
other clients keep working and nothing written is lost.

Regressions: an array count of 2^33 in a 50-byte JoinGroup or OffsetCommit body made kio's
native reader reserve 64 GiB and abort the process; a null count in a non-nullable array
reached the handlers as None (a traceback per request); Produce v13 naming the all-zero topic
id failed an assertion; Metadata v10-11 with a null topic name failed to encode its answer;
CreateTopics / CreatePartitions asking for 2^31 partitions ran the broker out of memory.
A malformed request also gives back what it reserved of queued.max.request.bytes.
"""

from __future__ import annotations

import random
import socket
import struct
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from frame_fuzz import Env, Generator, LimitedBrookProcess
from rawclient import RawClient, create_topic, fetch, produce

from brook.protocol.api import request_class
from brook.protocol.errors import Errors
from brook.protocol.framing import encode_request
from brook.protocol.primitives import compact_string, uvarint
from brook.protocol.records import build_simple_batch, iter_records

KEPT = [b"kept-1", b"kept-2"]


@dataclass
class Broker:
    process: LimitedBrookProcess
    bystander: RawClient

    @property
    def bootstrap(self) -> str:
        return self.process.bootstrap

    def log_since(self, mark: int) -> str:
        return self.process.log_path.read_text(errors="replace")[mark:]

    def log_mark(self) -> int:
        return len(self.process.log_path.read_text(errors="replace"))


def _kept(client: RawClient) -> list[bytes]:
    part = fetch(client, "keep", 0, 0).responses[0].partitions[0]
    assert part.error_code == 0
    return [r.value for _, r in iter_records(part.records)]


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[Broker]:
    with _serving(tmp_path, {}) as broker:
        yield broker


@contextmanager
def _serving(tmp_path: Path, config: dict[str, str]) -> Iterator[Broker]:
    """A broker holding KEPT, checked after the test: alive, no traceback, KEPT intact."""
    # The address space is capped so that a regression fails here, not on the machine.
    with (
        LimitedBrookProcess(
            tmp_path / "data", {"auto.create.topics.enable": "false", **config}
        ) as process,
        RawClient(process.bootstrap) as bystander,
    ):
        create_topic(bystander, "keep")
        for value in KEPT:
            produce(bystander, "keep", 0, build_simple_batch([value]))
        yield Broker(process, bystander)
        assert process.proc is not None and process.proc.poll() is None, process.log()
        # the connection opened before, and a new one, both still work; nothing was lost
        assert _kept(bystander) == KEPT
        with RawClient(process.bootstrap) as fresh:
            assert _kept(fresh) == KEPT
        assert "Traceback" not in process.log_path.read_text(errors="replace")


def _closes_with_one_line(broker: Broker, frame: bytes, expected: str) -> None:
    mark = broker.log_mark()
    with RawClient(broker.bootstrap) as bad:
        bad.send_bytes(frame)
        assert bad.is_closed(wait=10), "the broker kept the connection open"
        port = bad.sock.getsockname()[1]
    lines = [line for line in broker.log_since(mark).splitlines() if f":{port}" in line]
    assert len(lines) == 1, lines
    assert "closing connection" in lines[0] and expected in lines[0], lines[0]


def _compact_count(count: int) -> bytes:
    return uvarint(count + 1)


# ------------------------------------------------------------------ counts beyond memory


def _join_group_v6(protocols_count: bytes, padding: int = 8) -> bytes:
    body = (
        compact_string("g")
        + struct.pack(">ii", 10000, 10000)
        + compact_string("")
        + b"\x00"  # group_instance_id: null
        + compact_string("consumer")
        + protocols_count
        + b"\x00" * padding
    )
    return encode_request(11, 6, 1, "hostile", body)


def _offset_commit_v9(topics_count: bytes) -> bytes:
    body = (
        compact_string("g")
        + struct.pack(">i", 1)
        + compact_string("m")
        + b"\x00"  # group_instance_id: null
        + topics_count
        + b"\x00" * 8
    )
    return encode_request(8, 9, 1, "hostile", body)


def _join_group_v5_legacy(count: int) -> bytes:
    def s(text: str) -> bytes:
        return struct.pack(">h", len(text)) + text.encode()

    body = (
        s("g")
        + struct.pack(">ii", 10000, 10000)
        + s("")
        + struct.pack(">h", -1)
        + s("consumer")
        + struct.pack(">i", count)
        + b"\x00" * 8
    )
    return encode_request(11, 5, 1, "hostile", body)


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(_join_group_v6(_compact_count(2**33)), id="JoinGroup-v6-2^33"),
        pytest.param(_join_group_v6(uvarint(2**35 - 1)), id="JoinGroup-v6-2^35"),
        pytest.param(_offset_commit_v9(_compact_count(2**33)), id="OffsetCommit-v9-2^33"),
        pytest.param(_join_group_v5_legacy(2**31 - 1), id="JoinGroup-v5-int32-max"),
    ],
)
def test_a_count_beyond_the_frame_closes_only_that_connection(broker: Broker, frame: bytes) -> None:
    assert len(frame) < 80
    _closes_with_one_line(broker, frame, "tried to allocate a collection of size")


def test_huge_counts_in_produce_and_fetch_close_the_connection(broker: Broker) -> None:
    for version in (9, 3):  # compact and int32 counts
        cls = request_class(0, version)
        assert cls is not None
        flexible = cls.__flexible__
        head = (b"\x00" if flexible else struct.pack(">h", -1)) + struct.pack(">hi", 1, 1000)
        count = _compact_count(2**33) if flexible else struct.pack(">i", 2**31 - 1)
        frame = encode_request(0, version, 1, "hostile", head + count + b"\x00" * 4)
        _closes_with_one_line(broker, frame, "ProduceRequest.topic_data: tried to allocate")
    body = struct.pack(">iiiibii", -1, 500, 1, 1 << 20, 0, 0, -1) + _compact_count(2**33)
    frame = encode_request(1, 12, 1, "hostile", body + b"\x00" * 4)
    _closes_with_one_line(broker, frame, "FetchRequest.topics: tried to allocate")


# ------------------------------------------------------------------ with the request memory pool

MB = 1024 * 1024
POOLED = {"socket.request.max.bytes": str(2 * MB), "queued.max.request.bytes": str(2 * MB)}


def test_a_malformed_request_gives_its_memory_back(tmp_path: Path) -> None:
    """queued.max.request.bytes reserves a request's declared size before the walk reads it.
    Two malformed requests of 1.2 MB, one admitted at once and one that first waits for the
    memory a stalled request holds, each close only their own connection with one line; their
    reservations go back, so a 1.5 MB produce is then served at once (had they stayed taken,
    the 2 MiB pool would be overdrawn and the produce would wait for memory forever)."""
    hostile = _join_group_v6(_compact_count(2**33), padding=1_200_000)
    assert MB < len(hostile) < 2 * MB
    expected = "JoinGroupRequest.protocols: tried to allocate a collection of size 8589934592"
    with _serving(tmp_path, POOLED) as broker:
        _closes_with_one_line(broker, hostile, expected)

        # A size prefix declaring the whole pool and nothing after it holds the pool...
        stalled = socket.create_connection(("127.0.0.1", broker.process.port), timeout=30)
        stalled.sendall(struct.pack(">i", 2 * MB))
        assert _kept(broker.bystander) == KEPT  # the broker has read the prefix by now
        mark = broker.log_mark()
        with RawClient(broker.bootstrap) as bad:
            bad.send_bytes(hostile)
            # ...so the malformed request waits for memory, unread and unanswered...
            assert not bad.is_closed(wait=1), "a request over the pool was read"
            # ...until the stalled connection goes: then it is read, walked and refused.
            stalled.close()
            assert bad.is_closed(wait=30), "the broker kept the connection open"
            port = bad.sock.getsockname()[1]
        lines = [line for line in broker.log_since(mark).splitlines() if f":{port}" in line]
        assert len(lines) == 1 and expected in lines[0], lines

        batch = build_simple_batch([b"v" * 1000] * 1500)
        assert len(batch) > 1_500_000
        with RawClient(broker.bootstrap, timeout=30) as client:
            create_topic(client, "large", 1, {"max.message.bytes": str(2 * MB)})
            response = produce(client, "large", 0, batch)
            assert response.responses[0].partition_responses[0].error_code == 0, response
            part = fetch(client, "large", 0, 0, max_bytes=4 * MB).responses[0]
            assert sum(1 for _ in iter_records(part.partitions[0].records)) == 1500


# ------------------------------------------------------------------ null where the schema has none

NULL_TARGETS = {0: "produce", 1: "fetch", 2: "list_offsets", 8: "offset_commit", 11: "join_group"}


def _null_frames() -> list[Any]:
    """For each served version of the five APIs, each non-nullable array of a valid body
    (one with at least one element at every level) rewritten as null."""
    from brook.broker.registry import HANDLERS

    env = Env(["keep"], [], ["g"])
    gen = Generator(env, random.Random(7))
    gen._count = lambda name: 1  # type: ignore[method-assign]  # one element everywhere
    cases = []
    for key, name in NULL_TARGETS.items():
        spec = HANDLERS[key]
        for version in range(spec.min_version, spec.max_version + 1):
            body = gen.body(key, version)
            for slot in body.slots:
                if not slot.is_count or slot.nullable:
                    continue
                null = b"\x00" if slot.form == "uvarint" else struct.pack(">i", -1)
                data = body.data[: slot.pos] + null + body.data[slot.pos + slot.width :]
                frame = encode_request(key, version, 1, "hostile", data)
                cases.append(pytest.param(frame, slot.where, id=f"{name}-v{version}-{slot.where}"))
    return cases


def test_null_arrays_are_refused_with_one_line_each(broker: Broker) -> None:
    cases = _null_frames()
    assert len(cases) > 100
    for case in cases:
        frame, where = case.values
        _closes_with_one_line(broker, frame, f"{where}: non-nullable field was serialized as null")


# ------------------------------------------------------------------ topic ids


def test_produce_v13_naming_the_zero_topic_id_gets_unknown_topic_id(broker: Broker) -> None:
    with RawClient(broker.bootstrap) as client:
        for topic_id in (uuid.UUID(int=0), uuid.uuid4()):
            resp = client.request(
                0,
                13,
                {
                    "transactional_id": None,
                    "acks": -1,
                    "timeout": 5000,
                    "topic_data": [
                        {
                            "topic_id": topic_id,
                            "partition_data": [{"index": 0, "records": build_simple_batch([b"x"])}],
                        }
                    ],
                },
            )
            (topic,) = resp.responses
            assert (topic.topic_id or uuid.UUID(int=0)) == topic_id
            assert topic.partition_responses[0].error_code == Errors.UNKNOWN_TOPIC_ID
        assert _kept(client) == KEPT  # the same connection goes on


def test_fetch_v13_and_later_naming_the_zero_topic_id_get_unknown_topic_id(broker: Broker) -> None:
    with RawClient(broker.bootstrap) as client:
        for version in (13, 15, 18):
            resp = fetch(client, "", 0, 0, version=version, topic_id=uuid.UUID(int=0))
            part = resp.responses[0].partitions[0]
            assert part.error_code == Errors.UNKNOWN_TOPIC_ID, (version, part)
        assert _kept(client) == KEPT


def test_metadata_v10_v11_with_a_null_name_or_a_topic_id_is_an_invalid_request(
    broker: Broker,
) -> None:
    with RawClient(broker.bootstrap) as client:
        for version in (10, 11):
            for topic in (
                {"name": None, "topic_id": None},
                {"name": "keep", "topic_id": uuid.uuid4()},
            ):
                data = {
                    "topics": [topic],
                    "allow_auto_topic_creation": False,
                    "include_cluster_authorized_operations": False,
                    "include_topic_authorized_operations": False,
                }
                resp = client.request(3, version, data)
                (entry,) = resp.topics
                assert entry.error_code == Errors.INVALID_REQUEST
                assert entry.name == (topic["name"] or "")
        resp = client.request(
            3,
            12,
            {
                "topics": [{"name": None, "topic_id": uuid.uuid4()}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        assert resp.topics[0].error_code == Errors.UNKNOWN_TOPIC_ID


# ------------------------------------------------------------------ partitions beyond memory


def test_creating_2_31_partitions_is_a_policy_violation(broker: Broker) -> None:
    with RawClient(broker.bootstrap) as client:
        resp = client.request(
            19,
            7,
            {
                "topics": [
                    {
                        "name": "huge",
                        "num_partitions": 2**31 - 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 30000,
                "validate_only": False,
            },
        )
        assert resp.topics[0].error_code == Errors.POLICY_VIOLATION
        resp = client.request(
            37,
            3,
            {
                "topics": [{"name": "keep", "count": 2**31 - 1, "assignments": None}],
                "timeout": 30000,
                "validate_only": False,
            },
        )
        assert resp.results[0].error_code == Errors.POLICY_VIOLATION
        assert _kept(client) == KEPT
