"""kill -9 brokers of a 3-node ``brook cluster`` while an idempotent producer writes with
acks=all to RF 3, ``min.insync.replicas=2`` or (KIP-250) ``quorum.required.acks=2``: every
acknowledged record is read back exactly once, in order, and every replica holds the same
bytes below the high watermark (``tests/loss_checker.py``; ``bench/replication_loss.py``
runs 100 trials, ``--quorum-acks 2`` for the second). Under quorum acks a record is
acknowledged once two replicas have it, so an in-sync follower may lack it when the leader
dies: the most-complete-log election must keep it all the same."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest
from loss_checker import TOPIC_CONFIGS, check, replica_divergence, run_trial
from support import local_cluster

from brook.client.admin import Admin

TRIALS = 10
# Short broker sessions: a killed broker is fenced, and its leaderships move, in seconds.
OVERRIDES = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
}


@pytest.mark.parametrize(
    "configs",
    [TOPIC_CONFIGS, {"quorum.required.acks": "2"}],
    ids=["min-insync-2", "quorum-acks-2"],
)
def test_no_acknowledged_record_is_lost_when_brokers_are_killed(
    tmp_path: Path, configs: dict[str, str]
) -> None:
    seed = int(os.environ.get("BROOK_LOSS_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    lines: list[str] = []
    with local_cluster(tmp_path / "cluster", nodes=3, overrides=OVERRIDES) as cluster:
        admin = Admin({"bootstrap.servers": cluster.bootstrap_servers})
        try:
            trials = [
                run_trial(
                    cluster,
                    admin,
                    tmp_path,
                    rng,
                    warmup_records=300,
                    configs=configs,
                    log=lines.append,
                )
                for _ in range(TRIALS)
            ]
        finally:
            admin.close()
    report = f"seed {seed} (BROOK_LOSS_SEED replays it):\n" + "\n".join(lines)
    assert all(t.verdict.ok for t in trials), report
    assert any(t.was_leader for t in trials), report  # leaders were killed, not only followers
    divergent = [d for t in trials for d in replica_divergence(cluster, t.topic, t.high_watermarks)]
    assert not divergent, report + "\n" + "\n".join(divergent)


def test_the_checker_sees_every_kind_of_failure() -> None:
    acked = [(0, 0, 0), (1, 0, 1), (0, 1, 2), (1, 1, 3), (0, 2, 4)]
    assert check(acked, {0: [(0, 0), (1, 2), (2, 4)], 1: [(0, 1), (1, 3)]}).ok
    lost = check(acked, {0: [(0, 0), (1, 2)], 1: [(0, 1), (1, 3)]})
    assert lost.lost == [(0, 4)]
    duplicated = check(acked, {0: [(0, 0), (1, 2), (2, 4), (3, 4)], 1: [(0, 1), (1, 3)]})
    assert duplicated.duplicates == [4]
    misplaced = check(acked, {0: [(0, 0), (1, 2), (5, 4)], 1: [(0, 1), (1, 3)]})
    assert misplaced.misplaced == [(4, 2, 5)]
    reordered = check([(0, 1, 0), (0, 0, 2)], {0: [(0, 2), (1, 0)]})
    assert reordered.out_of_order == [0]
    assert not (lost.ok or duplicated.ok or misplaced.ok or reordered.ok)
