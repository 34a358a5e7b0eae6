"""Exactly-once with Brook's own client under kill -9 (tests/eos_checker.py): the
consume-transform-produce example ``examples/exactly_once/copy.py`` (Brook's consumer in a
group and Brook's transactional producer) copies numbered records over a 3-node ``brook
cluster`` while its process is killed with SIGKILL twice per trial and a broker is killed and
restarted in every other trial; every input record is in the output exactly once under
read_committed."""

from __future__ import annotations

import sys
from pathlib import Path

from eos_checker import run_trial
from support import local_cluster

RECORDS = 1000  # at least 50 transactions of at most 20 records
SEEDS = [0, 1, 2, 3]  # even seeds kill a broker too
# Brokers notice a dead one within a few seconds with these (as the cluster tests).
FAST = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}
COPIER = [sys.executable, "-m", "examples.exactly_once.copy"]


def test_the_example_copies_every_record_exactly_once_across_kills(tmp_path: Path) -> None:
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        results = [
            run_trial(cluster, RECORDS, seed, timeout=45.0, command=COPIER) for seed in SEEDS
        ]
    failed = [
        (seed, r) for seed, r in zip(SEEDS, results, strict=True) if r.duplicates or r.missing
    ]
    assert not failed, failed
    assert [r.pipeline_kills for r in results] == [2] * len(SEEDS)
    assert sum(r.broker_kills for r in results) == sum(1 for s in SEEDS if s % 2 == 0)
