"""``brook producer-perf-test`` against a running broker: Kafka's lines, metrics and checks."""

from __future__ import annotations

import re
import time
from pathlib import Path

from cli_support import Tool
from support import BrookProcess

from brook import Consumer

FINAL = re.compile(
    r"^(\d+) records sent, [\d.]+ records/sec \([\d.]+ MB/sec\), [\d.]+ ms avg latency, "
    r"[\d.]+ ms max latency, \d+ ms 50th, \d+ ms 95th, \d+ ms 99th, \d+ ms 99\.9th\.$"
)


def test_final_line_and_metrics(tool: Tool, brook_session: BrookProcess, unique_topic: str) -> None:
    b = brook_session.bootstrap
    code, out, err = tool(
        "producer-perf-test",
        "--topic",
        unique_topic,
        "--num-records",
        "3000",
        "--record-size",
        "100",
        "--throughput",
        "-1",
        "--producer-props",
        f"bootstrap.servers={b}",
        "acks=all",
        "--print-metrics",
    )
    assert code == 0, err
    lines = out.splitlines()
    m = FINAL.match(lines[0])
    assert m is not None and m.group(1) == "3000", lines[0]
    assert lines[2].startswith("Metric Name")
    sent = [line for line in lines if "producer-metrics:record-send-total:" in line]
    assert sent and sent[0].endswith(": 3000.000")
    assert "{client-id=perf-producer-client}" in sent[0]


def test_monotonic_payloads_and_throttling(
    tool: Tool, brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    began = time.monotonic()
    code, out, err = tool(
        "producer-perf-test",
        "--topic",
        unique_topic,
        "--num-records",
        "600",
        "--payload-monotonic",
        "--throughput",
        "400",
        "--producer-props",
        f"bootstrap.servers={b}",
        "--warmup-records",
        "100",
    )
    elapsed = time.monotonic() - began
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Warmup first 100 records.")
    assert FINAL.match(lines[1]).group(1) == "600"
    assert lines[2].startswith("500 steady state records sent")
    # 600 records at 400 a second take about 1.5 s; without the throttle they take far less.
    assert elapsed > 1.0
    with Consumer({"bootstrap.servers": b, "auto.offset.reset": "earliest"}) as consumer:
        consumer.assign([(unique_topic, 0)])
        values: list[bytes] = []
        for _ in range(50):
            values += [r.value for r in consumer.poll(timeout_ms=200)]
            if len(values) >= 600:
                break
    assert sorted(int(v) for v in values) == list(range(600))


def test_transactions_commit_every_duration(
    tool: Tool, brook_session: BrookProcess, unique_topic: str
) -> None:
    """Kafka's transaction flags: every record sent in a transaction committed once it is
    --transaction-duration-ms old, so read_committed sees them all and the log holds a COMMIT
    marker per transaction."""
    b = brook_session.bootstrap
    tid = f"perf-{unique_topic}"
    code, out, err = tool(
        "producer-perf-test",
        "--topic",
        unique_topic,
        "--num-records",
        "600",
        "--payload-monotonic",
        "--throughput",
        "400",
        "--producer-props",
        f"bootstrap.servers={b}",
        "--transactional-id",
        tid,
        "--transaction-duration-ms",
        "200",
    )
    assert code == 0, err
    assert FINAL.match(out.splitlines()[0]).group(1) == "600"
    config = {
        "bootstrap.servers": b,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
    }
    with Consumer(config) as consumer:
        consumer.assign([(unique_topic, 0)])
        values: list[bytes] = []
        for _ in range(50):
            values += [r.value for r in consumer.poll(timeout_ms=200)]
            if len(values) >= 600:
                break
        (end,) = consumer.end_offsets([(unique_topic, 0)]).values()
    assert sorted(int(v) for v in values) == list(range(600))
    # about 1.5 s of sending in transactions of 200 ms: several markers after the records
    assert end - 600 >= 3
    code, out, err = tool(
        "transactions", "--bootstrap-server", b, "describe", "--transactional-id", tid
    )
    assert code == 0, err
    assert "CompleteCommit" in out


def test_latency_file_has_every_record(
    tool: Tool, brook_session: BrookProcess, unique_topic: str, tmp_path: Path
) -> None:
    b = brook_session.bootstrap
    path = tmp_path / "latency.csv"
    before = int(time.time() * 1000)
    code, out, err = tool(
        "producer-perf-test",
        "--topic",
        unique_topic,
        "--num-records",
        "500",
        "--record-size",
        "100",
        "--throughput",
        "-1",
        "--producer-props",
        f"bootstrap.servers={b}",
        "--latency-file",
        str(path),
    )
    after = int(time.time() * 1000)
    assert code == 0, err
    assert FINAL.match(out.splitlines()[0]).group(1) == "500"
    lines = path.read_text().splitlines()
    assert lines[0] == "send_ms,latency_ms,partition"
    rows = [tuple(int(x) for x in line.split(",")) for line in lines[1:]]
    assert len(rows) == 500
    for send_ms, latency_ms, partition in rows:
        assert before <= send_ms <= after
        assert 0 <= latency_ms <= after - send_ms
        assert partition == 0


def test_bad_arguments(tool: Tool, brook_session: BrookProcess) -> None:
    b = brook_session.bootstrap
    base = ["--topic", "t", "--throughput", "-1"]
    cases = [
        (
            [
                "--num-records",
                "0",
                "--record-size",
                "10",
                "--producer-props",
                f"bootstrap.servers={b}",
            ],
            "--num-records should be greater than zero",
        ),
        (
            ["--num-records", "5", "--record-size", "10"],
            "Either --producer-props or --producer.config must be specified.",
        ),
        (
            ["--num-records", "5", "--record-size", "10", "--producer-props", "broken"],
            "Invalid property: broken",
        ),
        (
            [
                "--num-records",
                "5",
                "--record-size",
                "10",
                "--producer-props",
                f"bootstrap.servers={b}",
                "--transaction-duration-ms",
                "0",
            ],
            "--transaction-duration-ms should be greater than zero",
        ),
        (
            [
                "--num-records",
                "5",
                "--record-size",
                "10",
                "--producer-props",
                f"bootstrap.servers={b}",
                "no.such.key=1",
            ],
            "no.such.key",
        ),
    ]
    for args, message in cases:
        code, _, err = tool("producer-perf-test", *base, *args)
        assert code == 1 and message in err, (args, err)
