"""The Spark source on a compacted topic the cleaner has rewritten: a batch read (its ranges
split by minPartitions, so some end inside the offsets the cleaner removed) returns exactly
the records the broker holds, and failOnDataLoss=true takes the gaps for what they are (as
Spark's Kafka source does: the offsets are in the log, their records compacted away)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import create_topic, reader
from support import BrookProcess

from brook import Consumer, Producer


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrookProcess]:
    with BrookProcess(tmp_path / "data", {"log.cleaner.backoff.ms": "100"}) as b:
        yield b


def _stored(bootstrap: str, topic: str, end: int) -> list[tuple[int, bytes, bytes]]:
    with Consumer({"bootstrap.servers": bootstrap}) as c:
        return [
            (r.offset, r.key, r.value) for chunk in c.read_range((topic, 0), 0, end) for r in chunk
        ]


def test_a_batch_read_of_a_compacted_topic(spark: Any, broker: BrookProcess) -> None:
    bootstrap, topic = broker.bootstrap, "compacted"
    create_topic(
        bootstrap,
        topic,
        1,
        {"cleanup.policy": "compact", "segment.bytes": "2000", "min.cleanable.dirty.ratio": "0.01"},
    )
    with Producer({"bootstrap.servers": bootstrap, "batch.size": 500, "linger.ms": 2}) as p:
        futures = [p.send(topic, b"v%04d" % n, key=b"k%02d" % (n % 10)) for n in range(500)]
        p.flush(30)
        assert [f.result(30).offset for f in futures] == list(range(500))
    deadline = time.monotonic() + 40
    while len(stored := _stored(bootstrap, topic, 500)) > 100:
        assert time.monotonic() < deadline, len(stored)
        time.sleep(0.2)
    rows = (
        reader(
            spark,
            bootstrap,
            subscribe=topic,
            startingOffsets="earliest",
            endingOffsets="latest",
            minPartitions="7",
            failOnDataLoss="true",
        )
        .select("offset", "key", "value")
        .orderBy("offset")
        .collect()
    )
    assert [(r.offset, bytes(r.key), bytes(r.value)) for r in rows] == stored
    assert len(rows) < 500 and rows[-1].offset == 499
