"""What the benchmarks share: starting Brook and Tansu, machine facts, result tables."""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support import BrookProcess, run_tansu  # noqa: E402

RESULTS = ROOT / "bench" / "results"


def machine() -> dict[str, str]:
    cpu = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = "unknown"
    with contextlib.suppress(OSError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem = f"{int(line.split()[1]) // 1024 // 1024} GiB"
    return {"cpus": str(os.cpu_count()), "cpu": cpu, "memory": mem,
            "python": platform.python_version(), "os": platform.platform()}


@contextlib.contextmanager
def brook_broker(overrides: dict[str, str] | None = None) -> Iterator[str]:
    tmp = Path(tempfile.mkdtemp(prefix="brook-bench-"))
    try:
        with BrookProcess(tmp / "data", overrides) as broker:
            yield broker.bootstrap
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def tansu_broker() -> Iterator[str]:
    with run_tansu() as bootstrap:
        yield bootstrap


BROKERS = {"brook": brook_broker, "tansu": tansu_broker}


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def save(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path
