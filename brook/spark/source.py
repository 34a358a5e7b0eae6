"""``BrookDataSource``: the PySpark data source registered as format ``brook``; it validates
the options (so mistakes fail when the query is defined) and hands out the readers and writers.
"""

from __future__ import annotations

import logging

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader
from pyspark.sql.types import StructType

from .options import (
    CUSTOM_GROUP_ID_WARNING,
    check_source_options,
    parse_sink_options,
    parse_source_options,
)
from .reader import BrookBatchReader, BrookStreamReader
from .schema import read_schema, validate_write_schema
from .sink import BrookStreamWriter, BrookWriter

__all__ = ["BrookDataSource"]

log = logging.getLogger(__name__)


class BrookDataSource(DataSource):
    """Brook topics as a Spark source and sink, with the schema and options of Spark's Kafka
    source: ``spark.readStream.format("brook").option("kafka.bootstrap.servers", ...)``."""

    @classmethod
    def name(cls) -> str:
        return "brook"

    def schema(self) -> StructType:
        # Spark asks for the schema only when a read is defined (load()): check the options
        # there, as Spark's Kafka source does in sourceSchema.
        return read_schema(check_source_options(self.options))

    def reader(self, schema: StructType) -> DataSourceReader:
        options = parse_source_options(self.options, streaming=False)
        _warn_ignored_in_batch(self.options)
        return BrookBatchReader(options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        options = parse_source_options(self.options, streaming=True)
        if "kafka.group.id" in self.options:
            log.warning(CUSTOM_GROUP_ID_WARNING)
        return BrookStreamReader(options)

    def writer(self, schema: StructType, overwrite: bool) -> BrookWriter:
        if overwrite:
            raise ValueError(
                "Save mode Overwrite not allowed for Brook. Allowed save mode is Append."
            )
        options = parse_sink_options(self.options)
        return BrookWriter(options, validate_write_schema(schema, options.topic))

    def streamWriter(self, schema: StructType, overwrite: bool) -> BrookStreamWriter:
        options = parse_sink_options(self.options)
        return BrookStreamWriter(options, validate_write_schema(schema, options.topic))


def _warn_ignored_in_batch(options: dict) -> None:
    for name in ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay"):
        if name.lower() in options:
            log.warning("%s option ignored in batch queries", name)
