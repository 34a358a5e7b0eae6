"""Exactly-once under kill -9 (tests/eos_checker.py): a consume-transform-produce pipeline
with confluent-kafka's transactional producer over a 3-node ``brook cluster``, its process
killed with SIGKILL twice per trial and, in every other trial, a broker too; every input
record is in the output exactly once under read_committed, in each of 10 trials (two runs of
five, one cluster each, to stay within the per-test time limit)."""

from __future__ import annotations

from pathlib import Path

import pytest
from eos_checker import run_trial
from support import local_cluster

TRIALS_PER_RUN = 5
RECORDS = 300
# Brokers notice a dead one within a few seconds with these (as the cluster tests).
FAST = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "500"}


@pytest.mark.parametrize("first_seed", [0, TRIALS_PER_RUN])
def test_every_record_exactly_once_across_kills(tmp_path: Path, first_seed: int) -> None:
    seeds = range(first_seed, first_seed + TRIALS_PER_RUN)
    with local_cluster(tmp_path / "c", nodes=3, overrides=FAST) as cluster:
        results = [run_trial(cluster, RECORDS, seed, timeout=45.0) for seed in seeds]
    failed = [
        (seed, r) for seed, r in zip(seeds, results, strict=True) if r.duplicates or r.missing
    ]
    assert not failed, failed
    assert [r.pipeline_kills for r in results] == [2] * TRIALS_PER_RUN
    assert sum(r.broker_kills for r in results) == sum(1 for s in seeds if s % 2 == 0)
