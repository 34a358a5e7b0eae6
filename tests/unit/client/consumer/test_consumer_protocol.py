"""ConsumerProtocolSubscription / Assignment bytes: every version written and read back, older
clients' v0 read as Kafka reads it, and bad bytes refused."""

from __future__ import annotations

import struct

import pytest

from brook.client.cluster import TopicPartition
from brook.client.consumer.consumer_protocol import (
    Assignment,
    ConsumerProtocolError,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

T0, T1 = TopicPartition("t", 0), TopicPartition("u", 3)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_round_trip(version: int) -> None:
    sub = Subscription(("t", "u"), b"ud", (T0, T1), 7, "rack-a", version)
    back = decode_subscription(encode_subscription(sub))
    assert back.topics == ("t", "u") and back.user_data == b"ud" and back.version == version
    assert back.owned_partitions == ((T0, T1) if version >= 1 else ())
    assert back.generation_id == (7 if version >= 2 else -1)
    assert back.rack_id == ("rack-a" if version >= 3 else None)


def test_a_v0_subscription_as_old_clients_write_it() -> None:
    raw = struct.pack(">hi", 0, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">i", -1)
    assert decode_subscription(raw) == Subscription(("t",), None, (), -1, None, 0)


def test_assignment_round_trip_and_empty() -> None:
    a = Assignment((T0, T1), None)
    assert decode_assignment(encode_assignment(a)) == a
    assert decode_assignment(b"").partitions == ()


@pytest.mark.parametrize("raw", [b"\x00", struct.pack(">hi", 0, 1000), struct.pack(">h", -1)])
def test_bad_bytes(raw: bytes) -> None:
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(raw)
