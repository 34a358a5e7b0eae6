"""Source and sink option parsing: Spark's names, defaults, precedence and error texts."""

from __future__ import annotations

import pytest

from brook.spark.options import (
    OffsetLimitKind,
    OptionError,
    parse_sink_options,
    parse_source_options,
    parse_time_ms,
)

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "events"}


def stream(**extra: str):
    return parse_source_options({**BASE, **extra}, streaming=True)


def batch(**extra: str):
    return parse_source_options({**BASE, **extra}, streaming=False)


def test_defaults_match_spark() -> None:
    s = stream()
    assert s.starting.kind is OffsetLimitKind.LATEST
    assert s.fail_on_data_loss is True and s.include_headers is False
    assert s.max_trigger_delay_ms == 15 * 60 * 1000
    assert s.fetch_offset_retries == 3 and s.fetch_offset_retry_interval_ms == 10
    assert s.client_config == {"bootstrap.servers": "127.0.0.1:9092"}
    b = batch()
    assert b.starting.kind is OffsetLimitKind.EARLIEST
    assert b.ending.kind is OffsetLimitKind.LATEST


def test_names_are_case_insensitive() -> None:
    s = parse_source_options(
        {
            "KAFKA.BOOTSTRAP.SERVERS": "h:1",
            "SubScribe": "a, b,,",
            "FAILONDATALOSS": "False",
            "maxoffsetspertrigger": "10",
        },
        streaming=True,
    )
    assert s.subscription.topics == ("a", "b")
    assert s.fail_on_data_loss is False and s.max_offsets_per_trigger == 10


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"kafka.bootstrap.servers": "h:1"},
            "One of the following options must be specified for Kafka source: subscribe, "
            "subscribepattern, assign. See the docs for more details.",
        ),
        (
            {**BASE, "assign": '{"t":[0]}'},
            "Only one of the following options can be specified for Kafka source",
        ),
        (
            {"kafka.bootstrap.servers": "h:1", "subscribe": " , "},
            "No topics to subscribe to as specified value for option 'subscribe' is ' , '",
        ),
        (
            {"kafka.bootstrap.servers": "h:1", "subscribePattern": "  "},
            "Pattern to subscribe is empty",
        ),
        (
            {"kafka.bootstrap.servers": "h:1", "assign": "t0"},
            "No topicpartitions to assign as specified value for option 'assign' is 't0'",
        ),
        (
            {"kafka.bootstrap.servers": "h:1", "assign": "{bad"},
            'Expected e.g. {"topicA":[0,1],"topicB":[0,1]}, got {bad',
        ),
        (
            {"subscribe": "t"},
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer",
        ),
        (
            {**BASE, "kafka.auto.offset.reset": "earliest"},
            "Kafka option 'auto.offset.reset' is not supported.",
        ),
        (
            {**BASE, "kafka.key.deserializer": "x"},
            "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
            "arrays with ByteArrayDeserializer.",
        ),
        (
            {**BASE, "kafka.value.deserializer": "x"},
            "Kafka option 'value.deserializer' is not supported",
        ),
        (
            {**BASE, "kafka.enable.auto.commit": "true"},
            "Kafka option 'enable.auto.commit' is not supported",
        ),
        (
            {**BASE, "kafka.interceptor.classes": "x"},
            "Kafka option 'interceptor.classes' is not supported",
        ),
        (
            {**BASE, "kafka.no.such.setting": "1"},
            "Kafka option 'kafka.no.such.setting' is not a Brook consumer setting",
        ),
        ({**BASE, "kafka.fetch.max.bytes": "lots"}, "fetch.max.bytes"),
        ({**BASE, "minPartitions": "0"}, "minPartitions must be positive"),
        (
            {**BASE, "minPartitions": "x"},
            "Invalid value 'x' for option 'minPartitions': expected an integer",
        ),
        (
            {**BASE, "minOffsetsPerTrigger": "20", "maxOffsetsPerTrigger": "10"},
            "The value of minOffsetPerTrigger(20) is higher than the maxOffsetsPerTrigger(10).",
        ),
        ({**BASE, "maxTriggerDelay": "5 parsecs"}, "Invalid time string: 5 parsecs"),
        (
            {**BASE, "failOnDataLoss": "maybe"},
            "Invalid value 'maybe' for option 'failOnDataLoss': expected true or false",
        ),
        ({**BASE, "endingOffsets": "latest"}, "ending offset not valid in streaming queries"),
        (
            {**BASE, "endingOffsetsByTimestamp": "{}"},
            "ending timestamp not valid in streaming queries",
        ),
        ({**BASE, "startingTimestamp": "soon"}, "Expected a single long value, got soon"),
        (
            {**BASE, "startingOffsets": '{"t":{"0":"x"}}'},
            'Expected e.g. {"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}, got {"t":{"0":"x"}}',
        ),
    ],
)
def test_stream_option_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_source_options(options, streaming=True)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            {"startingOffsets": "latest"},
            "starting offset can't be latest for batch queries on Kafka",
        ),
        (
            {"startingOffsets": '{"t":{"0":-1}}', "endingOffsets": '{"t":{"0":-1}}'},
            "startingOffsets for t-0 can't be latest for batch queries on Kafka",
        ),
        (
            {"endingOffsets": "earliest"},
            "ending offset can't be earliest for batch queries on Kafka",
        ),
        (
            {"endingOffsets": '{"t":{"0":-2}}'},
            "ending offset for t-0 can't be earliest for batch queries on Kafka",
        ),
        (
            {"startingOffsets": '{"t":{"0":1}}', "endingOffsets": '{"t":{"1":5}}'},
            "partitions in startingOffsets and endingOffsets differ",
        ),
        (
            {"startingOffsets": '{"t":{"0":9}}', "endingOffsets": '{"t":{"0":5}}'},
            "The specified starting offset 9 is greater than ending offset 5 for topic t "
            "partition 0.",
        ),
    ],
)
def test_batch_option_errors(extra: dict[str, str], message: str) -> None:
    with pytest.raises(OptionError) as info:
        batch(**extra)
    assert message in str(info.value)


def test_offset_precedence_timestamp_then_by_timestamp_then_offsets() -> None:
    s = stream(
        startingOffsets="earliest",
        startingOffsetsByTimestamp='{"t":{"0":5}}',
        startingTimestamp="7",
    )
    assert s.starting.kind is OffsetLimitKind.TIMESTAMP and s.starting.timestamp == 7
    s = stream(startingOffsets="earliest", startingOffsetsByTimestamp='{"t":{"0":5}}')
    assert s.starting.kind is OffsetLimitKind.TIMESTAMPS and s.starting.offsets == {("t", 0): 5}
    s = stream(startingOffsets='{"t":{"0":23,"1":-2}}')
    assert s.starting.kind is OffsetLimitKind.SPECIFIC
    assert s.starting.offsets == {("t", 0): 23, ("t", 1): -2}
    assert (
        stream(
            startingOffsetsByTimestampStrategy="latest", startingTimestamp="1"
        ).starting.fail_on_no_match
        is False
    )


def test_assign_and_pattern() -> None:
    s = parse_source_options(
        {"kafka.bootstrap.servers": "h:1", "assign": '{"b":[1,0],"a":[2]}'}, streaming=True
    )
    assert s.subscription.partitions == (("a", 2), ("b", 0), ("b", 1))
    p = parse_source_options(
        {"kafka.bootstrap.servers": "h:1", "subscribePattern": "ev.*"}, streaming=True
    ).subscription
    assert p.matches("events") and not p.matches("xevents")


def test_kafka_passthrough_keeps_client_settings() -> None:
    s = stream(
        **{"kafka.client.id": "me", "kafka.fetch.max.bytes": "1048576", "kafka.group.id": "allowed"}
    )
    assert s.client_config == {
        "bootstrap.servers": "127.0.0.1:9092",
        "client.id": "me",
        "fetch.max.bytes": "1048576",
        "group.id": "allowed",
    }


def test_time_strings() -> None:
    assert parse_time_ms("15m") == 900_000
    assert parse_time_ms("10s") == 10_000
    assert parse_time_ms("250") == 250
    assert parse_time_ms("2h") == 7_200_000
    with pytest.raises(OptionError):
        parse_time_ms("10 seconds")


def test_sink_options() -> None:
    s = parse_sink_options(
        {"kafka.bootstrap.servers": "h:1", "Topic": " out ", "kafka.linger.ms": "5"}
    )
    assert s.topic == "out" and s.client_config == {"bootstrap.servers": "h:1", "linger.ms": "5"}
    for key, message in [
        (
            "kafka.key.serializer",
            "Kafka option 'key.serializer' is not supported as keys are "
            "serialized with ByteArraySerializer.",
        ),
        ("kafka.value.serializer", "Kafka option 'value.serializer' is not supported"),
    ]:
        with pytest.raises(OptionError, match="not supported") as info:
            parse_sink_options({"kafka.bootstrap.servers": "h:1", key: "x"})
        assert message in str(info.value)
    with pytest.raises(OptionError, match="must be specified"):
        parse_sink_options({"topic": "t"})
    with pytest.raises(OptionError, match="acks"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "kafka.acks": "sometimes"})
