"""The read schema of Spark's Kafka source (same columns, order and types), as a Spark StructType
and as the Arrow schema that ``read()`` batches must match exactly, and the checks of a
DataFrame written to Brook (which columns, which types), with Spark's error texts."""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

__all__ = [
    "HEADERS_TYPE",
    "WriteColumns",
    "arrow_schema",
    "read_schema",
    "validate_write_schema",
]

_SPARK_HEADERS = ArrayType(
    StructType([StructField("key", StringType()), StructField("value", BinaryType())])
)
_SPARK_BASE = [
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("timestampType", IntegerType()),
]

# What pyspark's to_arrow_schema gives for the Spark types above (timezone UTC).
HEADERS_TYPE = pa.list_(
    pa.field("element", pa.struct([("key", pa.string()), ("value", pa.binary())]))
)
_BASE_ARROW = [
    ("key", pa.binary()),
    ("value", pa.binary()),
    ("topic", pa.string()),
    ("partition", pa.int32()),
    ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestampType", pa.int32()),
]


def read_schema(include_headers: bool) -> StructType:
    """The source's schema: headers only with includeHeaders=true, as Spark's Kafka source."""
    fields = list(_SPARK_BASE)
    if include_headers:
        fields.append(StructField("headers", _SPARK_HEADERS))
    return StructType(fields)


def arrow_schema(include_headers: bool) -> pa.Schema:
    fields = list(_BASE_ARROW)
    if include_headers:
        fields.append(("headers", HEADERS_TYPE))
    return pa.schema(fields)


class WriteColumns:
    """Which columns of a written DataFrame feed the producer (None = not present)."""

    def __init__(self, names: list[str], topic_option: str | None) -> None:
        index = {name: i for i, name in enumerate(names)}
        self.value = index["value"]
        self.key = index.get("key")
        self.topic = None if topic_option is not None else index["topic"]
        self.partition = index.get("partition")
        self.headers = index.get("headers")


def validate_write_schema(schema: StructType, topic_option: str | None) -> WriteColumns:
    """Check a DataFrame written to Brook as Spark's KafkaWriter.validateQuery does: ``value``
    (string or binary) is required, ``key`` (string or binary), ``headers`` and ``partition``
    (int) are optional, ``topic`` (string) is required unless the ``topic`` option is set."""
    by_name = {f.name: f.dataType for f in schema.fields}

    def check(name: str, desired: list[DataType], missing: str | None) -> None:
        if name not in by_name:
            if missing is not None:
                raise ValueError(missing)
            return
        actual = by_name[name]
        if not any(_same_type(actual, d) for d in desired):
            wanted = " or ".join(d.simpleString() for d in desired)
            raise ValueError(
                f"{name} attribute unsupported type {actual.simpleString()}. "
                f"{name} must be a(n) {wanted}"
            )

    if topic_option is None:
        check(
            "topic",
            [StringType()],
            "topic option required when no 'topic' attribute is present. "
            "Use the topic option for setting a topic.",
        )
    check("key", [StringType(), BinaryType()], None)
    check("value", [StringType(), BinaryType()], "Required attribute 'value' not found")
    check("headers", [_SPARK_HEADERS], None)
    check("partition", [IntegerType()], None)
    return WriteColumns(schema.fieldNames(), topic_option)


def _same_type(a: DataType, b: DataType) -> bool:
    """Types equal ignoring nullability, as Spark's DataTypeUtils.sameType."""
    if isinstance(a, ArrayType) and isinstance(b, ArrayType):
        return _same_type(a.elementType, b.elementType)
    if isinstance(a, StructType) and isinstance(b, StructType):
        return len(a.fields) == len(b.fields) and all(
            fa.name == fb.name and _same_type(fa.dataType, fb.dataType)
            for fa, fb in zip(a.fields, b.fields, strict=True)
        )
    return type(a) is type(b)
