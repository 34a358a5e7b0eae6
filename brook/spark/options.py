"""The source and sink options, with the names, defaults, validation and error texts of Spark's
Kafka source (KafkaSourceProvider): names are case-insensitive, ``kafka.*`` options go to Brook's
client with the prefix stripped, and the client settings Spark forbids are refused the same way.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from brook.client.config import (
    CONSUMER_CONFIG,
    PRODUCER_CONFIG,
    parse_consumer_config,
    parse_producer_config,
)
from brook.config.defs import ConfigError

from .offsets import (
    TopicPartitionKey,
    parse_assign,
    parse_partition_offsets,
    parse_partition_timestamps,
)

__all__ = [
    "OffsetLimit",
    "OffsetLimitKind",
    "OptionError",
    "SinkOptions",
    "SourceOptions",
    "Subscription",
    "check_source_options",
    "parse_sink_options",
    "parse_source_options",
    "parse_time_ms",
]

DEFAULT_MAX_TRIGGER_DELAY = "15m"
DEFAULT_POLL_TIMEOUT_MS = 120_000  # spark.network.timeout (120 s), Spark's default for it
EARLIEST = -2
LATEST = -1

_INSTRUCTION_AUTO_OFFSET_RESET = (
    "Kafka option 'auto.offset.reset' is not supported.\n"
    "Instead set the source option 'startingoffsets' to 'earliest' or 'latest'\n"
    "to specify where to start. Structured Streaming manages which offsets are consumed\n"
    "internally, rather than relying on the kafkaConsumer to do it. This will ensure that no\n"
    "data is missed when new topics/partitions are dynamically subscribed. Note that\n"
    "'startingoffsets' only applies when a new Streaming query is started, and\n"
    "that resuming will always pick up from where the query left off. See the docs for more\n"
    "details."
)

CUSTOM_GROUP_ID_WARNING = (
    "Kafka option 'kafka.group.id' has been set on this query, it is not recommended to set "
    "this option. Brook's source never joins a consumer group (it reads assigned partitions "
    "and keeps its offsets in the checkpoint), so the group id is only passed to the client."
)


class OptionError(ValueError):
    """An invalid source or sink option (Spark raises IllegalArgumentException here)."""


class OffsetLimitKind(enum.Enum):
    EARLIEST = "earliest"
    LATEST = "latest"
    SPECIFIC = "specific"  # per-partition offsets; -2 earliest, -1 latest
    TIMESTAMP = "timestamp"  # one timestamp for every partition
    TIMESTAMPS = "timestamps"  # per-partition timestamps


@dataclass(frozen=True)
class OffsetLimit:
    """Where a read starts or ends, before it is resolved against the log."""

    kind: OffsetLimitKind
    offsets: Mapping[TopicPartitionKey, int] = field(default_factory=dict)
    timestamp: int = -1
    # startingOffsetsByTimestampStrategy: what a timestamp with no record at or after it does.
    fail_on_no_match: bool = True


EARLIEST_LIMIT = OffsetLimit(OffsetLimitKind.EARLIEST)
LATEST_LIMIT = OffsetLimit(OffsetLimitKind.LATEST)


@dataclass(frozen=True)
class Subscription:
    """What to read: ``assign`` (fixed partitions), ``subscribe`` (topics) or
    ``subscribePattern`` (a regular expression matched against whole topic names)."""

    kind: str
    topics: tuple[str, ...] = ()
    pattern: str = ""
    partitions: tuple[TopicPartitionKey, ...] = ()

    def matches(self, topic: str) -> bool:
        if self.kind == "subscribe":
            return topic in self.topics
        if self.kind == "subscribepattern":
            return re.fullmatch(self.pattern, topic) is not None
        return any(t == topic for t, _ in self.partitions)


@dataclass(frozen=True)
class SourceOptions:
    subscription: Subscription
    starting: OffsetLimit
    ending: OffsetLimit
    client_config: Mapping[str, str]
    fail_on_data_loss: bool = True
    include_headers: bool = False
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = 15 * 60 * 1000
    poll_timeout_ms: int = DEFAULT_POLL_TIMEOUT_MS
    fetch_offset_retries: int = 3
    fetch_offset_retry_interval_ms: int = 10


@dataclass(frozen=True)
class SinkOptions:
    client_config: Mapping[str, str]
    topic: str | None = None


# ---------------------------------------------------------------------------------------------
# Values
# ---------------------------------------------------------------------------------------------

_TIME_UNITS_MS = {
    "us": 0.001,
    "ms": 1,
    "s": 1000,
    "m": 60_000,
    "min": 60_000,
    "h": 3_600_000,
    "d": 86_400_000,
}


def parse_time_ms(text: str) -> int:
    """A Spark time string (``15m``, ``10s``, ``500ms``; no unit = ms) in milliseconds."""
    match = re.fullmatch(r"(-?[0-9]+)([a-z]+)?", text.strip().lower())
    if match is None:
        raise OptionError(
            f"Invalid time string: {text}. Time must be specified as seconds (s), milliseconds "
            "(ms), microseconds (us), minutes (m or min), hour (h), or day (d). "
            "E.g. 50s, 100ms, or 250us."
        )
    number, unit = int(match.group(1)), match.group(2) or "ms"
    if unit not in _TIME_UNITS_MS:
        raise OptionError(f'Invalid suffix: "{unit}" in time string {text}')
    return int(number * _TIME_UNITS_MS[unit])


def _bool(options: Mapping[str, str], name: str, default: bool) -> bool:
    raw = options.get(name.lower())
    if raw is None:
        return default
    text = str(raw).strip().lower()
    if text not in ("true", "false"):
        raise OptionError(f"Invalid value '{raw}' for option '{name}': expected true or false")
    return text == "true"


def _long(options: Mapping[str, str], name: str) -> int | None:
    raw = options.get(name.lower())
    if raw is None:
        return None
    try:
        return int(str(raw).strip())
    except ValueError:
        raise OptionError(
            f"Invalid value '{raw}' for option '{name}': expected an integer"
        ) from None


def _lower(options: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v) for k, v in options.items()}


# ---------------------------------------------------------------------------------------------
# kafka.* passthrough
# ---------------------------------------------------------------------------------------------


def _client_params(options: Mapping[str, str]) -> dict[str, str]:
    return {k[len("kafka.") :]: v for k, v in options.items() if k.startswith("kafka.")}


def _check_client_keys(params: Mapping[str, str], table_keys: set[str], what: str) -> None:
    # Unknown keys are refused by name now, on the driver, rather than in a task later.
    for name in params:
        if name not in table_keys:
            raise OptionError(
                f"Kafka option 'kafka.{name}' is not a Brook {what} setting "
                f"(unknown configuration {name!r})"
            )


_SOURCE_CLIENT_KEYS = {k.name for k in CONSUMER_CONFIG}
_SINK_CLIENT_KEYS = {k.name for k in PRODUCER_CONFIG}


def _source_client_config(options: Mapping[str, str]) -> dict[str, str]:
    params = _client_params(options)
    if "auto.offset.reset" in params:
        raise OptionError(_INSTRUCTION_AUTO_OFFSET_RESET)
    if "key.deserializer" in params:
        raise OptionError(
            "Kafka option 'key.deserializer' is not supported as keys are deserialized as byte "
            "arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly "
            "deserialize the keys."
        )
    if "value.deserializer" in params:
        raise OptionError(
            "Kafka option 'value.deserializer' is not supported as values are deserialized as "
            "byte arrays with ByteArrayDeserializer. Use DataFrame operations to explicitly "
            "deserialize the values."
        )
    for name in ("enable.auto.commit", "interceptor.classes"):
        if name in params:
            raise OptionError(f"Kafka option '{name}' is not supported")
    if "bootstrap.servers" not in params:
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka consumer"
        )
    _check_client_keys(params, _SOURCE_CLIENT_KEYS, "consumer")
    try:
        parse_consumer_config(params)
    except ConfigError as exc:
        raise OptionError(f"Invalid Kafka option: {exc}") from None
    return params


def _sink_client_config(options: Mapping[str, str]) -> dict[str, str]:
    params = _client_params(options)
    if "key.serializer" in params:
        raise OptionError(
            "Kafka option 'key.serializer' is not supported as keys are serialized with "
            "ByteArraySerializer."
        )
    if "value.serializer" in params:
        raise OptionError(
            "Kafka option 'value.serializer' is not supported as value are serialized with "
            "ByteArraySerializer."
        )
    if "bootstrap.servers" not in params:
        raise OptionError(
            "Option 'kafka.bootstrap.servers' must be specified for configuring Kafka producer"
        )
    _check_client_keys(params, _SINK_CLIENT_KEYS, "producer")
    return params


# ---------------------------------------------------------------------------------------------
# Source options
# ---------------------------------------------------------------------------------------------

_STRATEGIES = ("subscribe", "subscribepattern", "assign")


def _subscription(options: Mapping[str, str]) -> Subscription:
    given = [k for k in _STRATEGIES if k in options]
    listed = ", ".join(_STRATEGIES)
    if not given:
        raise OptionError(
            f"One of the following options must be specified for Kafka source: {listed}. "
            "See the docs for more details."
        )
    if len(given) > 1:
        raise OptionError(
            f"Only one of the following options can be specified for Kafka source: {listed}. "
            "See the docs for more details."
        )
    kind = given[0]
    value = options[kind]
    if kind == "assign":
        if not value.strip().startswith("{"):
            raise OptionError(
                f"No topicpartitions to assign as specified value for option 'assign' is '{value}'"
            )
        return Subscription(kind, partitions=tuple(sorted(parse_assign(value))))
    if kind == "subscribe":
        topics = tuple(t.strip() for t in value.split(",") if t.strip())
        if not topics:
            raise OptionError(
                f"No topics to subscribe to as specified value for option 'subscribe' is '{value}'"
            )
        return Subscription(kind, topics=topics)
    pattern = value.strip()
    if not pattern:
        raise OptionError(
            f"Pattern to subscribe is empty as specified value for option 'subscribePattern' "
            f"is '{value}'"
        )
    try:
        re.compile(pattern)
    except re.error as exc:
        raise OptionError(f"Invalid subscribePattern '{value}': {exc}") from None
    return Subscription(kind, pattern=pattern)


def _offset_limit(
    options: Mapping[str, str],
    timestamp_key: str,
    by_timestamp_key: str,
    offsets_key: str,
    default: OffsetLimit,
) -> OffsetLimit:
    """Spark's precedence: a global timestamp, then per-partition timestamps, then offsets."""
    strategy = options.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if strategy not in ("error", "latest"):
        raise OptionError(
            f"Invalid value '{strategy}' for option 'startingOffsetsByTimestampStrategy': "
            "expected error or latest"
        )
    fail = strategy == "error"
    if timestamp_key in options:
        text = options[timestamp_key].strip()
        try:
            return OffsetLimit(
                OffsetLimitKind.TIMESTAMP, timestamp=int(text), fail_on_no_match=fail
            )
        except ValueError:
            raise OptionError(f"Expected a single long value, got {text}") from None
    if by_timestamp_key in options:
        return OffsetLimit(
            OffsetLimitKind.TIMESTAMPS,
            offsets=parse_partition_timestamps(options[by_timestamp_key].strip()),
            fail_on_no_match=fail,
        )
    if offsets_key in options:
        text = options[offsets_key].strip()
        if text.lower() == "latest":
            return LATEST_LIMIT
        if text.lower() == "earliest":
            return EARLIEST_LIMIT
        return OffsetLimit(OffsetLimitKind.SPECIFIC, offsets=parse_partition_offsets(text))
    return default


def _check_batch_limits(starting: OffsetLimit, ending: OffsetLimit) -> None:
    if starting.kind is OffsetLimitKind.LATEST:
        raise OptionError("starting offset can't be latest for batch queries on Kafka")
    if starting.kind is OffsetLimitKind.SPECIFIC:
        for (topic, partition), offset in starting.offsets.items():
            if offset == LATEST:
                raise OptionError(
                    f"startingOffsets for {topic}-{partition} can't be latest for batch "
                    "queries on Kafka"
                )
    if ending.kind is OffsetLimitKind.EARLIEST:
        raise OptionError("ending offset can't be earliest for batch queries on Kafka")
    if ending.kind is OffsetLimitKind.SPECIFIC:
        for (topic, partition), offset in ending.offsets.items():
            if offset == EARLIEST:
                raise OptionError(
                    f"ending offset for {topic}-{partition} can't be earliest for batch "
                    "queries on Kafka"
                )
    same_kind = starting.kind is ending.kind and starting.kind in (
        OffsetLimitKind.SPECIFIC,
        OffsetLimitKind.TIMESTAMPS,
    )
    if same_kind:
        if set(starting.offsets) != set(ending.offsets):
            raise OptionError(
                "Kafka data source in batch query: partitions in startingOffsets and "
                f"endingOffsets differ: {_tps(starting.offsets)} vs {_tps(ending.offsets)}"
            )
        what = "offset" if starting.kind is OffsetLimitKind.SPECIFIC else "timestamp"
        for (topic, partition), start in starting.offsets.items():
            end = ending.offsets[(topic, partition)]
            if start > end and start >= 0 and end >= 0:
                raise OptionError(
                    f"The specified starting {what} {start} is greater than ending {what} "
                    f"{end} for topic {topic} partition {partition}."
                )


def _tps(offsets: Mapping[TopicPartitionKey, int]) -> str:
    return "[" + ", ".join(f"{t}-{p}" for t, p in sorted(offsets)) + "]"


def _general(options: Mapping[str, str]) -> dict[str, Any]:
    """The checks Spark's validateGeneralOptions makes for batch and streaming reads alike."""
    subscription = _subscription(options)
    min_partitions = _long(options, "minPartitions")
    if min_partitions is not None and min_partitions <= 0:
        raise OptionError("minPartitions must be positive")
    max_records = _long(options, "maxRecordsPerPartition")
    if max_records is not None and max_records <= 0:
        raise OptionError("maxRecordsPerPartition must be positive")
    client_config = _source_client_config(options)

    max_offsets = _long(options, "maxOffsetsPerTrigger")
    min_offsets = _long(options, "minOffsetsPerTrigger")
    if max_offsets is not None and max_offsets <= 0:
        raise OptionError("maxOffsetsPerTrigger must be positive")
    if min_offsets is not None and min_offsets < 0:
        raise OptionError("minOffsetsPerTrigger must not be negative")
    if min_offsets is not None and max_offsets is not None and min_offsets > max_offsets:
        raise OptionError(
            f"The value of minOffsetPerTrigger({min_offsets}) is higher than the "
            f"maxOffsetsPerTrigger({max_offsets})."
        )
    delay = parse_time_ms(options.get("maxtriggerdelay", DEFAULT_MAX_TRIGGER_DELAY))
    poll_timeout = _long(options, "kafkaConsumer.pollTimeoutMs")
    retries = _long(options, "fetchOffset.numRetries")
    interval = _long(options, "fetchOffset.retryIntervalMs")
    return {
        "subscription": subscription,
        "client_config": client_config,
        "fail_on_data_loss": _bool(options, "failOnDataLoss", True),
        "include_headers": _bool(options, "includeHeaders", False),
        "min_partitions": min_partitions,
        "max_records_per_partition": max_records,
        "max_offsets_per_trigger": max_offsets,
        "min_offsets_per_trigger": min_offsets,
        "max_trigger_delay_ms": delay,
        "poll_timeout_ms": DEFAULT_POLL_TIMEOUT_MS if poll_timeout is None else poll_timeout,
        "fetch_offset_retries": 3 if retries is None else retries,
        "fetch_offset_retry_interval_ms": 10 if interval is None else interval,
    }


def check_source_options(raw: Mapping[str, str]) -> bool:
    """Validate what does not depend on batch or streaming (when the DataFrame is defined);
    returns includeHeaders, which decides the schema."""
    return bool(_general(_lower(raw))["include_headers"])


def parse_source_options(raw: Mapping[str, str], *, streaming: bool) -> SourceOptions:
    """Validate the source options of a streaming or a batch read (Spark's checks, in order)."""
    options = _lower(raw)
    if streaming:
        if "endingoffsets" in options:
            raise OptionError("ending offset not valid in streaming queries")
        if "endingoffsetsbytimestamp" in options:
            raise OptionError("ending timestamp not valid in streaming queries")
        starting = _offset_limit(
            options,
            "startingtimestamp",
            "startingoffsetsbytimestamp",
            "startingoffsets",
            LATEST_LIMIT,
        )
        ending = LATEST_LIMIT
    else:
        starting = _offset_limit(
            options,
            "startingtimestamp",
            "startingoffsetsbytimestamp",
            "startingoffsets",
            EARLIEST_LIMIT,
        )
        ending = _offset_limit(
            options, "endingtimestamp", "endingoffsetsbytimestamp", "endingoffsets", LATEST_LIMIT
        )
        _check_batch_limits(starting, ending)

    return SourceOptions(
        starting=starting,
        ending=ending,
        **_general(options),
    )


def parse_sink_options(raw: Mapping[str, str]) -> SinkOptions:
    options = _lower(raw)
    topic = options.get("topic")
    client_config = _sink_client_config(options)
    try:
        parse_producer_config(client_config)
    except ConfigError as exc:
        raise OptionError(f"Invalid Kafka option: {exc}") from None
    return SinkOptions(
        client_config=client_config,
        topic=None if topic is None else topic.strip(),
    )
