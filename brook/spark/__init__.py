"""Brook as a Spark source and sink: a PySpark (4.x) Python data source, format ``brook``, with
the schema and options of Spark's Kafka source, so a pipeline written for ``format("kafka")``
ports by changing the format name. No JVM connector jar is involved.

    import brook.spark
    brook.spark.register(spark)
    df = (spark.readStream.format("brook")
          .option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "events").load())

Modules: ``source`` (the DataSource), ``options`` (option parsing and validation), ``offsets``
(Spark's offset JSON), ``discovery`` (driver-side offsets through the admin client),
``planning`` (admission control and task ranges), ``reader`` (batch and stream readers),
``fetch`` (the executor-side read), ``arrow`` (records to Arrow), ``schema``, ``sink``.
"""

from __future__ import annotations

from typing import Any

from .source import BrookDataSource

__all__ = ["BrookDataSource", "register"]


def register(spark: Any) -> None:
    """Register the ``brook`` format on a SparkSession."""
    spark.dataSource.register(BrookDataSource)
