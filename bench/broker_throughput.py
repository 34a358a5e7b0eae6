"""Produce and consume throughput of Brook vs Tansu, same librdkafka client, same run.

    python -m bench.broker_throughput [--records 300000] [--size 1024] [--rounds 3]

1 KiB records, 3 partitions, acks=1, with (linger 5 ms, batch 256 KiB) and with Kafka's
defaults (linger 0, batch 16 KiB). Brook writes to disk; Tansu keeps everything in memory.
Each round measures both brokers, alternating which goes first; medians are reported with
the ratio Brook / Tansu.
"""

from __future__ import annotations

import argparse
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from .common import BROKERS, machine, median, save

CONFIGS = {
    "linger5_batch256k": {"linger.ms": 5, "batch.size": 262144},
    "kafka_defaults": {"linger.ms": 0, "batch.size": 16384},
}
PARTITIONS = 3


def create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    for fut in futures.values():
        fut.result(30)


def produce(bootstrap: str, topic: str, records: int, size: int, extra: dict[str, Any]) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "compression.type": "none",
            "queue.buffering.max.kbytes": 1048576,
            **extra,
        }
    )
    payload = b"x" * size
    errors: list[str] = []

    def on_delivery(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    producer.list_topics(topic, timeout=10)  # connected before the clock starts
    start = time.perf_counter()
    for _ in range(records):
        while True:
            try:
                producer.produce(topic, payload, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
    remaining = producer.flush(120)
    elapsed = time.perf_counter() - start
    if remaining or errors:
        raise RuntimeError(f"produce failed: {remaining} undelivered, errors {errors[:3]}")
    return records * size / elapsed / 1e6


def consume(
    bootstrap: str, topic: str, records: int, size: int, extra: dict[str, Any] | None = None
) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "fetch.max.bytes": 52428800,
            **(extra or {}),
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    try:
        return timed_consume(consumer, records, size)
    finally:
        consumer.close()


def timed_consume(consumer: Consumer, records: int, size: int) -> float:
    """MB/s of ``records`` records of ``size`` bytes read by an assigned confluent-kafka
    consumer, timed from the first record (so connection set-up and librdkafka's
    prefetching before it are not counted); RuntimeError unless exactly that many arrive
    within 300 s."""
    seen = 0
    start = None
    deadline = time.perf_counter() + 300
    while seen < records and time.perf_counter() < deadline:
        for msg in consumer.consume(10000, 1.0):
            if msg.error() is None:
                if start is None:
                    start = time.perf_counter()
                seen += 1
            elif msg.error().code() != -191:  # partition EOF
                raise KafkaException(msg.error())
    if seen != records:
        raise RuntimeError(f"consumed {seen} records, expected {records}")
    return records * size / (time.perf_counter() - (start or deadline)) / 1e6


def run(records: int, size: int, rounds: int) -> dict[str, Any]:
    results: dict[str, dict[str, dict[str, list[float]]]] = {}
    for rnd in range(rounds):
        order = list(BROKERS) if rnd % 2 == 0 else list(reversed(BROKERS))
        for name in order:
            with BROKERS[name]() as bootstrap:
                for cfg_name, cfg in CONFIGS.items():
                    topic = f"bench-{cfg_name}-{uuid.uuid4().hex[:6]}"
                    create_topic(bootstrap, topic)
                    p = produce(bootstrap, topic, records, size, cfg)
                    c = consume(bootstrap, topic, records, size)
                    slot = results.setdefault(cfg_name, {}).setdefault(name, {})
                    slot.setdefault("produce", []).append(p)
                    slot.setdefault("consume", []).append(c)
                    print(
                        f"round {rnd + 1} {name:6} {cfg_name:18} produce {p:7.1f} MB/s  "
                        f"consume {c:7.1f} MB/s",
                        flush=True,
                    )
    summary: dict[str, Any] = {}
    for cfg_name, per_broker in results.items():
        row: dict[str, Any] = {}
        for op in ("produce", "consume"):
            brook = median(per_broker["brook"][op])
            tansu = median(per_broker["tansu"][op])
            row[op] = {
                "brook_mb_s": round(brook, 1),
                "tansu_mb_s": round(tansu, 1),
                "ratio": round(brook / tansu, 2),
            }
        summary[cfg_name] = row
    return {
        "records": records,
        "record_size": size,
        "partitions": PARTITIONS,
        "acks": 1,
        "rounds": rounds,
        "machine": machine(),
        "raw": results,
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    out = run(args.records, args.size, args.rounds)
    print("\n| config | op | Brook MB/s | Tansu MB/s | Brook / Tansu |")
    print("|---|---|---|---|---|")
    for cfg_name, row in out["summary"].items():
        for op, r in row.items():
            print(f"| {cfg_name} | {op} | {r['brook_mb_s']} | {r['tansu_mb_s']} | {r['ratio']} |")
    print(f"\nsaved to {save('broker_throughput', out)}")


if __name__ == "__main__":
    main()
