"""Raw-protocol helpers for transaction tests: transactional batches of one producer id,
WriteTxnMarkers as a coordinator sends it, Fetch and ListOffsets at an isolation level."""

from __future__ import annotations

import time
import uuid
from typing import Any

import confluent_kafka
from rawclient import RawClient

from brook.protocol.records import build_simple_batch, iter_records

READ_COMMITTED = 1

# A broker for tests that write transactional batches with no coordinator behind them (raw
# batches, then raw WriteTxnMarkers or a hanging transaction): KIP-890's verification would
# refuse them, as it refuses any transactional batch its coordinator does not know of.
UNVERIFIED = {"transaction.partition.verification.enable": "false"}


def _init(c: RawClient) -> tuple[int, int]:
    resp = c.request(
        22,
        4,
        {
            "transactional_id": None,
            "transaction_timeout": 60000,
            "producer_id": -1,
            "producer_epoch": -1,
        },
    )
    assert resp.error_code == 0
    return resp.producer_id, resp.producer_epoch


class TxnProducer:
    """Transactional batches of one producer id (sequence numbers kept)."""

    def __init__(self, c: RawClient, topic: str) -> None:
        self.c, self.topic = c, topic
        self.pid, self.epoch = _init(c)
        self.seq = 0

    def send(self, *values: bytes, epoch: int | None = None) -> tuple[int, int]:
        batch = build_simple_batch(
            list(values),
            producer_id=self.pid,
            producer_epoch=self.epoch if epoch is None else epoch,
            base_sequence=self.seq,
            transactional=True,
            timestamp=int(time.time() * 1000),
        )
        resp = self.c.request(
            0,
            9,
            {
                "transactional_id": "app",
                "acks": -1,
                "timeout": 30000,
                "topic_data": [
                    {"name": self.topic, "partition_data": [{"index": 0, "records": batch}]}
                ],
            },
        )
        part = resp.responses[0].partition_responses[0]
        if part.error_code == 0:
            self.seq += len(values)
        return part.error_code, part.base_offset

    def end(self, commit: bool, *, epoch: int | None = None, coordinator_epoch: int = 0) -> int:
        return write_marker(
            self.c,
            self.pid,
            self.epoch if epoch is None else epoch,
            commit,
            [(self.topic, 0)],
            coordinator_epoch,
        )[0]


def write_marker(
    c: RawClient,
    pid: int,
    epoch: int,
    commit: bool,
    partitions: list[tuple[str, int]],
    coordinator_epoch: int = 0,
) -> list[int]:
    resp = c.request(
        27,
        1,
        {
            "markers": [
                {
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "transaction_result": commit,
                    "topics": [{"name": t, "partition_indexes": [p]} for t, p in partitions],
                    "coordinator_epoch": coordinator_epoch,
                }
            ]
        },
    )
    (marker,) = resp.markers
    assert marker.producer_id == pid
    return [p.error_code for t in marker.topics for p in t.partitions]


def fetch_at(c: RawClient, topic: str, level: int) -> Any:
    """Partition 0 of ``topic`` from offset 0."""
    return fetch_at_offset(c, topic, level, 0)


def fetch_at_offset(c: RawClient, topic: str, level: int, offset: int) -> Any:
    request: dict[str, Any] = {
        "replica_id": -1,
        "replica_state": {"replica_id": -1, "replica_epoch": -1},
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": level,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic": topic,
                "partitions": [
                    {
                        "partition": 0,
                        "current_leader_epoch": -1,
                        "fetch_offset": offset,
                        "last_fetched_epoch": -1,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return c.request(1, 12, request).responses[0].partitions[0]


def values(part: Any) -> list[bytes]:
    return [r.value for _, r in iter_records(part.records or b"") if r.value is not None]


def latest(c: RawClient, topic: str, level: int) -> int:
    resp = c.request(
        2,
        7,
        {
            "replica_id": -1,
            "isolation_level": level,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}
                    ],
                }
            ],
        },
    )
    part = resp.topics[0].partitions[0]
    assert part.error_code == 0
    return part.offset


def read_to_end(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    level: str = "read_committed",
    timeout: float = 60,
) -> list[confluent_kafka.Message]:
    """Every message of partitions 0..``partitions``-1 at isolation ``level``, read with
    confluent-kafka in the order read, until each partition's end (for read_committed, its
    last stable offset). Other errors (a leader moving) librdkafka retries by itself."""
    consumer = confluent_kafka.Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"read-{uuid.uuid4().hex}",
            "isolation.level": level,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
        got: list[confluent_kafka.Message] = []
        ended: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(ended) < partitions:
            assert time.monotonic() < deadline, (ended, [m.value() for m in got])
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    ended.add(msg.partition())
                continue
            got.append(msg)
        return got
    finally:
        consumer.close()


def read_values(
    bootstrap: str,
    topic: str,
    partitions: int = 1,
    level: str = "read_committed",
    timeout: float = 60,
) -> list[str]:
    """The sorted values (as text) ``read_to_end`` reads."""
    return sorted(
        m.value().decode() for m in read_to_end(bootstrap, topic, partitions, level, timeout)
    )
