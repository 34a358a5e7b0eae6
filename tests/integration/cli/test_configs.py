"""``brook configs`` against a running broker: describe and alter topic and broker configs."""

from __future__ import annotations

from pathlib import Path

from cli_support import Tool
from support import BrookProcess, free_port


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
    code, _, err = tool("configs", "--describe", "--entity-type", "clients", bootstrap=b)
    assert code == 1 and "clients configs are not supported" in err
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


def test_user_scram_credentials(tool: Tool, tmp_path: Path) -> None:
    """kafka-configs' user SCRAM syntax: the credential is usable for a SCRAM login at once,
    describe lists mechanisms and iterations, delete removes one mechanism."""
    from confluent_kafka.admin import AdminClient

    plain, sasl = free_port(), free_port()
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL_PLAINTEXT://127.0.0.1:{sasl}",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
    }
    with BrookProcess(tmp_path / "data", overrides, port=plain) as broker:
        b = broker.bootstrap
        code, out, err = tool(
            "configs",
            "--alter",
            "--entity-type",
            "users",
            "--entity-name",
            "alice",
            "--add-config",
            "SCRAM-SHA-256=[iterations=8192,password=alice-secret],"
            "SCRAM-SHA-512=[password=alice-512]",
            bootstrap=b,
        )
        assert (code, out, err) == (0, "Completed updating config for user alice.\n", "")
        code, out, _ = tool("configs", "--describe", "--entity-type", "users", bootstrap=b)
        assert out == (
            "SCRAM credential configs for user-principal 'alice' are "
            "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n"
        )
        login = {
            "bootstrap.servers": f"127.0.0.1:{sasl}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": "alice-secret",
        }
        assert AdminClient(login).list_topics(timeout=20).brokers
        code, out, err = tool(
            "configs", "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-256", bootstrap=b
        )
        assert code == 0, err
        code, out, _ = tool("configs", "--describe", "--user", "alice", bootstrap=b)
        assert out.endswith("are SCRAM-SHA-512=iterations=4096\n")
        code, _, err = tool(
            "configs",
            "--alter",
            "--user",
            "bob",
            "--add-config",
            "SCRAM-SHA-256=[iterations=100,password=x]",
            bootstrap=b,
        )
        assert code == 1 and "Too few iterations" in err
        code, _, err = tool(
            "configs", "--alter", "--user", "bob", "--delete-config", "SCRAM-SHA-256", bootstrap=b
        )
        assert code == 1 and "does not exist" in err
        assert "alice-secret" not in broker.log_path.read_text()
