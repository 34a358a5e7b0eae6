"""``brook consumer-perf-test`` against a running broker: a real group, Kafka's lines."""

from __future__ import annotations

from cli_support import Tool
from support import BrookProcess

HEADER = (
    "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, "
    "rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
)


def test_result_line_and_metrics(
    tool: Tool, brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    code, _, err = tool(
        "producer-perf-test",
        "--topic",
        unique_topic,
        "--num-records",
        "2000",
        "--record-size",
        "50",
        "--throughput",
        "-1",
        "--producer-props",
        f"bootstrap.servers={b}",
    )
    assert code == 0, err
    code, out, err = tool(
        "consumer-perf-test",
        "--topic",
        unique_topic,
        "--messages",
        "2000",
        "--group",
        f"{unique_topic}-g",
        "--print-metrics",
        bootstrap=b,
    )
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == HEADER
    fields = [f.strip() for f in lines[1].split(",")]
    assert len(fields) == 10
    # 2000 records of 50 bytes (no keys); the join took some time and was counted apart.
    assert fields[4] == "2000"
    assert abs(float(fields[2]) - 2000 * 50 / 1024 / 1024) < 1e-3
    assert int(fields[6]) > 0
    consumed = [
        line
        for line in lines
        if line.startswith(
            "consumer-fetch-manager-metrics:records-consumed-total:{client-id=perf-consumer-client}"
        )
    ]
    assert consumed and consumed[0].endswith(": 2000.000")


def test_timeout_and_missing_arguments(
    tool: Tool, brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    assert tool("topics", "--create", "--topic", unique_topic, bootstrap=b)[0] == 0
    code, out, _ = tool(
        "consumer-perf-test",
        "--topic",
        unique_topic,
        "--messages",
        "10",
        "--timeout",
        "1000",
        "--hide-header",
        bootstrap=b,
    )
    assert code == 0
    assert out.startswith(
        "WARNING: Exiting before consuming the expected number of messages: "
        "timeout (1000 ms) exceeded."
    )
    code, _, err = tool("consumer-perf-test", "--topic", unique_topic, bootstrap=b)
    assert code == 1 and "messages" in err
    code, _, err = tool("consumer-perf-test", "--messages", "1", bootstrap=b)
    assert code == 1 and "topic or include" in err
