"""Batch reads with every offset form Spark's Kafka source accepts, against a real broker."""

from __future__ import annotations

import datetime

import pytest
from conftest import create_topic, produce, reader

T0 = 1_700_000_000_000  # record i of a partition is stamped T0 + 1000 * i


@pytest.fixture(scope="module")
def topic(brook_session) -> str:
    """Two partitions: 0 holds a0..a29, 1 holds b0..b19; keys k<i> on partition 0 only."""
    import uuid

    name = f"batch-read-{uuid.uuid4().hex[:6]}"
    # The records are stamped in 2023: without retention.ms=-1 the broker's retention check
    # (every 5 minutes) deletes them in the middle of the module when the run is slow.
    create_topic(brook_session.bootstrap, name, 2, configs={"retention.ms": "-1"})
    produce(
        brook_session.bootstrap,
        name,
        [b"a%d" % i for i in range(30)],
        partition=0,
        keys=[b"k%d" % i for i in range(30)],
        timestamps=[T0 + 1000 * i for i in range(30)],
    )
    produce(
        brook_session.bootstrap,
        name,
        [b"b%d" % i for i in range(20)],
        partition=1,
        timestamps=[T0 + 1000 * i for i in range(20)],
    )
    return name


def values(df) -> list[tuple[int, int]]:
    return sorted((r.partition, r.offset) for r in df.select("partition", "offset").collect())


def span(p: int, start: int, end: int) -> list[tuple[int, int]]:
    return [(p, o) for o in range(start, end)]


def test_whole_topic_with_exact_content(spark, brook_session, topic: str) -> None:
    df = reader(spark, brook_session.bootstrap, subscribe=topic)
    assert [f.name for f in df.schema.fields] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    rows = {(r.partition, r.offset): r for r in df.collect()}
    assert sorted(rows) == span(0, 0, 30) + span(1, 0, 20)
    r = rows[(0, 7)]
    assert (bytes(r.key), bytes(r.value), r.topic, r.timestampType) == (b"k7", b"a7", topic, 0)
    assert r.timestamp.replace(tzinfo=datetime.UTC) == datetime.datetime.fromtimestamp(
        (T0 + 7000) / 1000, datetime.UTC
    )
    assert rows[(1, 3)].key is None and bytes(rows[(1, 3)].value) == b"b3"


def test_earliest_and_latest_words(spark, brook_session, topic: str) -> None:
    df = reader(
        spark,
        brook_session.bootstrap,
        subscribe=topic,
        startingOffsets="earliest",
        endingOffsets="latest",
    )
    assert len(values(df)) == 50


def test_json_offsets_with_earliest_and_latest_markers(spark, brook_session, topic: str) -> None:
    df = reader(
        spark,
        brook_session.bootstrap,
        subscribe=topic,
        startingOffsets=f'{{"{topic}":{{"0":5,"1":-2}}}}',
        endingOffsets=f'{{"{topic}":{{"0":-1,"1":12}}}}',
    )
    assert values(df) == span(0, 5, 30) + span(1, 0, 12)


def test_json_offsets_must_name_every_partition(spark, brook_session, topic: str) -> None:
    df = reader(
        spark, brook_session.bootstrap, subscribe=topic, startingOffsets=f'{{"{topic}":{{"0":5}}}}'
    )
    with pytest.raises(Exception, match="you must specify all TopicPartitions"):
        df.collect()


def test_global_timestamps(spark, brook_session, topic: str) -> None:
    df = reader(
        spark,
        brook_session.bootstrap,
        subscribe=topic,
        startingTimestamp=str(T0 + 10_000),
        endingTimestamp=str(T0 + 15_500),
    )
    assert values(df) == span(0, 10, 16) + span(1, 10, 16)


def test_timestamps_by_partition(spark, brook_session, topic: str) -> None:
    df = reader(
        spark,
        brook_session.bootstrap,
        subscribe=topic,
        startingOffsetsByTimestamp=f'{{"{topic}":{{"0":{T0 + 25_000},"1":{T0}}}}}',
        endingOffsetsByTimestamp=f'{{"{topic}":{{"0":{T0 + 99_000},"1":{T0 + 2000}}}}}',
    )
    # An ending timestamp past every record means the latest offset.
    assert values(df) == span(0, 25, 30) + span(1, 0, 2)


def test_timestamp_without_a_match(spark, brook_session, topic: str) -> None:
    late = str(T0 + 10_000_000)
    df = reader(spark, brook_session.bootstrap, subscribe=topic, startingTimestamp=late)
    with pytest.raises(Exception, match="No offset matched from request of topic-partition"):
        df.collect()
    df = reader(
        spark,
        brook_session.bootstrap,
        subscribe=topic,
        startingTimestamp=late,
        startingOffsetsByTimestampStrategy="latest",
    )
    assert values(df) == []


def test_assign_and_pattern(spark, brook_session, topic: str) -> None:
    df = reader(spark, brook_session.bootstrap, assign=f'{{"{topic}":[1]}}')
    assert values(df) == span(1, 0, 20)
    df = reader(spark, brook_session.bootstrap, subscribePattern=topic[:-6] + ".{6}")
    assert len(values(df)) == 50


def test_min_partitions_splits_large_ranges(spark, brook_session, topic: str) -> None:
    df = reader(spark, brook_session.bootstrap, subscribe=topic, minPartitions="6")
    assert df.rdd.getNumPartitions() >= 5
    assert values(df) == span(0, 0, 30) + span(1, 0, 20)


def test_headers(spark, brook_session, unique_topic: str) -> None:
    create_topic(brook_session.bootstrap, unique_topic, 1)
    produce(
        brook_session.bootstrap,
        unique_topic,
        [b"x", b"y"],
        headers=[[("h1", b"v1"), ("h2", None)], None],
    )
    df = reader(spark, brook_session.bootstrap, subscribe=unique_topic, includeHeaders="true")
    rows = sorted(df.collect(), key=lambda r: r.offset)
    assert [(h.key, None if h.value is None else bytes(h.value)) for h in rows[0].headers] == [
        ("h1", b"v1"),
        ("h2", None),
    ]
    assert rows[1].headers is None


def test_option_errors_surface_when_the_query_is_defined(spark, brook_session) -> None:
    with pytest.raises(Exception, match="One of the following options must be specified"):
        spark.read.format("brook").option("kafka.bootstrap.servers", brook_session.bootstrap).load()
    with pytest.raises(Exception, match=r"Option 'kafka\.bootstrap\.servers' must be specified"):
        spark.readStream.format("brook").option("subscribe", "x").load()
    with pytest.raises(Exception, match="starting offset can't be latest for batch queries"):
        reader(spark, brook_session.bootstrap, subscribe="x", startingOffsets="latest").collect()
    query = (
        reader(spark, brook_session.bootstrap, stream=True, subscribe="x", endingOffsets="latest")
        .writeStream.format("noop")
        .start()
    )
    with pytest.raises(Exception, match="ending offset not valid in streaming queries"):
        query.awaitTermination(60)
