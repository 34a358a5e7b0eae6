"""`make experiments --quick` end to end for KIP-227's follower case (the other experiments'
pieces are run at a tiny size in test_experiments.py): the runner starts the experiment in a
process of its own on real 3-node ``brook cluster``s, whose followers fetch through the
counting proxy, and tabulates the seed's claim from the saved results."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench import experiments, kip227_followers
from bench.common import Claim

ROOT = Path(__file__).resolve().parents[2]


def test_the_quick_run_measures_followers_fetches_and_tabulates_the_claim() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.experiments", "--quick", "--only", "kip227-followers"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    experiment = experiments.BY_NAME["kip227-followers"]
    saved = json.loads(experiments.results_path(experiment, quick=True).read_text())
    rows = {(r["mode"], r["partitions"]): r for r in saved["results"]}
    assert set(rows) == {(m, n) for m in kip227_followers.MODES for n in (6, 60)}
    for n in (6, 60):
        on, off = rows["sessions", n], rows["sessionless", n]
        assert on["fetches"] > 0 and off["fetches"] > 0
        # Every follower fetch to a leader that keeps no session names all the partitions
        # it leads (a third: RF 3 over 3 brokers) and is never incremental ...
        assert off["incremental_exchanges"] == 0
        assert off["decoded"]["request_partitions"] == n / 3
        # ... while with sessions, after the first full fetch, only what changed is named.
        assert on["incremental_exchanges"] == on["decoded_exchanges"] > 0
        assert on["decoded"]["request_partitions"] < 3
    table = done.stdout.split("| seed | claim | Brook | reproduces |", 1)[1]
    assert table.count("| KIP-227 | followers:") == 2


def test_the_summary_says_what_reproduces_and_what_could_not_be_judged() -> None:
    table = experiments.summary(
        [
            Claim("KIP-1", "a claim", "a figure", True),
            Claim("KIP-2", "another", "figure", False),
            Claim("KIP-3", "(run too small to judge)", "x.json", None),
        ]
    )
    assert table.splitlines()[2:] == [
        "| KIP-1 | a claim | a figure | yes |",
        "| KIP-2 | another | figure | **no** |",
        "| KIP-3 | (run too small to judge) | x.json | n/a |",
    ]
