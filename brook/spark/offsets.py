"""Partition offsets as Spark's Kafka source writes them (JsonUtils): ``{"topicA":{"0":23,"1":45}}``
with partitions as string keys, sorted by topic and partition, plus the JSON option forms it
reads (``assign``, ``startingOffsets`` / ``endingOffsets``, ``startingOffsetsByTimestamp``).

The streaming offset handed to Spark is exactly this dict, so a checkpoint of a Brook query
holds the same offset JSON as one written by Spark's Kafka source.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = [
    "PartitionOffsets",
    "TopicPartitionKey",
    "from_json_dict",
    "parse_assign",
    "parse_partition_offsets",
    "parse_partition_timestamps",
    "to_json_dict",
]

TopicPartitionKey = tuple[str, int]
PartitionOffsets = dict[TopicPartitionKey, int]

_OFFSETS_EXAMPLE = '{"topicA":{"0":23,"1":-1},"topicB":{"0":-2}}'
_ASSIGN_EXAMPLE = '{"topicA":[0,1],"topicB":[0,1]}'
_TIMESTAMPS_EXAMPLE = (
    '{"topicA": {"0": 123456789, "1": 123456789}, "topicB": {"0": 123456789, "1": 123456789}}'
)


def _load(text: str, example: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise ValueError(f"Expected e.g. {example}, got {text}") from None


def _nested_longs(text: str, example: str) -> PartitionOffsets:
    data = _load(text, example)
    out: PartitionOffsets = {}
    try:
        if not isinstance(data, dict):
            raise TypeError
        for topic, parts in data.items():
            if not isinstance(parts, dict):
                raise TypeError
            for partition, value in parts.items():
                if isinstance(value, bool) or not isinstance(value, int):
                    raise TypeError
                out[(topic, int(partition))] = value
    except (TypeError, ValueError):
        raise ValueError(f"Expected e.g. {example}, got {text}") from None
    return out


def parse_partition_offsets(text: str) -> PartitionOffsets:
    """``{"t":{"0":23,"1":-2}}`` -> {("t", 0): 23, ("t", 1): -2} (-2 earliest, -1 latest)."""
    return _nested_longs(text, _OFFSETS_EXAMPLE)


def parse_partition_timestamps(text: str) -> PartitionOffsets:
    """``{"t":{"0":1700000000000}}`` -> {("t", 0): 1700000000000}."""
    return _nested_longs(text, _TIMESTAMPS_EXAMPLE)


def parse_assign(text: str) -> set[TopicPartitionKey]:
    """``{"t":[0,1]}`` -> {("t", 0), ("t", 1)}."""
    data = _load(text, _ASSIGN_EXAMPLE)
    out: set[TopicPartitionKey] = set()
    try:
        if not isinstance(data, dict):
            raise TypeError
        for topic, parts in data.items():
            if not isinstance(parts, list):
                raise TypeError
            for partition in parts:
                if isinstance(partition, bool) or not isinstance(partition, int):
                    raise TypeError
                out.add((topic, partition))
    except TypeError:
        raise ValueError(f"Expected e.g. {_ASSIGN_EXAMPLE}, got {text}") from None
    return out


def to_json_dict(offsets: Mapping[TopicPartitionKey, int]) -> dict[str, dict[str, int]]:
    """The nested dict in Spark's order: topics sorted, partitions sorted numerically."""
    out: dict[str, dict[str, int]] = {}
    for topic, partition in sorted(offsets):
        out.setdefault(topic, {})[str(partition)] = int(offsets[(topic, partition)])
    return out


def from_json_dict(data: Mapping[str, Mapping[str, int]] | None) -> PartitionOffsets:
    """The inverse of to_json_dict (an offset Spark hands back, keys always strings)."""
    return {
        (topic, int(partition)): int(offset)
        for topic, parts in (data or {}).items()
        for partition, offset in parts.items()
    }
