"""The exactly-once checker's long run: ``tests/eos_checker.py`` for many trials on one cluster.

    python -m bench.exactly_once [--trials 100] [--records 300] [--seed N] [--timeout 90]

A 3-node ``brook cluster`` (combined nodes, short broker sessions as the CI test has them);
each trial copies ``--records`` numbered records from one topic to another (3 partitions,
RF 3, ``min.insync.replicas=2``) with a consume-transform-produce pipeline process
(confluent-kafka: a read_committed group consumer, a transactional producer sending the
consumed offsets to each transaction), kills the pipeline with SIGKILL twice at random
times, and in every other trial (even seeds) kills a random broker with SIGKILL and starts
it again; every input record must then be in the output exactly once under read_committed.
Trial ``i`` uses seed ``--seed + i``, so a failing trial is reproduced alone with
``run_trial(cluster, records, seed)``. Raw results go to ``bench/results/exactly_once.json``.
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from pathlib import Path

from brook.cli.local_cluster import LocalCluster

from .common import machine, save

# eos_checker sits in tests/ beside the loss checker; bench.common puts that on the path.
from eos_checker import TrialResult, run_trial  # isort: skip

OVERRIDES = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}


def summary(seed: int, records: int, trials: list[tuple[int, TrialResult]]) -> dict[str, object]:
    """The run's figures: trials, kills of each kind, records, and every failed trial."""
    failed = [
        {
            "seed": s,
            "killed_broker": r.killed_broker,
            "duplicates": r.duplicates,
            "missing": len(r.missing),
        }
        for s, r in trials
        if r.duplicates or r.missing
    ]
    seconds = sorted(r.seconds for _, r in trials)
    return {
        "machine": machine(),
        "seed": seed,
        "records_per_trial": records,
        "trials": len(trials),
        "pipeline_kills": sum(r.pipeline_kills for _, r in trials),
        "broker_kills": sum(r.broker_kills for _, r in trials),
        "brokers_killed": {str(n): sum(r.killed_broker == n for _, r in trials) for n in (1, 2, 3)},
        "records": records * len(trials),
        "duplicated": sum(len(r.duplicates) for _, r in trials),
        "missing": sum(len(r.missing) for _, r in trials),
        "failed_trials": failed,
        "copy_seconds": {
            "median": seconds[len(seconds) // 2] if seconds else None,
            "max": seconds[-1] if seconds else None,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 20))
    parser.add_argument(
        "--timeout", type=float, default=90.0, help="seconds a trial may take to copy"
    )
    args = parser.parse_args()
    trials: list[tuple[int, TrialResult]] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="brook-eos-") as tmp:
        cluster = LocalCluster.create(Path(tmp) / "cluster", nodes=3, overrides=OVERRIDES)
        with cluster:
            for i in range(args.trials):
                seed = args.seed + i
                result = run_trial(cluster, args.records, seed, timeout=args.timeout)
                trials.append((seed, result))
                verdict = "ok" if not (result.duplicates or result.missing) else "FAILED"
                print(
                    f"trial {i + 1}/{args.trials} seed {seed}: {verdict}, broker killed "
                    f"{result.killed_broker}, {len(result.duplicates)} duplicated, "
                    f"{len(result.missing)} missing, copied in {result.seconds:.1f} s",
                    flush=True,
                )
    result = summary(args.seed, args.records, trials)
    result["wall_seconds"] = round(time.monotonic() - started)
    save("exactly_once", result)
    print(result)
    if result["failed_trials"]:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
