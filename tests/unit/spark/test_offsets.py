"""Offset JSON in the shape of Spark's Kafka source (JsonUtils)."""

from __future__ import annotations

import json

import pytest

from brook.spark.offsets import (
    from_json_dict,
    parse_assign,
    parse_partition_offsets,
    parse_partition_timestamps,
    to_json_dict,
)


def test_checkpoint_shape_is_sparks() -> None:
    offsets = {("b", 10): 1, ("b", 2): 5, ("a", 0): 23}
    data = to_json_dict(offsets)
    # Topics sorted, partitions sorted numerically, partition keys as strings.
    assert json.dumps(data, separators=(",", ":")) == '{"a":{"0":23},"b":{"2":5,"10":1}}'
    # Spark hands offsets back through JSON: keys are strings both ways.
    assert from_json_dict(json.loads(json.dumps(data))) == offsets
    assert from_json_dict(None) == {}


def test_option_forms() -> None:
    assert parse_partition_offsets('{"t":{"0":23,"1":-2},"u":{"0":-1}}') == {
        ("t", 0): 23,
        ("t", 1): -2,
        ("u", 0): -1,
    }
    assert parse_assign('{"t":[0,1]}') == {("t", 0), ("t", 1)}
    assert parse_partition_timestamps('{"t":{"3":1700000000000}}') == {("t", 3): 1700000000000}


@pytest.mark.parametrize("text", ['{"t":[0]}', '{"t":{"x":1}}', "[]", '{"t":{"0":true}}', "{"])
def test_bad_offsets_name_the_expected_form(text: str) -> None:
    with pytest.raises(ValueError, match=r"Expected e\.g\. .*got "):
        parse_partition_offsets(text)


@pytest.mark.parametrize("text", ['{"t":{"0":1}}', '{"t":["0"]}', '{"t":[true]}'])
def test_bad_assign(text: str) -> None:
    with pytest.raises(ValueError, match=r'Expected e\.g\. \{"topicA":\[0,1\]'):
        parse_assign(text)
