"""``brook metadata-quorum`` against running single-node brokers: the shared one (no controller
listener, so no voter endpoints) and one with a controller listener (DescribeQuorum v2 names
it)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_support import Tool
from support import BrookProcess, free_port


def test_status(tool: Tool, brook_session: BrookProcess) -> None:
    code, out, err = tool(
        "metadata-quorum", "describe", "--status", bootstrap=brook_session.bootstrap
    )
    assert (code, err) == (0, "")
    lines = out.split("\n")
    assert lines[-1] == "" and len(lines) == 9
    assert re.fullmatch(r"ClusterId:              [A-Za-z0-9_-]{22}", lines[0])
    assert lines[1] == "LeaderId:               1"
    assert re.fullmatch(r"LeaderEpoch:            [1-9][0-9]*", lines[2])
    high_watermark = re.fullmatch(r"HighWatermark:          ([0-9]+)", lines[3])
    assert high_watermark and int(high_watermark.group(1)) >= 1
    assert lines[4:8] == [
        "MaxFollowerLag:         0",
        "MaxFollowerLagTimeMs:   0",
        'CurrentVoters:          [{"id": 1}]',
        "CurrentObservers:       []",
    ]


@pytest.mark.parametrize("human", [False, True])
def test_replication(tool: Tool, brook_session: BrookProcess, human: bool) -> None:
    flags = ["--human-readable"] if human else []
    code, out, err = tool(
        "metadata-quorum", "describe", "--replication", *flags, bootstrap=brook_session.bootstrap
    )
    assert (code, err) == (0, "")
    header, row, end = out.split("\n")
    assert end == ""
    assert header.split() == [
        "NodeId",
        "DirectoryId",
        "LogEndOffset",
        "Lag",
        "LastFetchTimestamp",
        "LastCaughtUpTimestamp",
        "Status",
    ]
    cells = [c.strip() for c in row.split("\t")]
    assert cells[:4] == ["1", "A" * 22, cells[2], "0"] and int(cells[2]) >= 1
    assert cells[4] == "-1"  # the leader does not fetch from itself
    caught_up = r"[0-9]+ ms ago" if human else r"1[0-9]{12}"
    assert re.fullmatch(caught_up, cells[5])
    assert cells[6:] == ["Leader", ""]


def test_usage_errors(tool: Tool, brook_session: BrookProcess) -> None:
    b = brook_session.bootstrap
    assert tool("metadata-quorum", "describe", bootstrap=b) == (
        1,
        "",
        "One of --status or --replication must be specified with describe sub-command\n",
    )
    code, _, err = tool("metadata-quorum", "describe", "--status", "--replication", bootstrap=b)
    assert code == 1 and "Only one of --status or --replication" in err
    code, _, err = tool("metadata-quorum", bootstrap=b)
    assert code == 1 and "the following arguments are required: {describe}" in err
    code, _, err = tool("metadata-quorum", "describe", "--status")
    assert code == 1 and "the following arguments are required: --bootstrap-server" in err


def test_unreachable_broker_names_the_address(tool: Tool) -> None:
    port = free_port()
    code, out, err = tool("metadata-quorum", "describe", "--status", bootstrap=f"127.0.0.1:{port}")
    assert (code, out) == (1, "")
    assert f"127.0.0.1:{port}" in err and "Connection refused" in err


@pytest.fixture
def with_controller_listener(tmp_path: Path) -> Iterator[tuple[BrookProcess, int]]:
    port, controller_port = free_port(), free_port()
    overrides = {
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "controller.quorum.voters": f"1@127.0.0.1:{controller_port}",
    }
    with BrookProcess(tmp_path / "data", overrides, port=port) as broker:
        yield broker, controller_port


def test_status_names_the_voters_controller_endpoint(
    tool: Tool, with_controller_listener: tuple[BrookProcess, int]
) -> None:
    broker, controller_port = with_controller_listener
    code, out, err = tool("metadata-quorum", "describe", "--status", bootstrap=broker.bootstrap)
    assert (code, err) == (0, "")
    assert out.split("\n")[6] == (
        f'CurrentVoters:          [{{"id": 1, "endpoints": ["CONTROLLER://127.0.0.1:{controller_port}"]}}]'
    )
