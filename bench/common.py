"""What the benchmarks share: starting Brook and Tansu, machine facts, result tables."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

# The tests' multi-node proxy and loss checkers, re-exported for the experiments and benches.
from loss_checker import TOPIC_CONFIGS, replica_divergence, run_trial  # noqa: E402, F401
from metadata_checker import Creator, check_metadata  # noqa: E402, F401
from multinode_proxy import MultiNodeProxy  # noqa: E402, F401
from security_certs import make_tls_files  # noqa: E402, F401
from support import BrookProcess, free_port, run_tansu  # noqa: E402, F401

RESULTS = ROOT / "bench" / "results"


@dataclass(frozen=True)
class Claim:
    """One claim of a seed proposal, Brook's figure for it, and whether it reproduces
    (None when the run did not measure enough to say); ``make experiments`` tabulates them."""

    seed: str
    claim: str
    brook: str
    reproduces: bool | None


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
    return {
        "cpus": str(os.cpu_count()),
        "cpu": cpu,
        "memory": mem,
        "python": platform.python_version(),
        "os": platform.platform(),
    }


@contextlib.contextmanager
def brook_process(overrides: dict[str, str] | None = None) -> Iterator[BrookProcess]:
    """A Brook broker with its data in a temporary directory, removed afterwards."""
    tmp = Path(tempfile.mkdtemp(prefix="brook-bench-"))
    try:
        with BrookProcess(tmp / "data", overrides) as broker:
            yield broker
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def brook_broker(overrides: dict[str, str] | None = None) -> Iterator[str]:
    with brook_process(overrides) as broker:
        yield broker.bootstrap


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU time a process has used so far (Linux /proc), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # utime and stime are fields 14 and 15 of stat(5); the split starts at field 3.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextlib.contextmanager
def tansu_broker() -> Iterator[str]:
    with run_tansu() as bootstrap:
        yield bootstrap


BROKERS = {"brook": brook_broker, "tansu": tansu_broker}


def perf_test_command(
    props: dict[str, str], topic: str, rate: int, records: int, record_size: int, trace: Path
) -> list[str]:
    """``brook producer-perf-test`` with ``props`` (written beside ``trace``) and every
    record's latency into ``trace`` (``--latency-file``)."""
    config = trace.with_suffix(".properties")
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return [
        sys.executable,
        "-m",
        "brook.cli.main",
        "producer-perf-test",
        "--topic",
        topic,
        "--num-records",
        str(records),
        "--record-size",
        str(record_size),
        "--throughput",
        str(rate),
        "--producer.config",
        str(config),
        "--print-metrics",
        "--latency-file",
        str(trace),
    ]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def add_output_arguments(parser: argparse.ArgumentParser, plot: Path, what: str = "PNG") -> None:
    """An experiment's ``--plot [PNG]`` and ``--from-results JSON`` options."""
    parser.add_argument(
        "--plot",
        nargs="?",
        const=str(plot),
        default=None,
        help=f"write the {what} (default path: {plot.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--from-results",
        metavar="JSON",
        help="run nothing: print the table (and --plot) from a saved results file",
    )


def save_results(
    name: str, quick: bool, args: argparse.Namespace, results: object, load_before: tuple
) -> None:
    """Save an experiment's results (``-quick`` in the name for a shortened run) with the
    machine, the arguments and the load average before and after; say where."""
    path = save(
        name + ("-quick" if quick else ""),
        {
            "machine": machine(),
            "args": vars(args),
            "load_average": {"before": load_before, "after": os.getloadavg()},
            "results": results,
        },
    )
    print(f"\nmachine: {machine()}\nsaved {path}")


def save(name: str, payload: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2))
    return path
