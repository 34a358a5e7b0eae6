"""DescribeTransactions v0 responses read by hand: Kafka's -1 start time of an idle id (which
kio refuses to read), every field as kio reads it otherwise, and damaged bodies refused."""

from __future__ import annotations

from typing import Any

import pytest

from brook.protocol.api import ApiKey, response_class
from brook.protocol.build import build
from brook.protocol.describe_transactions_codec import (
    DescribedTransaction,
    read_describe_transactions_response,
)
from brook.protocol.framing import decode_kio, encode_kio

RESPONSE = response_class(ApiKey.DESCRIBE_TRANSACTIONS, 0)


def _state(tid: str, state: str, start: int, topics: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "error_code": 0,
        "transactional_id": tid,
        "transaction_state": state,
        "transaction_timeout": 60000,
        "transaction_start_time": start,
        "producer_id": 4000,
        "producer_epoch": 3,
        "topics": topics,
    }


def _body(*states: dict[str, Any]) -> bytes:
    return encode_kio(build(RESPONSE, {"throttle_time": 7, "transaction_states": list(states)}))


def test_an_idle_id_has_start_time_minus_one() -> None:
    body = _body(_state("idle", "Empty", -1, []))
    with pytest.raises(Exception, match="negative timestamp"):
        decode_kio(RESPONSE, body)  # why this reader exists
    assert read_describe_transactions_response(body) == (
        7,
        [DescribedTransaction(0, "idle", "Empty", 60000, -1, 4000, 3, ())],
    )


def test_fields_as_kio_reads_them() -> None:
    topics = [{"topic": "orders", "partitions": [0, 2]}, {"topic": "audit", "partitions": [1]}]
    body = _body(_state("app", "Ongoing", 1_700_000_000_123, topics), _state("b", "Empty", 5, []))
    _, states = read_describe_transactions_response(body)
    kio = decode_kio(RESPONSE, body).transaction_states
    assert [s.transactional_id for s in states] == [k.transactional_id for k in kio]
    app = states[0]
    assert app.transaction_start_time_ms == 1_700_000_000_123
    assert round(kio[0].transaction_start_time.timestamp() * 1000) == 1_700_000_000_123
    assert app.topics == (("orders", (0, 2)), ("audit", (1,)))
    assert (app.producer_id, app.producer_epoch, app.transaction_timeout_ms) == (4000, 3, 60000)


def test_damaged_bodies_are_refused() -> None:
    body = _body(_state("app", "Ongoing", 10, [{"topic": "orders", "partitions": [0]}]))
    for cut in (2, 10, len(body) - 1):
        with pytest.raises(ValueError):
            read_describe_transactions_response(body[:cut])
    with pytest.raises(ValueError, match="bytes left"):
        read_describe_transactions_response(body + b"\x00")
    # A count of a billion states in a few bytes.
    with pytest.raises(ValueError, match="longer than the response"):
        read_describe_transactions_response(b"\x00\x00\x00\x00" + b"\xff\xff\xff\xff\x03")
