"""The transactional produce benchmark at a tiny size on a real 3-node ``brook cluster``: its
figures are for docs/performance.md, not asserted here; what is asserted is that each case
wrote what it claims to: every record, readable under read_committed, the transactional
cases in transactions of 100 and of 1,000 records each touching all six partitions (one
marker per partition per transaction in the logs), the idempotent case without markers."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, TopicPartition
from support import local_cluster

from bench import txn_produce

RECORDS = 2000


def _log_ends(bootstrap: str, topic: str) -> tuple[int, int]:
    """(sum of the partitions' high watermarks, sum of their last stable offsets)."""
    ends = []
    for level in ("read_uncommitted", "read_committed"):
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "ends", "isolation.level": level}
        )
        try:
            ends.append(
                sum(
                    consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
                    for p in range(txn_produce.PARTITIONS)
                )
            )
        finally:
            consumer.close()
    return ends[0], ends[1]


def _read_committed(bootstrap: str, topic: str) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"r-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(txn_produce.PARTITIONS)])
        seen, ended = 0, set()
        deadline = time.monotonic() + 60
        while len(ended) < txn_produce.PARTITIONS:
            assert time.monotonic() < deadline, (seen, ended)
            for msg in consumer.consume(1000, 0.5):
                if msg.error() is None:
                    seen += 1
                elif msg.error().code() == KafkaError._PARTITION_EOF:
                    ended.add(msg.partition())
        return seen
    finally:
        consumer.close()


def test_each_case_writes_what_it_claims(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3) as cluster:
        bootstrap = cluster.bootstrap_servers
        result = txn_produce.measure(bootstrap, RECORDS, 100, rounds=1)
        assert set(result["ratio_over_idempotent"]) == {"txn_100", "txn_1000"}
        assert all(v[0] > 0 for v in result["records_per_s"].values())
        for case, per_txn in txn_produce.CASES.items():
            topic = result["topics"][case]
            markers = 0 if per_txn is None else RECORDS // per_txn * txn_produce.PARTITIONS
            deadline = time.monotonic() + 60
            # The last commit's markers reach the partitions just after it returns.
            while (ends := _log_ends(bootstrap, topic)) != (RECORDS + markers,) * 2:
                assert time.monotonic() < deadline, (case, ends)
                time.sleep(0.1)
            assert _read_committed(bootstrap, topic) == RECORDS
