"""``brook get-offsets`` against a running broker with records in it."""

from __future__ import annotations

import pytest
from cli_support import Tool
from confluent_kafka import Producer
from support import BrookProcess


@pytest.fixture
def loaded_topic(tool: Tool, brook_session: BrookProcess, unique_topic: str) -> str:
    """Two partitions: 3 records (timestamps 1000, 2000, 3000) in 0, 5 records in 1."""
    b = brook_session.bootstrap
    assert (
        tool("topics", "--create", "--topic", unique_topic, "--partitions", "2", bootstrap=b)[0]
        == 0
    )
    producer = Producer({"bootstrap.servers": b, "linger.ms": 0})
    for i in range(3):
        producer.produce(unique_topic, b"v", partition=0, timestamp=1000 * (i + 1))
        producer.flush(10)
    for _ in range(5):
        producer.produce(unique_topic, b"v", partition=1)
    assert producer.flush(10) == 0
    return unique_topic


def test_offsets_at_times(tool: Tool, brook_session: BrookProcess, loaded_topic: str) -> None:
    b, t = brook_session.bootstrap, loaded_topic
    assert tool("get-offsets", "--topic", t, bootstrap=b) == (0, f"{t}:0:3\n{t}:1:5\n", "")
    assert tool("get-offsets", "--topic", t, "--time", "-1", bootstrap=b)[1] == (
        f"{t}:0:3\n{t}:1:5\n"
    )
    assert tool("get-offsets", "--topic", t, "--time", "earliest", bootstrap=b)[1] == (
        f"{t}:0:0\n{t}:1:0\n"
    )
    # The first offset with a timestamp >= 2000 is 1 in partition 0; partition 1's records
    # carry the current time, so its answer is its first offset.
    assert (
        tool("get-offsets", "--topic-partitions", f"{t}:0", "--time", "2000", bootstrap=b)[1]
        == f"{t}:0:1\n"
    )
    # A timestamp after every record: no offset, so nothing is printed for the partition.
    assert (
        tool("get-offsets", "--topic", t, "--partitions", "0", "--time", "5000", bootstrap=b)[1]
        == ""
    )
    assert tool("get-offsets", "--topic-partitions", f"{t}:1-", bootstrap=b)[1] == f"{t}:1:5\n"
    assert tool("get-offsets", "--topic-partitions", f"{t}:-1", bootstrap=b)[1] == f"{t}:0:3\n"


def test_bad_input(tool: Tool, brook_session: BrookProcess, loaded_topic: str) -> None:
    b = brook_session.bootstrap
    code, _, err = tool("get-offsets", "--topic", loaded_topic + "-none", bootstrap=b)
    assert code == 1
    assert err == (
        "Error occurred: Could not match any topic-partitions with the specified filters\n"
    )
    code, _, err = tool("get-offsets", "--topic", loaded_topic, "--time", "yesterday", bootstrap=b)
    assert code == 1 and "Malformed time argument yesterday" in err
    code, _, err = tool(
        "get-offsets", "--topic", loaded_topic, "--topic-partitions", "x", bootstrap=b
    )
    assert code == 1 and "--topic-partitions cannot be used with --topic" in err
    code, _, err = tool("get-offsets", "--topic", loaded_topic, "--partitions", "a,b", bootstrap=b)
    assert code == 1 and "numeric partition ids" in err
