"""Long runs of the Raft simulation: many more schedules than the test suite's 10,000.

    python -m bench.raft_simulation [--schedules 200000] [--start 0] [--workers 2]

Seeds ``start .. start + schedules`` are run in worker processes (each schedule is one seed of
``tests/sim/raft_sim.py``); every failing seed is printed with the command that replays it.
Reports schedules per CPU-second and what the schedules went through (steps, simulated time);
raw figures go to ``bench/results/raft_simulation.json``.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from pathlib import Path

from .common import machine, save

SIM_DIR = Path(__file__).resolve().parent.parent / "tests" / "sim"
CHUNK = 1000


def _run_chunk(bounds: tuple[int, int]) -> tuple[int, int, int, float, list[str]]:
    """(schedules, steps, simulated ms, CPU seconds, failures) for seeds in [first, last)."""
    sys.path.insert(0, str(SIM_DIR))
    from raft_sim import Simulation, replay_command

    first, last = bounds
    steps = simulated = 0
    failures = []
    started = time.process_time()
    for seed in range(first, last):
        sim = Simulation(seed)
        try:
            sim.run()
        except Exception as exc:
            line = str(exc).splitlines()[0] if str(exc) else ""
            failures.append(
                f"seed {seed}: {type(exc).__name__}: {line}\n    {replay_command(seed)}"
            )
        steps += sim.steps
        simulated += sim.now
    return last - first, steps, simulated, time.process_time() - started, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schedules", type=int, default=200_000)
    parser.add_argument("--start", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)
    chunks = [
        (first, min(first + CHUNK, args.start + args.schedules))
        for first in range(args.start, args.start + args.schedules, CHUNK)
    ]
    wall = time.monotonic()
    done = steps = simulated = 0
    cpu = 0.0
    failures: list[str] = []
    with multiprocessing.get_context("fork").Pool(args.workers) as pool:
        for count, chunk_steps, chunk_ms, chunk_cpu, chunk_failures in pool.imap_unordered(
            _run_chunk, chunks
        ):
            done += count
            steps += chunk_steps
            simulated += chunk_ms
            cpu += chunk_cpu
            failures.extend(chunk_failures)
            for failure in chunk_failures:
                print(failure, flush=True)
            if done % 20_000 < CHUNK:
                print(f"{done} schedules, {len(failures)} failing", flush=True)
    wall = time.monotonic() - wall
    result = {
        "machine": machine(),
        "schedules": done,
        "first_seed": args.start,
        "failures": failures,
        "cpu_seconds": round(cpu, 1),
        "wall_seconds": round(wall, 1),
        "schedules_per_cpu_second": round(done / cpu, 1) if cpu else None,
        "mean_steps": round(steps / done, 1) if done else 0,
        "mean_simulated_seconds": round(simulated / done / 1000, 2) if done else 0,
    }
    path = save("raft_simulation", result)
    print(
        f"{done} schedules from seed {args.start}: {len(failures)} failing; "
        f"{result['schedules_per_cpu_second']} schedules per CPU second "
        f"({result['cpu_seconds']} s CPU, {result['wall_seconds']} s wall); "
        f"mean {result['mean_steps']} steps, {result['mean_simulated_seconds']} s simulated "
        f"-> {path}"
    )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
