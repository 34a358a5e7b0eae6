"""Transactional produce throughput (transactions of 100 and of 1,000 records) against
non-transactional idempotent produce, on the same 3-node ``brook cluster``, same librdkafka
client, same run.

    python -m bench.txn_produce [--records 100000] [--size 1024] [--rounds 3]

Three topics of 6 partitions, RF 3, ``min.insync.replicas=2``, led by the three brokers, one
per case. Each round produces ``--records`` records of ``--size`` bytes to each topic with
confluent-kafka (acks=all, linger 5 ms, batch 256 KiB), the cases in a rotating order:
``idempotent`` (``enable.idempotence``, one flush at the end); ``txn_100`` and ``txn_1000``
(a transactional producer, ``init_transactions`` before the clock starts, then
begin / produce / ``commit_transaction`` per transaction of 100 or 1,000 records). Records go
to the partitions in turn, so every transaction touches all six and its commit writes six
markers on three brokers. The clock runs from the first record to the last commit (or the
flush). Medians of records/s and MB/s and their ratios to idempotent produce are reported;
raw results go to ``bench/results/txn_produce.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from brook.cli.local_cluster import LocalCluster

from .common import machine, median, save

PARTITIONS = 6
CLIENT: dict[str, Any] = {
    "acks": "all",
    "linger.ms": 5,
    "batch.size": 262144,
    "compression.type": "none",
    "queue.buffering.max.kbytes": 1048576,
}
# Records per transaction of each transactional case; None is idempotent produce.
CASES: dict[str, int | None] = {"idempotent": None, "txn_100": 100, "txn_1000": 1000}


def _produce_all(producer: Producer, topic: str, records: range, payload: bytes) -> None:
    for i in records:
        while True:
            try:
                producer.produce(topic, payload, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)


def produce(bootstrap: str, topic: str, records: int, size: int, per_txn: int | None) -> float:
    """Seconds to write ``records`` records of ``size`` bytes to ``topic``, idempotently
    (``per_txn`` None) or in transactions of ``per_txn`` records, each committed."""
    config = {"bootstrap.servers": bootstrap, **CLIENT}
    if per_txn is None:
        config["enable.idempotence"] = True
    else:
        config["transactional.id"] = f"bench-{uuid.uuid4().hex}"
    errors: list[str] = []
    payload = b"x" * size

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    config["on_delivery"] = on_delivery
    producer = Producer(config)
    producer.list_topics(topic, timeout=30)  # connected before the clock starts
    if per_txn is not None:
        producer.init_transactions(60)
    start = time.perf_counter()
    if per_txn is None:
        _produce_all(producer, topic, range(records), payload)
        remaining = producer.flush(300)
    else:
        remaining = 0
        for first in range(0, records, per_txn):
            producer.begin_transaction()
            _produce_all(producer, topic, range(first, min(first + per_txn, records)), payload)
            producer.commit_transaction(120)
    elapsed = time.perf_counter() - start
    if remaining or errors:
        raise RuntimeError(f"{topic}: {remaining} undelivered, errors {errors[:3]}")
    return elapsed


def create_topics(bootstrap: str) -> dict[str, str]:
    """One RF-3 topic per case, created and replicated; case -> topic."""
    topics = {case: f"bench-{case}-{uuid.uuid4().hex[:6]}" for case in CASES}
    admin = AdminClient({"bootstrap.servers": bootstrap})
    new = [NewTopic(t, PARTITIONS, 3, config={"min.insync.replicas": "2"}) for t in topics.values()]
    for future in admin.create_topics(new).values():
        future.result(60)
    deadline = time.monotonic() + 120
    for topic in topics.values():
        while True:
            meta = admin.list_topics(topic, timeout=30).topics[topic]
            if len(meta.partitions) == PARTITIONS and all(
                p.leader >= 0 and len(p.isrs) == 3 for p in meta.partitions.values()
            ):
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic} not fully replicated")
            time.sleep(0.2)
    return topics


def measure(bootstrap: str, records: int, size: int, rounds: int) -> dict[str, Any]:
    """Every case ``rounds`` times against the cluster at ``bootstrap``; the results, with the
    topic each case wrote to."""
    topics = create_topics(bootstrap)
    seconds: dict[str, list[float]] = {case: [] for case in CASES}
    cases = list(CASES)
    for r in range(rounds):
        order = cases[r % len(cases) :] + cases[: r % len(cases)]
        for case in order:
            elapsed = produce(bootstrap, topics[case], records, size, CASES[case])
            seconds[case].append(elapsed)
            print(
                f"round {r + 1}: {case:10} {records / elapsed:9.0f} records/s "
                f"{records * size / elapsed / 1e6:7.2f} MB/s",
                flush=True,
            )
    records_s = {c: [round(records / s, 1) for s in v] for c, v in seconds.items()}
    mb_s = {c: [round(records * size / s / 1e6, 3) for s in v] for c, v in seconds.items()}
    medians = {c: round(median(v), 1) for c, v in records_s.items()}
    return {
        "records": records,
        "size": size,
        "rounds": rounds,
        "partitions": PARTITIONS,
        "client": CLIENT,
        "topics": topics,
        "seconds": seconds,
        "records_per_s": records_s,
        "mb_per_s": mb_s,
        "median_records_per_s": medians,
        "median_mb_per_s": {c: round(median(v), 3) for c, v in mb_s.items()},
        "median_ms_per_transaction": {
            c: round(median(seconds[c]) * 1000 / (records / n), 2)
            for c, n in CASES.items()
            if n is not None
        },
        "ratio_over_idempotent": {
            c: round(medians[c] / medians["idempotent"], 2) for c in CASES if c != "idempotent"
        },
    }


def run(records: int, size: int, rounds: int) -> dict[str, Any]:
    with (
        tempfile.TemporaryDirectory(prefix="brook-txn-bench-") as tmp,
        LocalCluster.create(Path(tmp) / "c", nodes=3) as cluster,
    ):
        result = measure(cluster.bootstrap_servers, records, size, rounds)
    return {"machine": machine(), **result}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    result = run(args.records, args.size, args.rounds)
    for case in CASES:
        ratio = result["ratio_over_idempotent"].get(case)
        print(
            f"median {case:10} {result['median_records_per_s'][case]:9.0f} records/s "
            f"{result['median_mb_per_s'][case]:7.2f} MB/s"
            + (f", ratio to idempotent {ratio}" if ratio is not None else "")
        )
    print(f"saved to {save('txn_produce', result)}")


if __name__ == "__main__":
    main()
