"""Writing a DataFrame to Brook (batch and streaming), as Spark's Kafka sink: each task sends its
rows through Brook's producer and waits until every one is acknowledged. ``value`` is required;
``key``, ``topic``, ``partition`` and ``headers`` are optional, and the ``topic`` option overrides
the column. Delivery is at least once: a retried task may write its rows again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import (
    DataSourceArrowWriter,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)

from brook.client.producer import Producer

from .options import SinkOptions
from .schema import WriteColumns

__all__ = ["BrookStreamWriter", "BrookWriter", "WriteResult", "write_batches"]


@dataclass
class WriteResult(WriterCommitMessage):
    """What one task wrote: records acknowledged by the brokers."""

    records: int


def _as_bytes(value: Any) -> bytes | None:
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode()
    return bytes(value)


def _headers(value: Any) -> list[tuple[str, bytes | None]] | None:
    if not value:
        return None
    return [(h["key"], _as_bytes(h["value"])) for h in value]


def write_batches(
    batches: Iterator[pa.RecordBatch],
    client_config: Mapping[str, str],
    columns: WriteColumns,
    topic_option: str | None,
) -> int:
    """Send every row of ``batches``; returns the number of records acknowledged.

    Raises the first delivery error (after the producer has finished with the rest)."""
    errors: list[BaseException] = []

    def on_delivery(_metadata: Any, error: BaseException | None) -> None:
        if error is not None and not errors:
            errors.append(error)

    sent = 0
    # Keys and values reach the producer as bytes (Spark's ByteArraySerializer); the options
    # refuse kafka.key.serializer / kafka.value.serializer.
    with Producer(dict(client_config)) as producer:
        for batch in batches:
            n = batch.num_rows
            data = batch.columns
            values = data[columns.value].to_pylist()
            keys = data[columns.key].to_pylist() if columns.key is not None else [None] * n
            if topic_option is not None:
                topics = [topic_option] * n
            else:
                assert columns.topic is not None
                topics = data[columns.topic].to_pylist()
            partitions = (
                data[columns.partition].to_pylist() if columns.partition is not None else [None] * n
            )
            headers = (
                data[columns.headers].to_pylist() if columns.headers is not None else [None] * n
            )
            for topic, key, value, partition, header in zip(
                topics, keys, values, partitions, headers, strict=True
            ):
                if topic is None:
                    raise ValueError(
                        "Null topic found while writing a row to Brook: set the topic column "
                        "or the topic option"
                    )
                producer.send(
                    topic,
                    value=_as_bytes(value),
                    key=_as_bytes(key),
                    partition=partition,
                    headers=_headers(header),
                    on_delivery=on_delivery,
                )
                if errors:
                    raise errors[0]
            sent += n
        producer.flush()
    if errors:
        raise errors[0]
    return sent


class _ProducerWriter:
    """The write side both sinks share: each task's rows through one producer."""

    def __init__(self, options: SinkOptions, columns: WriteColumns) -> None:
        self.options = options
        self.columns = columns

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriteResult:
        return WriteResult(
            write_batches(iterator, self.options.client_config, self.columns, self.options.topic)
        )


class BrookWriter(_ProducerWriter, DataSourceArrowWriter):
    """``df.write.format("brook")``: the batch sink."""


class BrookStreamWriter(_ProducerWriter, DataSourceStreamArrowWriter):
    """``df.writeStream.format("brook")``: the streaming sink (commit and abort have nothing
    to do: rows are acknowledged by the brokers before a task reports success)."""

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:
        return None
