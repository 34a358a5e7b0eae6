"""The Raft core under 10,000 random schedules of the deterministic simulation (``raft_sim``),
500 per test so a failure names its chunk, plus the seeds that once failed, kept as plain
tests. A failing schedule is reported with the one-line command that replays it with a trace.

``BROOK_RAFT_SIM_BASE`` shifts the seeds (a CI job may set it to its build number to explore
new schedules); ``bench/raft_simulation.py`` runs many more."""

from __future__ import annotations

import os

import pytest
from raft_sim import replay_command, run_seed

SCHEDULES = 10_000
CHUNK = 500
BASE = int(os.environ.get("BROOK_RAFT_SIM_BASE", "0"))

# Schedules that found a defect once; each stays a test of its own.
REGRESSION_SEEDS = [
    2869,  # a restarted node that had voted for itself, then followed the winner, ran as Candidate
    5272,  # the same, in a five-voter cluster
]


def _run(seeds: range | list[int]) -> list[str]:
    failures = []
    for seed in seeds:
        try:
            run_seed(seed)
        except Exception as exc:  # a core assertion fails a schedule as surely as an invariant
            first_line = str(exc).splitlines()[0] if str(exc) else ""
            failures.append(
                f"seed {seed}: {type(exc).__name__}: {first_line}\n    {replay_command(seed)}"
            )
    return failures


@pytest.mark.parametrize("first", range(0, SCHEDULES, CHUNK), ids=lambda f: f"{BASE + f}+{CHUNK}")
def test_random_schedules(first: int) -> None:
    failures = _run(range(BASE + first, BASE + first + CHUNK))
    assert not failures, f"{len(failures)} failing schedule(s):\n" + "\n".join(failures)


@pytest.mark.parametrize("seed", REGRESSION_SEEDS)
def test_regression_seed(seed: int) -> None:
    run_seed(seed)
