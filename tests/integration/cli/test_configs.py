"""``brook configs`` against a running broker: describe and alter topic and broker configs."""

from __future__ import annotations

from cli_support import Tool
from support import BrookProcess


def test_alter_and_describe_topic_configs(
    tool: Tool, brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    code, out, _ = tool("configs", "--describe", "--topic", unique_topic, bootstrap=b)
    assert code == 0
    assert out == f"The topic '{unique_topic}' doesn't exist and doesn't have dynamic config.\n"

    assert tool("topics", "--create", "--topic", unique_topic, bootstrap=b)[0] == 0
    code, out, err = tool(
        "configs",
        "--alter",
        "--entity-type",
        "topics",
        "--entity-name",
        unique_topic,
        "--add-config",
        "cleanup.policy=[delete,compact],retention.ms=60000",
        bootstrap=b,
    )
    assert (code, out, err) == (0, f"Completed updating config for topic {unique_topic}.\n", "")
    code, out, _ = tool("configs", "--describe", "--topic", unique_topic, bootstrap=b)
    assert out.splitlines() == [
        f"Dynamic configs for topic {unique_topic} are:",
        "  cleanup.policy=delete,compact sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:"
        "cleanup.policy=delete,compact, DEFAULT_CONFIG:log.cleanup.policy=delete}",
        "  retention.ms=60000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=60000,"
        " DEFAULT_CONFIG:log.retention.ms=604800000}",
    ]

    code, _, err = tool(
        "configs",
        "--alter",
        "--topic",
        unique_topic,
        "--delete-config",
        "retention.ms",
        bootstrap=b,
    )
    assert code == 0, err
    code, out, _ = tool("configs", "--describe", "--topic", unique_topic, bootstrap=b)
    assert [line.split("=")[0].strip() for line in out.splitlines()[1:]] == ["cleanup.policy"]

    code, out, _ = tool("configs", "--describe", "--topic", unique_topic, "--all", bootstrap=b)
    lines = out.splitlines()
    assert lines[0] == f"All configs for topic {unique_topic} are:"
    assert any(line.startswith("  retention.ms=604800000 ") for line in lines)


def test_bad_alterations(tool: Tool, brook_session: BrookProcess, unique_topic: str) -> None:
    b = brook_session.bootstrap
    assert tool("topics", "--create", "--topic", unique_topic, bootstrap=b)[0] == 0
    code, _, err = tool(
        "configs",
        "--alter",
        "--topic",
        unique_topic,
        "--delete-config",
        "retention.ms",
        bootstrap=b,
    )
    assert code == 1 and "Invalid config(s): retention.ms" in err
    code, _, err = tool(
        "configs",
        "--alter",
        "--topic",
        unique_topic,
        "--add-config",
        "retention.ms=soon",
        bootstrap=b,
    )
    assert code == 1 and "INVALID_CONFIG" in err and "retention.ms" in err
    code, _, err = tool(
        "configs", "--alter", "--topic", unique_topic, "--add-config", "no-equals-sign", bootstrap=b
    )
    assert code == 1 and 'format "key=val"' in err
    code, _, err = tool("configs", "--describe", "--entity-type", "users", bootstrap=b)
    assert code == 1 and "users configs are not supported" in err
    code, _, err = tool("configs", "--alter", "--topic", unique_topic, bootstrap=b)
    assert code == 1 and "--add-config" in err


def test_broker_configs(tool: Tool, brook_session: BrookProcess) -> None:
    b = brook_session.bootstrap
    code, out, _ = tool("configs", "--describe", "--broker", "1", "--all", bootstrap=b)
    lines = out.splitlines()
    assert code == 0 and lines[0] == "All configs for broker 1 are:"
    assert any(line.startswith("  num.partitions=1 ") for line in lines)
    code, out, _ = tool("configs", "--describe", "--broker", "7", bootstrap=b)
    assert out == "The broker '7' doesn't exist and doesn't have dynamic config.\n"
