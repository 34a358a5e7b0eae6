"""Every seed experiment on one command, then one table: each seed's claim, Brook's figure,
and whether it reproduces.

    python -m bench.experiments [--quick] [--only kip794,kip227,kip227-followers,kip951,kip250]
                                [--summary]

Each experiment runs as its own ``python -m bench.<module>`` (docs/experiments.md says what
each does), in the order below, and writes its raw results to bench/results/. Full runs
(the default, about 75 minutes in all) redraw the plots in docs/images/; ``--quick`` runs
every experiment at a tiny size (a few minutes in all, plots into a temporary directory):
it proves the tooling end to end, its figures prove nothing. ``--summary`` runs nothing and
tabulates the saved results of the last full (or, with ``--quick``, quick) runs.
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .common import RESULTS, ROOT, Claim


@dataclass(frozen=True)
class Experiment:
    name: str
    module: str  # bench.<module>, which has claims(saved) -> list[Claim]
    results: str  # its results file, without ".json" ("-quick" is added for quick runs)
    quick: tuple[str, ...]  # its arguments for a quick run


EXPERIMENTS = (
    Experiment(
        "kip794",
        "kip794_experiment",
        "kip794_experiment",
        ("--records", "3000", "--series", "2"),
    ),
    Experiment(
        "kip227",
        "kip227_experiment",
        "kip227_experiment",
        ("--cells", "30:3,300:3", "--seconds", "2", "--warmup", "1"),
    ),
    Experiment(
        "kip227-followers",
        "kip227_followers",
        "kip227_followers",
        ("--partitions", "6,60", "--hot", "3", "--seconds", "2", "--warmup", "1"),
    ),
    Experiment(
        "kip951",
        "kip951_experiment",
        "kip951_experiment",
        ("--runs", "1", "--seconds", "8", "--rate", "500", "--clients", "brook-off,brook-on"),
    ),
    Experiment(
        "kip250",
        "kip250_experiment",
        "kip250_experiment",
        (
            "--minutes",
            "0.4",
            "--rate",
            "200",
            "--configs",
            "acks-all,quorum-2",
            "--stall-seconds",
            "2",
            "--stall-every",
            "12",
        ),
    ),
)
BY_NAME = {e.name: e for e in EXPERIMENTS}


def results_path(experiment: Experiment, quick: bool) -> Path:
    return RESULTS / f"{experiment.results}{'-quick' if quick else ''}.json"


def run(experiment: Experiment, quick: bool, plots: Path | None) -> None:
    """One experiment in a process of its own; its output goes to ours as it comes."""
    args = list(experiment.quick) if quick else []
    args += ["--plot"] + ([str(plots / f"{experiment.name}.png")] if plots else [])
    cmd = [sys.executable, "-m", f"bench.{experiment.module}", *args]
    print(f"== {experiment.name}: {' '.join(cmd[1:])}", flush=True)
    started = time.monotonic()
    subprocess.run(cmd, cwd=ROOT, check=True)
    print(f"== {experiment.name}: done in {time.monotonic() - started:.0f} s", flush=True)


def claims_of(experiment: Experiment, quick: bool) -> list[Claim]:
    path = results_path(experiment, quick)
    if not path.exists():
        return [Claim(experiment.name, "(no saved results)", f"{path.name} is missing", None)]
    module = importlib.import_module(f"bench.{experiment.module}")
    found: list[Claim] = module.claims(json.loads(path.read_text()))
    return found or [Claim(experiment.name, "(run too small to judge)", path.name, None)]


def summary(claims: list[Claim]) -> str:
    lines = ["| seed | claim | Brook | reproduces |", "|---|---|---|---|"]
    for c in claims:
        verdict = {True: "yes", False: "**no**", None: "n/a"}[c.reproduces]
        lines.append(f"| {c.seed} | {c.claim} | {c.brook} | {verdict} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny runs: the tooling's smoke test")
    parser.add_argument(
        "--only", default=",".join(BY_NAME), help="experiments to run, of: %(default)s"
    )
    parser.add_argument("--summary", action="store_true", help="run nothing; tabulate saved runs")
    args = parser.parse_args()
    wanted = args.only.split(",")
    unknown = [n for n in wanted if n not in BY_NAME]
    if unknown:
        parser.error(f"unknown experiment(s) {', '.join(unknown)}; of: {', '.join(BY_NAME)}")
    chosen = [BY_NAME[n] for n in wanted]
    if not args.summary:
        with tempfile.TemporaryDirectory(prefix="experiment-plots-") as plots:
            for experiment in chosen:
                run(experiment, args.quick, Path(plots) if args.quick else None)
    claims = [c for e in chosen for c in claims_of(e, args.quick)]
    print()
    if args.quick:
        print("Quick runs: the figures below show the tooling works, not the claims.\n")
    print(summary(claims))


if __name__ == "__main__":
    main()
