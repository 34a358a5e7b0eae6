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

import os
import sys
from typing import Any

from .source import BrookDataSource

__all__ = ["BrookDataSource", "local_session", "register"]


def register(spark: Any) -> None:
    """Register the ``brook`` format on a SparkSession."""
    spark.dataSource.register(BrookDataSource)


def local_session(app_name: str = "brook", cores: int = 2, **conf: str) -> Any:
    """A SparkSession on this machine (``local[cores]``) with the brook format registered.

    Spark's Python workers run this interpreter (which has Brook installed: the data source is
    pickled by reference) and everything listens on 127.0.0.1; ``conf`` adds Spark settings.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(cores),
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        **conf,
    }
    builder = SparkSession.builder.master(f"local[{cores}]").appName(app_name)
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    return spark
