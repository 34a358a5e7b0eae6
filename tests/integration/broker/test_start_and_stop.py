"""A node that cannot start says why in one line and exits 1; a node signalled while it is
still starting (here: waiting for controllers that never come) stops at once."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

from support import env_with_repo, free_port, python_exe

from brook.log.meta_properties import format_storage, new_uuid


def _server(tmp_path: Path, **props: str) -> subprocess.Popen[bytes]:
    cmd = [python_exe(), "-m", "brook.cli.main", "server"]
    for key, value in props.items():
        cmd += ["--override", f"{key.replace('_', '.')}={value}"]
    log = open(tmp_path / "server.log", "wb")  # noqa: SIM115 - handed to the child
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env_with_repo())


def _broker_of_a_missing_quorum(tmp_path: Path, data: Path) -> dict[str, str]:
    return {
        "node_id": "4",
        "process_roles": "broker",
        "controller_quorum_voters": f"1@127.0.0.1:{free_port()}",
        "listeners": f"PLAINTEXT://127.0.0.1:{free_port()}",
        "log_dirs": str(data),
    }


def test_unformatted_storage_of_a_cluster_node_is_refused(tmp_path: Path) -> None:
    proc = _server(tmp_path, **_broker_of_a_missing_quorum(tmp_path, tmp_path / "data"))
    assert proc.wait(60) == 1
    log = (tmp_path / "server.log").read_text()
    assert "cannot start" in log and "brook storage format" in log and "Traceback" not in log


def test_storage_of_another_cluster_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    stored = new_uuid()
    format_storage([data], stored, 4, ignore_formatted=False)
    other = new_uuid()
    props = {**_broker_of_a_missing_quorum(tmp_path, data), "cluster_id": other}
    proc = _server(tmp_path, **props)
    assert proc.wait(60) == 1
    log = (tmp_path / "server.log").read_text()
    assert stored in log and other in log and "Traceback" not in log


def test_sigterm_while_waiting_for_the_controllers_stops_at_once(tmp_path: Path) -> None:
    data = tmp_path / "data"
    format_storage([data], new_uuid(), 4, ignore_formatted=False)
    proc = _server(tmp_path, **_broker_of_a_missing_quorum(tmp_path, data))
    deadline = time.monotonic() + 60
    while b"started" not in (tmp_path / "server.log").read_bytes():
        # the node is up to the point of asking for its controllers
        if b"loaded" in (tmp_path / "server.log").read_bytes() or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(30) == 0
    log = (tmp_path / "server.log").read_text()
    assert "stopping before the node finished starting" in log and "Traceback" not in log
