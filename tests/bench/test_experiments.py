"""The seed experiments run end to end at a tiny size: KIP-794's through the real
``brook producer-perf-test`` behind the three-node proxy, KIP-227's with Brook's consumer
with and without fetch sessions. Their figures are for docs/experiments.md, not asserted
here; what is asserted is that the pieces they are made of measure what they claim to."""

from __future__ import annotations

import pytest

from bench import kip227_experiment, kip794_experiment, kip794_switch_rule
from bench.common import brook_process
from brook.client.admin import Admin, NewTopic

RECORDS = 1000


@pytest.mark.parametrize(("config", "rule"), [("default", "current"), ("uniform", "kip-2022")])
def test_kip794_run_parses_the_tools_output_per_node(config: str, rule: str) -> None:
    # Enough records for some 30 partition switches, so that every node gets some.
    row = kip794_experiment.run_configuration(
        1, config, RECORDS, 20.0, serial=True, switch_rule=rule
    )
    assert row["records"] == RECORDS
    assert row["switch_rule"] == rule
    assert set(row["nodes"]) == {0, 1, 2}
    sent = {n: m["outgoing-byte-total"] for n, m in row["nodes"].items()}
    # The records of 512 bytes went somewhere, and only through the three fake nodes.
    assert sum(sent.values()) > RECORDS * 512
    assert sum(row["records_per_partition"].values()) == RECORDS
    assert sum(row["produce_requests_at_proxy"].values()) > 0
    label = kip794_experiment.CONFIGURATIONS[config].label
    assert f"| 1 | {label} | Brook" in kip794_experiment.report([row])


def test_kip794_model_of_the_two_switch_rules() -> None:
    rows = {
        rule: kip794_switch_rule.run_model(rule, False, 0, 2048, 6000)
        for rule in kip794_switch_rule.RULES
    }
    for row in rows.values():
        assert sum(row["record_share"].values()) == pytest.approx(1.0)
        assert all(row["requests"].values())
    # Deferring the switch while the slow node's batch waits keeps records on it longer.
    assert rows["current"]["record_share"][1] > rows["kip-2022"]["record_share"][1]


def test_kip227_sessions_name_only_the_changed_partitions() -> None:
    with brook_process() as broker:
        assert broker.proc is not None
        with Admin({"bootstrap.servers": broker.bootstrap}) as admin:
            admin.create_topics([NewTopic("kip227-200", 200, 1)])
        cell = kip227_experiment.run_cell(
            broker.proc.pid, broker.bootstrap, 200, 2, warmup=0.3, seconds=0.7
        )
    with_sessions, without = cell["sessions"], cell["sessionless"]
    assert with_sessions["fetches"] > 0 and without["fetches"] > 0
    assert with_sessions["incremental_exchanges"] > 0
    assert without["incremental_exchanges"] == 0
    assert without["decoded"]["request_partitions"] == 200
    assert without["decoded"]["response_partitions"] == 200
    # Only the partitions receiving records come back (their high watermark moved).
    assert with_sessions["decoded"]["response_partitions"] < 20
    assert with_sessions["decoded"]["request_partitions"] < 20
    assert "| 200 | 2 | on |" in kip227_experiment.report([cell])
