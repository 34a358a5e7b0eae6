"""Varints, strings and tagged-field skipping, as Kafka's flexible versions and records use
them."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from brook.protocol.primitives import (
    compact_string,
    legacy_string,
    read_uvarint,
    read_varint,
    skip_tagged_fields,
    uvarint,
    varint,
)


@given(st.integers(0, 2**63 - 1))
def test_uvarint_round_trip(value: int) -> None:
    data = b"\xaa" + uvarint(value) + b"\xbb"
    assert read_uvarint(data, 1) == (value, len(data) - 1)


@given(st.integers(-(2**63), 2**63 - 1))
def test_zigzag_varint_round_trip(value: int) -> None:
    assert read_varint(varint(value), 0) == (value, len(varint(value)))


def test_known_encodings() -> None:
    assert uvarint(0) == b"\x00" and uvarint(127) == b"\x7f" and uvarint(128) == b"\x80\x01"
    assert varint(-1) == b"\x01" and varint(1) == b"\x02" and varint(-64) == b"\x7f"
    assert compact_string(None) == b"\x00" and compact_string("ab") == b"\x03ab"
    assert legacy_string(None) == b"\xff\xff" and legacy_string("ab") == b"\x00\x02ab"


def test_truncated_or_overlong_varints_raise() -> None:
    with pytest.raises(ValueError, match="truncated"):
        read_uvarint(b"\x80\x80", 0)
    with pytest.raises(ValueError, match="too long"):
        read_uvarint(b"\xff" * 11, 0)


def test_skip_tagged_fields() -> None:
    tagged = b"\x02" + b"\x00\x02xy" + b"\x05\x01z" + b"rest"
    assert skip_tagged_fields(tagged, 0) == len(tagged) - 4
    assert skip_tagged_fields(b"\x00", 0) == 1
    with pytest.raises(ValueError):
        skip_tagged_fields(b"\x01\x00\x09abc", 0)  # claims 9 bytes, has 3
