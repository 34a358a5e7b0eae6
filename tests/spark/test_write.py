"""Batch and streaming writes, read back from the broker with exact content."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import create_topic, produce, reader


def _read_all(spark, bootstrap: str, topic: str, headers: bool = False):
    df = reader(spark, bootstrap, subscribe=topic, includeHeaders=str(headers).lower())
    return sorted(df.collect(), key=lambda r: (r.partition, r.offset))


def test_batch_write_with_every_column(spark, brook_session, unique_topic: str) -> None:
    bootstrap = brook_session.bootstrap
    create_topic(bootstrap, unique_topic, 3)
    rows = [
        (
            unique_topic,
            f"k{i}".encode(),
            f"v{i}",
            i % 3,
            [("h", f"{i}".encode())] if i % 2 else None,
        )
        for i in range(30)
    ]
    df = spark.createDataFrame(
        rows,
        "topic string, key binary, value string, partition int, "
        "headers array<struct<key: string, value: binary>>",
    ).coalesce(1)
    df.write.mode("append").format("brook").option("kafka.bootstrap.servers", bootstrap).save()
    back = _read_all(spark, bootstrap, unique_topic, headers=True)
    assert len(back) == 30
    for r in back:
        i = int(bytes(r.value)[1:])
        assert r.partition == i % 3 and bytes(r.key) == f"k{i}".encode()
        if i % 2:
            assert [(h.key, bytes(h.value)) for h in r.headers] == [("h", f"{i}".encode())]
        else:
            assert r.headers is None
    # Within each partition the rows keep the order one task wrote them in.
    for p in range(3):
        ids = [int(bytes(r.value)[1:]) for r in back if r.partition == p]
        assert ids == sorted(ids)


def test_topic_option_overrides_the_column_and_key_is_optional(
    spark, brook_session, unique_topic: str
) -> None:
    bootstrap = brook_session.bootstrap
    create_topic(bootstrap, unique_topic, 1)
    df = spark.createDataFrame(
        [("elsewhere", b"\x00\x01"), ("elsewhere", None)], "topic string, value binary"
    )
    (
        df.write.mode("append")
        .format("brook")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", unique_topic)
        .save()
    )
    back = _read_all(spark, bootstrap, unique_topic)
    assert [(r.topic, r.key) for r in back] == [(unique_topic, None)] * 2
    assert {None if r.value is None else bytes(r.value) for r in back} == {b"\x00\x01", None}


def test_write_schema_errors(spark, brook_session) -> None:
    df = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match="topic option required when no 'topic' attribute"):
        df.write.mode("append").format("brook").option(
            "kafka.bootstrap.servers", brook_session.bootstrap
        ).save()
    df = spark.createDataFrame([(1,)], "value long")
    with pytest.raises(Exception, match="value attribute unsupported type bigint"):
        df.write.mode("append").format("brook").option("topic", "t").option(
            "kafka.bootstrap.servers", brook_session.bootstrap
        ).save()


def test_streaming_write_from_brook_to_brook(
    spark, brook_session, unique_topic: str, tmp_path: Path
) -> None:
    bootstrap = brook_session.bootstrap
    source, sink = unique_topic + "-in", unique_topic + "-out"
    create_topic(bootstrap, source, 2)
    create_topic(bootstrap, sink, 1)
    produce(bootstrap, source, [b"%d" % i for i in range(100)])
    stream = reader(spark, bootstrap, stream=True, subscribe=source, startingOffsets="earliest")
    query = (
        stream.selectExpr("key", "concat(value, cast('!' as binary)) as value")
        .writeStream.format("brook")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", sink)
        .option("checkpointLocation", str(tmp_path / "cp"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120)
    assert query.exception() is None
    back = _read_all(spark, bootstrap, sink)
    assert sorted(bytes(r.value) for r in back) == sorted(b"%d!" % i for i in range(100))


def test_overwrite_is_refused(spark, brook_session) -> None:
    df = spark.createDataFrame([("x",)], "value string")
    with pytest.raises(Exception, match="Save mode Overwrite not allowed for Brook"):
        df.write.mode("overwrite").format("brook").option("topic", "t").option(
            "kafka.bootstrap.servers", brook_session.bootstrap
        ).save()
