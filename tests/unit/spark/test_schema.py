"""The read schema equals what Spark expects of Arrow batches; written DataFrames are checked
as Spark's KafkaWriter checks them."""

from __future__ import annotations

import pytest
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from brook.spark.schema import arrow_schema, read_schema, validate_write_schema


@pytest.mark.parametrize("headers", [False, True])
def test_arrow_schema_is_to_arrow_schema_of_the_spark_schema(headers: bool) -> None:
    spark_schema = read_schema(headers)
    assert arrow_schema(headers) == to_arrow_schema(spark_schema, timezone="UTC")
    names = [f.name for f in spark_schema.fields]
    assert names[:7] == [
        "key",
        "value",
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestampType",
    ]
    assert ("headers" in names) is headers


def _schema(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(n, t) for n, t in fields])


def test_write_columns() -> None:
    headers = ArrayType(
        StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    )
    cols = validate_write_schema(
        _schema(
            ("topic", StringType()),
            ("key", BinaryType()),
            ("value", StringType()),
            ("partition", IntegerType()),
            ("headers", headers),
        ),
        None,
    )
    assert (cols.topic, cols.key, cols.value, cols.partition, cols.headers) == (0, 1, 2, 3, 4)
    cols = validate_write_schema(_schema(("value", BinaryType()), ("topic", StringType())), "x")
    assert cols.topic is None and cols.key is None


@pytest.mark.parametrize(
    ("fields", "topic", "message"),
    [
        (
            [("value", StringType())],
            None,
            "topic option required when no 'topic' attribute is present. Use the topic option "
            "for setting a topic.",
        ),
        ([("key", StringType())], "t", "Required attribute 'value' not found"),
        (
            [("value", LongType())],
            "t",
            "value attribute unsupported type bigint. value must be a(n) string or binary",
        ),
        (
            [("value", StringType()), ("partition", StringType())],
            "t",
            "partition attribute unsupported type string. partition must be a(n) int",
        ),
        (
            [("value", StringType()), ("topic", IntegerType())],
            None,
            "topic attribute unsupported type int. topic must be a(n) string",
        ),
    ],
)
def test_write_schema_errors(fields: list, topic: str | None, message: str) -> None:
    with pytest.raises(ValueError) as info:
        validate_write_schema(_schema(*fields), topic)
    assert str(info.value) == message
