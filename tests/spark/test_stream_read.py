"""Streaming reads: admission control seen through the query progress, availableNow, records and
partitions that arrive while the query runs, and checkpointed offsets in Spark's JSON shape."""

from __future__ import annotations

import json
import time
from pathlib import Path

from conftest import create_topic, produce, reader

from brook.client.admin import Admin


def _batch_sizes(query) -> list[int]:
    return [p["numInputRows"] for p in query.recentProgress if p["numInputRows"] > 0]


def _offsets(spark, name: str) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in spark.sql(f"select * from {name}").collect())


def test_max_offsets_per_trigger_with_available_now(
    spark, brook_session, unique_topic: str, tmp_path: Path
) -> None:
    create_topic(brook_session.bootstrap, unique_topic, 2)
    produce(brook_session.bootstrap, unique_topic, [b"%d" % i for i in range(150)], partition=0)
    produce(brook_session.bootstrap, unique_topic, [b"%d" % i for i in range(150)], partition=1)
    checkpoint = tmp_path / "cp"
    name = "avail_" + unique_topic.replace("-", "_")
    query = (
        reader(
            spark,
            brook_session.bootstrap,
            stream=True,
            subscribe=unique_topic,
            startingOffsets="earliest",
            maxOffsetsPerTrigger="100",
        )
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    assert _batch_sizes(query) == [100, 100, 100]
    assert _offsets(spark, name) == [(p, o) for p in (0, 1) for o in range(150)]
    # The checkpoint holds Spark's Kafka offset JSON: {"topic":{"partition":next offset}}.
    lines = (checkpoint / "offsets" / "0").read_text().splitlines()
    assert json.loads(lines[2]) == {unique_topic: {"0": 50, "1": 50}}
    final = (checkpoint / "offsets" / "2").read_text().splitlines()
    assert json.loads(final[2]) == {unique_topic: {"0": 150, "1": 150}}


def test_running_query_sees_new_records_and_new_partitions(
    spark, brook_session, unique_topic: str, tmp_path: Path
) -> None:
    bootstrap = brook_session.bootstrap
    create_topic(bootstrap, unique_topic, 1)
    produce(bootstrap, unique_topic, [b"before"] * 5, partition=0)  # before the start: skipped
    name = "running_" + unique_topic.replace("-", "_")
    query = (
        reader(spark, bootstrap, stream=True, subscribe=unique_topic)
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    try:
        _wait_for(lambda: query.lastProgress is not None)
        produce(bootstrap, unique_topic, [b"%d" % i for i in range(10)], partition=0)
        query.processAllAvailable()
        assert _offsets(spark, name) == [(0, o) for o in range(5, 15)]
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_partitions({unique_topic: 2})
        produce(bootstrap, unique_topic, [b"new"] * 4, partition=1)
        # A partition added while the query runs is read from its beginning.
        _wait_for(lambda: len(_offsets(spark, name)) == 14)
        assert _offsets(spark, name)[-4:] == [(1, o) for o in range(4)]
    finally:
        query.stop()


def test_min_offsets_per_trigger_holds_small_batches_back(
    spark, brook_session, unique_topic: str, tmp_path: Path
) -> None:
    bootstrap = brook_session.bootstrap
    create_topic(bootstrap, unique_topic, 1)
    name = "minoff_" + unique_topic.replace("-", "_")
    query = (
        reader(
            spark,
            bootstrap,
            stream=True,
            subscribe=unique_topic,
            minOffsetsPerTrigger="20",
            maxTriggerDelay="1h",
        )
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    try:
        _wait_for(lambda: query.lastProgress is not None)
        produce(bootstrap, unique_topic, [b"x"] * 10, partition=0)
        time.sleep(3)  # several triggers pass; ten records are not enough to start a batch
        assert _batch_sizes(query) == []
        produce(bootstrap, unique_topic, [b"y"] * 15, partition=0)
        _wait_for(lambda: _batch_sizes(query) == [25])
    finally:
        query.stop()


def _wait_for(predicate, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("condition not reached in time")
