"""The server properties a deployment sets, each with its Kafka meaning, seen from outside a
real broker process: what clients are told, where data goes, when segments roll, what
retention deletes, when data is fsynced (the recovery-point checkpoint moves only after an
fsync), and what new topics get by default."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from broker_checks import earliest_offset, eventually
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess, free_port

from brook.protocol.errors import Errors
from brook.protocol.records import build_simple_batch


def _metadata(c: RawClient, *topics: str, create: bool = True) -> Any:
    return c.request(
        3,
        12,
        {
            "topics": [{"name": t, "topic_id": None} for t in topics],
            "allow_auto_topic_creation": create,
            "include_topic_authorized_operations": False,
        },
    )


def _recovery_points(data: Path) -> dict[tuple[str, int], int]:
    lines = (data / "recovery-point-offset-checkpoint").read_text().splitlines()
    points = {}
    for line in lines[2:]:
        topic, partition, offset = line.split()
        points[(topic, int(partition))] = int(offset)
    return points


def _send(c: RawClient, topic: str, value: bytes, timestamp: int | None = None) -> int:
    batch = build_simple_batch([value], timestamp=timestamp or int(time.time() * 1000))
    return produce(c, topic, 0, batch).responses[0].partition_responses[0].error_code


def test_identity_layout_rolls_retention_bytes_and_flush_messages(tmp_path: Path) -> None:
    port = free_port()
    overrides = {
        "node.id": "7",
        "listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "advertised.listeners": f"PLAINTEXT://localhost:{port}",
        "num.partitions": "3",
        "log.segment.bytes": "2000",
        "log.roll.ms": "1000",
        "log.retention.bytes": "4000",
        "log.retention.check.interval.ms": "200",
        "log.flush.interval.messages": "5",
        "log.flush.offset.checkpoint.interval.ms": "200",
    }
    data = tmp_path / "data"
    with BrookProcess(data, overrides, port=port) as broker, RawClient(broker.bootstrap) as c:
        meta = _metadata(c, "auto-created")
        assert [(b.node_id, b.host, b.port) for b in meta.brokers] == [(7, "localhost", port)]
        assert meta.controller_id == 7
        (topic,) = meta.topics
        assert topic.error_code == 0 and len(topic.partitions) == 3  # num.partitions
        assert all(p.leader_id == 7 for p in topic.partitions)
        assert "node.id=7" in (data / "meta.properties").read_text()  # log.dirs
        assert {p.name for p in data.iterdir()} >= {f"auto-created-{p}" for p in range(3)}

        # log.segment.bytes: segments hold at most 2000 bytes of whole batches
        create_topic(c, "sized")
        for i in range(20):
            assert _send(c, "sized", b"%03d" % i + b"x" * 300) == 0
        sizes = [p.stat().st_size for p in sorted((data / "sized-0").glob("*.log"))]
        assert len(sizes) >= 3 and all(0 < s <= 2000 for s in sizes[:-1])
        # log.retention.bytes: whole old segments go and the log start offset moves
        assert eventually(lambda: earliest_offset(c, "sized") > 0)
        remaining = sum(p.stat().st_size for p in (data / "sized-0").glob("*.log"))
        assert remaining >= 4000 - 2000 and earliest_offset(c, "sized") < 20

        # log.roll.ms: a batch more than a second younger than the segment's first one rolls
        create_topic(c, "rolled")
        assert _send(c, "rolled", b"first") == 0
        time.sleep(1.2)
        assert _send(c, "rolled", b"second") == 0
        assert len(list((data / "rolled-0").glob("*.log"))) == 2

        # log.flush.interval.messages: an fsync every 5 messages moves the recovery point
        create_topic(c, "flushed")
        for i in range(12):
            assert _send(c, "flushed", b"%d" % i) == 0
        assert eventually(lambda: _recovery_points(data).get(("flushed", 0)) == 10)
        time.sleep(0.5)
        assert _recovery_points(data)[("flushed", 0)] == 10  # 11 and 12 wait for the next 5


def test_replication_factor_auto_create_retention_flush_ms_sizes_and_idle_connections(
    tmp_path: Path,
) -> None:
    overrides = {
        "default.replication.factor": "2",
        "auto.create.topics.enable": "false",
        "log.retention.ms": "1000",
        "log.retention.check.interval.ms": "200",
        "log.flush.interval.ms": "300",
        "log.flush.offset.checkpoint.interval.ms": "200",
        "message.max.bytes": "3000",
        "fetch.max.bytes": "1024",
        "connections.max.idle.ms": "600",
    }
    data = tmp_path / "data"
    with BrookProcess(data, overrides) as broker, RawClient(broker.bootstrap) as c:
        # default.replication.factor: one broker cannot hold two replicas
        resp = c.request(
            19,
            7,
            {
                "topics": [
                    {
                        "name": "two-copies",
                        "num_partitions": 1,
                        "replication_factor": -1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 5000,
                "validate_only": False,
            },
        )
        assert resp.topics[0].error_code == Errors.INVALID_REPLICATION_FACTOR
        # auto.create.topics.enable=false: Metadata does not create, even when allowed to
        assert _metadata(c, "never").topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert _metadata(c, "never").topics[0].error_code == Errors.UNKNOWN_TOPIC_OR_PARTITION
        assert not (data / "never-0").exists()

        # log.retention.ms: old records go, the log end offset stays
        c.request(
            19,
            7,
            {
                "topics": [
                    {
                        "name": "aging",
                        "num_partitions": 1,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                ],
                "timeout": 5000,
                "validate_only": False,
            },
        )
        old = int(time.time() * 1000) - 60_000
        for i in range(3):
            assert _send(c, "aging", b"old%d" % i, timestamp=old) == 0
        assert eventually(lambda: earliest_offset(c, "aging") == 3)

        # message.max.bytes: the broker-wide limit on a batch
        create_topic(c, "sizes", configs={"retention.ms": "-1"})
        assert _send(c, "sizes", b"x" * 2500) == 0
        assert _send(c, "sizes", b"x" * 3500) == Errors.MESSAGE_TOO_LARGE

        # fetch.max.bytes caps the response whatever the request asks for (KIP-74 aside)
        for _ in range(20):
            assert _send(c, "sizes", b"v" * 200) == 0
        part = fetch(c, "sizes", 0, 1, max_bytes=1 << 20).responses[0].partitions[0]
        assert 200 < len(part.records) <= 1024 and part.high_watermark == 21

        # connections.max.idle.ms: a silent connection is closed, a busy one is not
        with RawClient(broker.bootstrap) as idle:
            assert idle.request(18, 0, {}).error_code == 0
            deadline = time.monotonic() + 2.0
            while time.monotonic() < deadline:
                assert c.request(18, 0, {}).error_code == 0
                time.sleep(0.2)
            assert idle.is_closed(wait=2.0)

        # log.flush.interval.ms: unflushed data is fsynced within the interval
        create_topic(c, "timed", configs={"retention.ms": "-1"})
        for i in range(3):
            assert _send(c, "timed", b"%d" % i) == 0
        assert eventually(lambda: _recovery_points(data).get(("timed", 0)) == 3, timeout=5)
