"""``brook topics`` against a running broker: Kafka's flags, checks and output lines."""

from __future__ import annotations

import re

from cli_support import Tool
from support import BrookProcess, free_port

from brook.cli.common import kafka_uuid
from brook.client.admin import Admin

TOPIC_LINE = re.compile(
    r"^Topic: (\S+)\tTopicId: ([A-Za-z0-9_-]{22})\tPartitionCount: (\d+)"
    r"\tReplicationFactor: (\d+)\tConfigs: (.*)$"
)


def describe(tool: Tool, bootstrap: str, *args: str) -> list[str]:
    code, out, err = tool("topics", "--describe", *args, bootstrap=bootstrap)
    assert code == 0, err
    return out.splitlines()


def test_create_describe_alter_delete(
    tool: Tool, brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    code, out, err = tool(
        "topics",
        "--create",
        "--topic",
        unique_topic,
        "--partitions",
        "3",
        "--config",
        "retention.ms=60000",
        bootstrap=b,
    )
    assert (code, out, err) == (0, f"Created topic {unique_topic}.\n", "")

    lines = describe(tool, b, "--topic", unique_topic)
    m = TOPIC_LINE.match(lines[0])
    assert m is not None, lines[0]
    assert m.group(1) == unique_topic
    assert (m.group(3), m.group(4)) == ("3", "1")
    assert "retention.ms=60000" in m.group(5).split(",")
    with Admin({"bootstrap.servers": b}) as admin:
        topic_id = admin.describe_topics([unique_topic])[unique_topic].topic_id
    assert m.group(2) == kafka_uuid(topic_id)
    assert lines[1:] == [
        f"\tTopic: {unique_topic}\tPartition: {p}\tLeader: 1\tReplicas: 1\tIsr: 1"
        "\tElr: N/A\tLastKnownElr: N/A"
        for p in range(3)
    ]
    # The same topic by id.
    assert describe(tool, b, "--topic-id", m.group(2)) == lines

    code, out, err = tool(
        "topics", "--alter", "--topic", unique_topic, "--partitions", "5", bootstrap=b
    )
    assert code == 0, err
    assert "PartitionCount: 5" in describe(tool, b, "--topic", unique_topic)[0]

    code, out, err = tool("topics", "--delete", "--topic", unique_topic, bootstrap=b)
    assert code == 0, err
    code, out, _ = tool("topics", "--list", bootstrap=b)
    assert unique_topic not in out.splitlines()


def test_existing_and_missing_topics(
    tool: Tool, brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    assert tool("topics", "--create", "--topic", unique_topic, bootstrap=b)[0] == 0
    code, _, err = tool("topics", "--create", "--topic", unique_topic, bootstrap=b)
    assert code == 1 and "TOPIC_ALREADY_EXISTS" in err
    assert tool("topics", "--create", "--topic", unique_topic, "--if-not-exists", bootstrap=b) == (
        0,
        "",
        "",
    )

    missing = unique_topic + "-missing"
    for action in ("--describe", "--delete"):
        code, _, err = tool("topics", action, "--topic", missing, bootstrap=b)
        assert code == 1 and f"Topic '{missing}' does not exist as expected" in err
        assert tool("topics", action, "--topic", missing, "--if-exists", bootstrap=b)[0] == 0


def test_list_filters_by_regex_and_overrides(
    tool: Tool, brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    plain, tuned, other = f"{unique_topic}-a", f"{unique_topic}-b", f"x{unique_topic}"
    for name, extra in ((plain, []), (tuned, ["--config", "cleanup.policy=compact"]), (other, [])):
        assert tool("topics", "--create", "--topic", name, *extra, bootstrap=b)[0] == 0
    out = tool("topics", "--list", "--topic", f"{unique_topic}-.*", bootstrap=b)[1]
    assert out.splitlines() == [plain, tuned]
    # Overrides only: the topic line of the tuned topic, no partition lines.
    lines = describe(tool, b, "--topic", f"{unique_topic}-.*", "--topics-with-overrides")
    assert len(lines) == 1 and lines[0].startswith(f"Topic: {tuned}\t")
    assert lines[0].endswith("cleanup.policy=compact")


def test_bad_input(tool: Tool, brook_session: BrookProcess, unique_topic: str) -> None:
    b = brook_session.bootstrap
    code, _, err = tool("topics", "--list", "--create", bootstrap=b)
    assert code == 1 and "exactly one action" in err
    code, _, err = tool("topics", "--alter", "--topic", unique_topic, bootstrap=b)
    assert code == 1 and "partitions" in err
    code, _, err = tool(
        "topics",
        "--alter",
        "--topic",
        unique_topic,
        "--partitions",
        "2",
        "--replication-factor",
        "1",
        bootstrap=b,
    )
    assert code == 1 and "replication-factor" in err
    code, _, err = tool(
        "topics", "--create", "--topic", unique_topic, "--partitions", "0", bootstrap=b
    )
    assert code == 1 and "The partitions must be greater than 0" in err
    code, _, err = tool(
        "topics", "--create", "--topic", unique_topic, "--config", "retention.ms=soon", bootstrap=b
    )
    assert code == 1 and "INVALID_CONFIG" in err and "retention.ms" in err
    code, _, err = tool("topics", "--create", "--topic", "bad/name", bootstrap=b)
    assert code == 1 and "INVALID_TOPIC_EXCEPTION" in err
    code, _, err = tool("topics", "--list")
    assert code == 1 and "--bootstrap-server must be specified" in err


def test_unreachable_bootstrap_names_the_address(tool: Tool) -> None:
    address = f"127.0.0.1:{free_port()}"
    code, _, err = tool("topics", "--list", "--command-config", "/dev/null", bootstrap=address)
    assert code == 1
    assert address in err and "refused" in err.lower()
