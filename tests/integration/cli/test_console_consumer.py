"""``brook console-consumer`` against a running broker: Kafka's flags and formatter output."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from cli_support import Tool
from confluent_kafka import Producer
from support import BrookProcess, env_with_repo


@pytest.fixture
def topic_with_records(tool: Tool, brook_session: BrookProcess, unique_topic: str) -> str:
    """Partition 0: a (no key), k1=v1 with header h=x, a tombstone for k2. Partition 1: z."""
    b = brook_session.bootstrap
    assert (
        tool("topics", "--create", "--topic", unique_topic, "--partitions", "2", bootstrap=b)[0]
        == 0
    )
    producer = Producer({"bootstrap.servers": b, "linger.ms": 0})
    producer.produce(unique_topic, b"a", partition=0, timestamp=1000)
    producer.produce(
        unique_topic, b"v1", key=b"k1", partition=0, timestamp=2000, headers=[("h", b"x")]
    )
    producer.produce(unique_topic, None, key=b"k2", partition=0, timestamp=3000)
    producer.produce(unique_topic, b"z", partition=1, timestamp=4000)
    assert producer.flush(10) == 0
    return unique_topic


def test_default_formatter_fields(
    tool: Tool, brook_session: BrookProcess, topic_with_records: str
) -> None:
    b, t = brook_session.bootstrap, topic_with_records
    props = [
        "--property",
        "print.key=true",
        "--property",
        "print.timestamp=true",
        "--property",
        "print.headers=true",
        "--property",
        "print.offset=true",
        "--property",
        "print.partition=true",
    ]
    code, out, err = tool(
        "console-consumer",
        "--topic",
        t,
        "--partition",
        "0",
        "--from-beginning",
        "--max-messages",
        "3",
        *props,
        bootstrap=b,
    )
    assert code == 0
    assert out.splitlines() == [
        "CreateTime:1000\tPartition:0\tOffset:0\tNO_HEADERS\tnull\ta",
        "CreateTime:2000\tPartition:0\tOffset:1\th:x\tk1\tv1",
        "CreateTime:3000\tPartition:0\tOffset:2\tNO_HEADERS\tk2\tnull",
    ]
    assert err.endswith("Processed a total of 3 messages\n")
    # Separators and the null literal are configurable.
    code, out, _ = tool(
        "console-consumer",
        "--topic",
        t,
        "--partition",
        "0",
        "--offset",
        "1",
        "--max-messages",
        "2",
        "--property",
        "print.key=true",
        "--property",
        "key.separator=|",
        "--property",
        "null.literal=<none>",
        bootstrap=b,
    )
    assert out.splitlines() == ["k1|v1", "k2|<none>"]


def test_reads_every_partition_and_stops_on_timeout(
    tool: Tool, brook_session: BrookProcess, topic_with_records: str
) -> None:
    b, t = brook_session.bootstrap, topic_with_records
    code, out, err = tool(
        "console-consumer", "--topic", t, "--from-beginning", "--timeout-ms", "1500", bootstrap=b
    )
    assert code == 0
    assert sorted(out.splitlines()) == ["a", "null", "v1", "z"]
    assert err.endswith("Processed a total of 4 messages\n")
    # Without --from-beginning it starts at the end: nothing old is printed.
    code, out, err = tool(
        "console-consumer", "--include", f"{t}.*", "--timeout-ms", "1000", bootstrap=b
    )
    assert (code, out) == (0, "")
    assert err.endswith("Processed a total of 0 messages\n")


def test_bad_arguments(tool: Tool, brook_session: BrookProcess) -> None:
    b = brook_session.bootstrap
    cases = [
        (["--topic", "t", "--include", "t"], "Exactly one of include/topic is required."),
        (["--include", "t", "--partition", "0"], "The topic is required when partition"),
        (["--topic", "t", "--offset", "3"], "The partition is required when offset"),
        (["--topic", "t", "--partition", "0", "--offset", "x"], "The provided offset value"),
        (
            ["--topic", "t", "--partition", "0", "--offset", "1", "--from-beginning"],
            "from-beginning and offset cannot be specified together",
        ),
        (
            ["--topic", "t", "--partition", "0", "--group", "g"],
            "group and partition cannot be specified together",
        ),
    ]
    for args, message in cases:
        code, _, err = tool("console-consumer", *args, bootstrap=b)
        assert code == 1 and message in err, (args, err)
    code, _, err = tool(
        "console-consumer",
        "--topic",
        "t",
        "--group",
        "a",
        "--consumer-property",
        "group.id=b",
        bootstrap=b,
    )
    assert code == 1 and "Group id from --group (a) and consumer properties (b) conflict" in err
    code, _, err = tool(
        "console-consumer", "--topic", "t", "--consumer-property", "no.such.key=1", bootstrap=b
    )
    assert code == 1 and "no.such.key" in err


def test_ctrl_c_prints_the_count(brook_session: BrookProcess, topic_with_records: str) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "brook.cli.main",
            "console-consumer",
            "--bootstrap-server",
            brook_session.bootstrap,
            "--topic",
            topic_with_records,
            "--from-beginning",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_with_repo(),
    )
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]  # blocks until all four arrived
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert sorted(line.strip() for line in lines) == [b"a", b"null", b"v1", b"z"]
    assert proc.returncode == 0
    assert b"Processed a total of 4 messages" in err


def test_group_membership_commits_offsets(
    tool: Tool, brook_session: BrookProcess, topic_with_records: str
) -> None:
    b, t = brook_session.bootstrap, topic_with_records
    group = f"{t}-console"
    code, out, _ = tool(
        "console-consumer",
        "--topic",
        t,
        "--group",
        group,
        "--from-beginning",
        "--max-messages",
        "4",
        bootstrap=b,
    )
    assert code == 0 and sorted(out.splitlines()) == ["a", "null", "v1", "z"]
    # The group's offsets were committed: a second run of the same group has nothing to read.
    code, out, err = tool(
        "console-consumer",
        "--topic",
        t,
        "--group",
        group,
        "--from-beginning",
        "--timeout-ms",
        "4000",
        bootstrap=b,
    )
    assert (code, out) == (0, "")
    assert err.endswith("Processed a total of 0 messages\n")
