"""Consumer records to Arrow record batches in the source's schema (``to_arrow_schema`` of the
Spark schema exactly): one column at a time from the transposed records, timestamps as
timestamp[us, tz=UTC], and a null ``headers`` entry for a record without headers."""

from __future__ import annotations

import contextlib
import gc
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from brook.protocol import records as _records

from .schema import HEADERS_TYPE, arrow_schema

# The C module's column buffers are native-endian; Arrow's are little-endian.
_columns = _records._crecords if sys.byteorder == "little" else None

__all__ = ["records_to_arrow"]

_TIMESTAMP = pa.timestamp("us", tz="UTC")

# Field positions in a ConsumerRecord tuple.
_OFFSET, _TIMESTAMP_MS, _TIMESTAMP_TYPE, _KEY, _VALUE, _HEADERS = 2, 3, 4, 5, 6, 7


def _constant_string(value: str, n: int) -> pa.Array:
    encoded = value.encode()
    offsets = np.arange(n + 1, dtype=np.int32) * len(encoded)
    return pa.Array.from_buffers(
        pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * n)], null_count=0
    )


def _buffer(data: bytes | None) -> pa.Buffer | None:
    return None if data is None else pa.py_buffer(data)


def _headers(column: Sequence[Any]) -> pa.Array:
    if not any(column):
        return pa.nulls(len(column), HEADERS_TYPE)
    rows = [[{"key": k, "value": v} for k, v in h] if h else None for h in column]
    return pa.array(rows, type=HEADERS_TYPE)


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    # Transposing tens of thousands of record tuples allocates containers fast enough to run
    # the cyclic collector over every live record again and again (7x the conversion's own
    # cost, measured); none of these objects form cycles.
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def records_to_arrow(
    records: Sequence[Sequence[Any]], topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    """One Arrow batch from ConsumerRecord tuples of a single partition."""
    with _gc_paused():
        return _to_arrow(records, topic, partition, include_headers)


def _to_arrow(
    records: Sequence[Sequence[Any]], topic: str, partition: int, include_headers: bool
) -> pa.RecordBatch:
    schema = arrow_schema(include_headers)
    n = len(records)
    if n == 0:
        return pa.RecordBatch.from_pylist([], schema=schema)
    if _columns is not None and isinstance(records, list):
        key, value, offsets, timestamps_us, types = _columns.record_columns(records)
        if key is not None and value is not None:
            arrays = [
                pa.Array.from_buffers(pa.binary(), n, [_buffer(b) for b in key]),
                pa.Array.from_buffers(pa.binary(), n, [_buffer(b) for b in value]),
                _constant_string(topic, n),
                pa.array(np.full(n, partition, dtype=np.int32)),
                pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
                pa.Array.from_buffers(_TIMESTAMP, n, [None, pa.py_buffer(timestamps_us)]),
                pa.Array.from_buffers(pa.int32(), n, [None, pa.py_buffer(types)]),
            ]
            if include_headers:
                arrays.append(_headers([r[_HEADERS] for r in records]))
            return pa.RecordBatch.from_arrays(arrays, schema=schema)
    columns = list(zip(*records, strict=True))
    timestamps = np.array(columns[_TIMESTAMP_MS], dtype=np.int64) * 1000
    arrays = [
        pa.array(columns[_KEY], type=pa.binary()),
        pa.array(columns[_VALUE], type=pa.binary()),
        _constant_string(topic, n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(columns[_OFFSET], type=pa.int64()),
        pa.array(timestamps, type=_TIMESTAMP),
        pa.array(columns[_TIMESTAMP_TYPE], type=pa.int32()),
    ]
    if include_headers:
        arrays.append(_headers(columns[_HEADERS]))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
