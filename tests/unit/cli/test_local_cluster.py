"""How ``LocalCluster`` tells a node's state from /proc: the recorded pid and start time name
one process; it is dead once gone or a zombie, paused while stopped, running otherwise. Real
processes (``sleep``) stand in for nodes."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from brook.cli.local_cluster import LocalCluster


def _start_time(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[19])


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


def _cluster_with(tmp_path: Path, pid: int, started: int | None) -> LocalCluster:
    cluster = LocalCluster.create(tmp_path / "c", nodes=1)
    node = cluster.node(1)
    node.pid, node.started = pid, started
    return cluster


def test_the_recorded_process_is_the_node_whatever_its_command_line(
    tmp_path: Path, sleeper: subprocess.Popen[bytes]
) -> None:
    # An exiting process has an empty command line while it still holds its ports and files:
    # the node is the process of that pid and start time, not a command line.
    cluster = _cluster_with(tmp_path, sleeper.pid, _start_time(sleeper.pid))
    assert cluster.state(1) == "running"
    os.kill(sleeper.pid, signal.SIGSTOP)
    try:
        assert _wait_for(cluster, "paused")
    finally:
        os.kill(sleeper.pid, signal.SIGCONT)
    assert _wait_for(cluster, "running")


def test_a_reused_pid_is_not_the_node(tmp_path: Path, sleeper: subprocess.Popen[bytes]) -> None:
    cluster = _cluster_with(tmp_path, sleeper.pid, _start_time(sleeper.pid) - 1)
    assert cluster.state(1) == "dead"


def test_an_exited_process_waiting_to_be_reaped_is_dead(tmp_path: Path) -> None:
    proc = subprocess.Popen(["true"])
    started = _start_time(proc.pid)
    cluster = _cluster_with(tmp_path, proc.pid, started)
    try:
        assert _wait_for(cluster, "dead")
        assert Path(f"/proc/{proc.pid}").exists(), "still a zombie: nobody reaped it"
    finally:
        proc.wait()


def _wait_for(cluster: LocalCluster, state: str, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cluster.state(1) == state:
            return True
        time.sleep(0.02)
    return False
