"""Produce throughput with replication: RF 3 with acks=all against RF 1 with acks=1, on the
same 3-node ``brook cluster``, same librdkafka client, same run.

    python -m bench.replicated_throughput [--records 200000] [--size 1024] [--rounds 3]

Two topics of 6 partitions spread over the three brokers: one RF 1, one RF 3 with
``min.insync.replicas=2``. Each round produces ``--records`` records of ``--size`` bytes to
each (confluent-kafka, linger 5 ms, batch 256 KiB; acks=1 to the first, acks=all to the
second), alternating which goes first. With RF 3 every record is written three times and an
acks=all answer waits for two follower fetch round trips; the three brokers share the
machine's cores with the client. Medians and their ratio (RF 3 / RF 1) are reported; raw
results go to ``bench/results/replicated_throughput.json``.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from brook.cli.local_cluster import LocalCluster

from .broker_throughput import produce
from .common import machine, median, save

PARTITIONS = 6
CLIENT = {"linger.ms": 5, "batch.size": 262144}


def run(records: int, size: int, rounds: int) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="brook-repl-bench-") as tmp,
        LocalCluster.create(Path(tmp) / "c", nodes=3) as cluster,
    ):
        bootstrap = cluster.bootstrap_servers
        admin = AdminClient({"bootstrap.servers": bootstrap})
        cases = {
            "rf1_acks1": (NewTopic("rf1", PARTITIONS, 1), {"acks": 1}),
            "rf3_acks_all": (
                NewTopic("rf3", PARTITIONS, 3, config={"min.insync.replicas": "2"}),
                {"acks": "all"},
            ),
        }
        for topic, _ in cases.values():
            admin.create_topics([topic])[topic.topic].result(60)
        results: dict[str, list[float]] = {name: [] for name in cases}
        for r in range(rounds):
            order = list(cases) if r % 2 == 0 else list(reversed(cases))
            for name in order:
                topic, acks = cases[name]
                mb_s = produce(bootstrap, topic.topic, records, size, {**CLIENT, **acks})
                results[name].append(mb_s)
                print(f"round {r + 1}: {name:13} {mb_s:7.1f} MB/s", flush=True)
    medians = {name: round(median(v), 2) for name, v in results.items()}
    return {
        "machine": machine(),
        "records": records,
        "size": size,
        "rounds": rounds,
        "mb_per_s": results,
        "median_mb_per_s": medians,
        "ratio_rf3_acks_all_over_rf1_acks1": round(
            medians["rf3_acks_all"] / medians["rf1_acks1"], 2
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result = run(args.records, args.size, args.rounds)
    print(
        f"median: RF 1 acks=1 {result['median_mb_per_s']['rf1_acks1']} MB/s, RF 3 acks=all "
        f"{result['median_mb_per_s']['rf3_acks_all']} MB/s, ratio "
        f"{result['ratio_rf3_acks_all_over_rf1_acks1']}"
    )
    print(f"saved to {save('replicated_throughput', result)}")


if __name__ == "__main__":
    main()
