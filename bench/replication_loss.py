"""The loss checker's long run: ``tests/loss_checker.py`` for many trials on one cluster.

    python -m bench.replication_loss [--trials 100] [--partitions 6] [--seed N] [--quorum-acks Q]

A 3-node ``brook cluster`` (combined nodes, short broker sessions as the CI test has them);
each trial creates a topic of RF 3 with ``min.insync.replicas=2``, runs an idempotent
confluent-kafka producer with acks=all, kills one broker with SIGKILL (a partition leader in
about 70% of trials), starts it again, and checks that every acknowledged record is read back
exactly once, in order; at the end every replica's bytes below the high watermark are
compared. ``--quorum-acks 2`` runs the same trials on topics with ``quorum.required.acks=2``
(KIP-250) instead of ``min.insync.replicas=2``. Raw results go to
``bench/results/replication_loss.json`` (``replication_loss-quorum-acks.json``).
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin

from .common import TOPIC_CONFIGS, machine, replica_divergence, run_trial, save

OVERRIDES = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    "replica.lag.time.max.ms": "5000",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=100)
    parser.add_argument("--partitions", type=int, default=6)
    parser.add_argument("--seed", type=int, default=random.randrange(1 << 30))
    parser.add_argument("--quorum-acks", type=int, default=-1, help="quorum.required.acks")
    args = parser.parse_args()
    configs = (
        {"quorum.required.acks": str(args.quorum_acks)} if args.quorum_acks > 0 else TOPIC_CONFIGS
    )
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="brook-loss-") as tmp:
        workdir = Path(tmp)
        cluster = LocalCluster.create(workdir / "cluster", nodes=3, overrides=OVERRIDES)
        with cluster:
            admin = Admin({"bootstrap.servers": cluster.bootstrap_servers})
            trials = [
                run_trial(
                    cluster,
                    admin,
                    workdir,
                    rng,
                    partitions=args.partitions,
                    configs=configs,
                    log=print,
                )
                for _ in range(args.trials)
            ]
            admin.close()
        divergent = [
            d for t in trials for d in replica_divergence(cluster, t.topic, t.high_watermarks)
        ]
    result = {
        "machine": machine(),
        "seed": args.seed,
        "topic_configs": configs,
        "trials": len(trials),
        "leaders_killed": sum(t.was_leader for t in trials),
        "acknowledged": sum(t.verdict.acknowledged for t in trials),
        "lost": sum(len(t.verdict.lost) for t in trials),
        "misplaced": sum(len(t.verdict.misplaced) for t in trials),
        "duplicates": sum(len(t.verdict.duplicates) for t in trials),
        "out_of_order_partitions": sum(len(t.verdict.out_of_order) for t in trials),
        "divergent_replicas": divergent,
    }
    save("replication_loss" + ("-quorum-acks" if args.quorum_acks > 0 else ""), result)
    print(result)
    if divergent or any(not t.verdict.ok for t in trials):
        raise SystemExit(1)


if __name__ == "__main__":
    main()
