"""Consumer records to Arrow batches that Spark accepts as they are."""

from __future__ import annotations

import datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brook.spark import arrow
from brook.spark.arrow import records_to_arrow
from brook.spark.schema import arrow_schema


def _record(offset: int, key: bytes | None, value: bytes | None, headers=(), ts_type=0):
    return (
        "t",
        3,
        offset,
        1_700_000_000_123 + offset,
        ts_type,
        key,
        value,
        headers,
        0,
        -1 if key is None else len(key),
        -1 if value is None else len(value),
    )


def test_columns_and_types() -> None:
    batch = records_to_arrow(
        [_record(10, b"k", b"v"), _record(11, None, None, ts_type=1)], "t", 3, False
    )
    assert batch.schema == arrow_schema(False)
    rows = batch.to_pylist()
    assert rows[0] == {
        "key": b"k",
        "value": b"v",
        "topic": "t",
        "partition": 3,
        "offset": 10,
        "timestamp": datetime.datetime(2023, 11, 14, 22, 13, 20, 133000, tzinfo=datetime.UTC),
        "timestampType": 0,
    }
    assert rows[1]["key"] is None and rows[1]["value"] is None and rows[1]["timestampType"] == 1


def test_headers_null_when_a_record_has_none() -> None:
    batch = records_to_arrow(
        [_record(0, None, b"a", (("h", b"1"), ("n", None))), _record(1, None, b"b")],
        "t",
        3,
        True,
    )
    assert batch.schema == arrow_schema(True)
    headers = batch.column("headers").to_pylist()
    assert headers == [[{"key": "h", "value": b"1"}, {"key": "n", "value": None}], None]
    plain = records_to_arrow([_record(0, None, b"a")], "t", 3, True)
    assert plain.column("headers").to_pylist() == [None]


def test_empty() -> None:
    assert records_to_arrow([], "t", 0, True).num_rows == 0


def test_the_c_column_path_builds_the_same_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    if arrow._columns is None:
        pytest.skip("the C module is not built")
    fields = st.tuples(
        st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=40), st.integers(0, 1)
    )

    @settings(max_examples=200, deadline=None)
    @given(st.lists(fields, max_size=50), st.booleans())
    def check(rows: list, include_headers: bool) -> None:
        records = [
            _record(i, k, v, ((("h", k),) if k else ()), t) for i, (k, v, t) in enumerate(rows)
        ]
        fast = records_to_arrow(records, "t", 3, include_headers)
        with monkeypatch.context() as m:
            m.setattr(arrow, "_columns", None)
            slow = records_to_arrow(records, "t", 3, include_headers)
        fast.validate(full=True)
        assert fast.schema == slow.schema
        assert fast.to_pylist() == slow.to_pylist()

    check()
