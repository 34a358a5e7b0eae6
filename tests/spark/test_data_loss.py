"""failOnDataLoss both ways, with retention deleting records under a running query and with a
subscribed topic deleted under it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import create_topic, produce, reader
from support import BrookProcess

from brook.client.admin import Admin
from brook.client.admin.types import AlterConfigOp, ConfigResource, OffsetSpec
from brook.spark.fetch import DataLossError, read_range

RECORDS = 600


@pytest.fixture
def broker(tmp_path: Path) -> Iterator[BrookProcess]:
    """A broker of the test's own that runs retention every 200 ms."""
    with BrookProcess(tmp_path / "data", {"log.retention.check.interval.ms": "200"}) as b:
        yield b


def _earliest(bootstrap: str, topic: str) -> int:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        return admin.list_offsets({(topic, 0): OffsetSpec.EARLIEST})[(topic, 0)].offset


def _commits(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([f for f in commits.iterdir() if f.name.isdigit()]) if commits.exists() else 0


def _start_slow_query(spark, bootstrap: str, topic: str, tmp_path: Path, fail: bool):
    """50 records a second, so retention overtakes the query."""
    create_topic(bootstrap, topic, 1, {"segment.bytes": "20000"})
    produce(bootstrap, topic, [b"%04d" % i + b"x" * 300 for i in range(RECORDS)], partition=0)
    name = "loss_" + topic.replace("-", "_")
    checkpoint = tmp_path / "cp"
    query = (
        reader(
            spark,
            bootstrap,
            stream=True,
            subscribe=topic,
            startingOffsets="earliest",
            maxOffsetsPerTrigger="50",
            failOnDataLoss=str(fail).lower(),
        )
        .select("offset")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="1 second")
        .start()
    )
    deadline = time.monotonic() + 120
    while _commits(checkpoint) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _commits(checkpoint) >= 1
    # Now retention deletes every closed segment of the log.
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.incremental_alter_configs(
            {ConfigResource.topic(topic): [AlterConfigOp("retention.ms", "100")]}
        )
    deadline = time.monotonic() + 30
    while _earliest(bootstrap, topic) < 400 and time.monotonic() < deadline:
        time.sleep(0.1)
    return query, name


def test_retention_fails_the_query_when_fail_on_data_loss(
    spark, broker, unique_topic: str, tmp_path: Path
) -> None:
    query, _ = _start_slow_query(spark, broker.bootstrap, unique_topic, tmp_path, fail=True)
    try:
        with pytest.raises(Exception) as info:
            query.awaitTermination(120)
        message = str(info.value)
        assert "Cannot fetch offset" in message and f"{unique_topic}-0" in message
        assert 'set the source option "failOnDataLoss" to "false"' in message
    finally:
        query.stop()


def test_retention_is_skipped_when_not_fail_on_data_loss(
    spark, broker, unique_topic: str, tmp_path: Path
) -> None:
    query, name = _start_slow_query(spark, broker.bootstrap, unique_topic, tmp_path, fail=False)
    try:
        query.processAllAvailable()
        assert query.isActive and query.exception() is None
        earliest = _earliest(broker.bootstrap, unique_topic)
        offsets = sorted(r.offset for r in spark.sql(f"select offset from {name}").collect())
        assert len(offsets) == len(set(offsets))
        # What retention deleted is skipped; everything still in the log was read.
        assert len(offsets) < RECORDS
        assert [o for o in offsets if o >= earliest] == list(range(earliest, RECORDS))
        assert offsets[:50] == list(range(50))
    finally:
        query.stop()


@pytest.mark.parametrize("fail", [True, False])
def test_deleted_topic(spark, brook_session, unique_topic: str, tmp_path: Path, fail: bool) -> None:
    bootstrap = brook_session.bootstrap
    kept, doomed = unique_topic + "-kept", unique_topic + "-doomed"
    for topic in (kept, doomed):
        create_topic(bootstrap, topic, 1)
        produce(bootstrap, topic, [b"a", b"b"], partition=0)
    name = "deleted_" + unique_topic.replace("-", "_")
    query = (
        reader(
            spark,
            bootstrap,
            stream=True,
            subscribe=f"{kept},{doomed}",
            startingOffsets="earliest",
            failOnDataLoss=str(fail).lower(),
        )
        .select("topic", "offset")
        .writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    try:
        query.processAllAvailable()
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.delete_topics([doomed])
        produce(bootstrap, kept, [b"c"], partition=0)
        if fail:
            with pytest.raises(Exception, match=rf"\['{doomed}-0'\] are gone"):
                query.awaitTermination(60)
        else:
            query.processAllAvailable()
            rows = sorted((r.topic, r.offset) for r in spark.sql(f"select * from {name}").collect())
            assert rows == [(doomed, 0), (doomed, 1), (kept, 0), (kept, 1), (kept, 2)]
            assert query.isActive
    finally:
        query.stop()


@pytest.mark.parametrize("fail", [True, False])
def test_task_reading_a_range_retention_already_deleted(
    broker, unique_topic: str, fail: bool
) -> None:
    """The executor's own check (records deleted after the batch was planned)."""
    bootstrap = broker.bootstrap
    create_topic(bootstrap, unique_topic, 1, {"segment.bytes": "20000"})
    produce(
        bootstrap, unique_topic, [b"%04d" % i + b"x" * 300 for i in range(RECORDS)], partition=0
    )
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.incremental_alter_configs(
            {ConfigResource.topic(unique_topic): [AlterConfigOp("retention.ms", "100")]}
        )
    deadline = time.monotonic() + 30
    while _earliest(bootstrap, unique_topic) < RECORDS and time.monotonic() < deadline:
        time.sleep(0.1)
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.incremental_alter_configs(
            {ConfigResource.topic(unique_topic): [AlterConfigOp("retention.ms", "-1")]}
        )
    produce(bootstrap, unique_topic, [b"after"] * 50, partition=0)
    assert _earliest(bootstrap, unique_topic) == RECORDS
    batches = read_range(
        {"bootstrap.servers": bootstrap},
        unique_topic,
        0,
        10,
        RECORDS + 50,
        False,
        fail_on_data_loss=fail,
        poll_timeout_ms=10_000,
    )
    if fail:
        with pytest.raises(DataLossError, match=rf"Cannot fetch offset 10 of {unique_topic}-0"):
            list(batches)
    else:
        offsets = [o for b in batches for o in b.column("offset").to_pylist()]
        assert offsets == list(range(RECORDS, RECORDS + 50))
