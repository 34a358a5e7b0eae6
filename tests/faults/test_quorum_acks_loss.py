"""The loss checker on KIP-250 topics: kill -9 brokers of a 3-node ``brook cluster`` (most
often a partition leader) while an idempotent producer writes with acks=all to RF 3 with
``quorum.required.acks=2``. A record is acknowledged once two replicas have it, so an in-sync
follower may lack it when the leader dies; the most-complete-log election must still keep
every acknowledged record: each is read back exactly once, in order, and every replica holds
the same bytes below the high watermark (``bench/replication_loss.py --quorum-acks 2`` runs
100 trials)."""

from __future__ import annotations

import os
import random
from pathlib import Path

from loss_checker import replica_divergence, run_trial
from support import local_cluster

from brook.client.admin import Admin

TRIALS = 10
CONFIGS = {"quorum.required.acks": "2"}
OVERRIDES = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
}


def test_no_acknowledged_record_is_lost_under_quorum_acks(tmp_path: Path) -> None:
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
                    configs=CONFIGS,
                    log=lines.append,
                )
                for _ in range(TRIALS)
            ]
        finally:
            admin.close()
    report = f"seed {seed} (BROOK_LOSS_SEED replays it):\n" + "\n".join(lines)
    assert all(t.verdict.ok for t in trials), report
    assert any(t.was_leader for t in trials), report
    divergent = [d for t in trials for d in replica_divergence(cluster, t.topic, t.high_watermarks)]
    assert not divergent, report + "\n" + "\n".join(divergent)
