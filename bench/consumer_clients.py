"""Consume throughput of Brook's Consumer vs confluent-kafka, kafka-python and aiokafka, on one
Brook broker in the same run.

    python -m bench.consumer_clients [--records 200000] [--rounds 3] [--sizes 100,1024]

A topic of 3 partitions per record size is loaded once (librdkafka producer, no compression)
with half as many records again as are read; then each client, in its own process, assigns
the 3 partitions, seeks to the beginning and reads ``--records`` records (touching each
value), timed from the first record to the last (connection set-up and close are not
counted). The spare records keep every partition from running dry while the clock runs: a
partition at its end makes any client's next fetch wait out fetch.max.wait.ms at the broker,
which would time the broker's long poll instead of the client. Rounds
alternate the order of the clients; medians are reported with the ratio Brook / each peer.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
import uuid
from typing import Any

from .common import ROOT, brook_broker, machine, median, save

PARTITIONS = 3
CLIENTS = ["brook", "brook-async", "confluent-kafka", "kafka-python", "aiokafka"]
PEERS = ["confluent-kafka", "kafka-python", "aiokafka"]
TIME_LIMIT = 300.0


def load(bootstrap: str, records: int, size: int) -> str:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-consume-{size}-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for fut in admin.create_topics([NewTopic(topic, PARTITIONS, 1)]).values():
        fut.result(30)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 262144,
            "queue.buffering.max.kbytes": 1048576,
        }
    )
    payload = b"x" * size
    for i in range(records):
        while True:
            try:
                producer.produce(topic, payload, key=b"%d" % i, partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.001)
    if producer.flush(120):
        raise RuntimeError("loading the topic did not finish")
    return topic


# -- one client reading everything (runs in a child process) ------------------------------------


class _Clock:
    def __init__(self) -> None:
        self.start: float | None = None
        self.end = 0.0
        self.seen = 0
        self.value_bytes = 0

    def saw(self, values: list[bytes | None]) -> None:
        if self.start is None:
            self.start = time.perf_counter()
        self.seen += len(values)
        self.value_bytes += sum(len(v) for v in values if v is not None)
        self.end = time.perf_counter()


def _brook(bootstrap: str, topic: str, records: int, clock: _Clock) -> None:
    from brook import Consumer

    with Consumer({"bootstrap.servers": bootstrap}) as consumer:
        consumer.assign([(topic, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        deadline = time.perf_counter() + TIME_LIMIT
        while clock.seen < records and time.perf_counter() < deadline:
            batch = consumer.poll(1000)
            if batch:
                clock.saw([r.value for r in batch])


def _brook_async(bootstrap: str, topic: str, records: int, clock: _Clock) -> None:
    from brook import AsyncConsumer

    async def main() -> None:
        async with AsyncConsumer({"bootstrap.servers": bootstrap}) as consumer:
            await consumer.assign([(topic, p) for p in range(PARTITIONS)])
            await consumer.seek_to_beginning()
            deadline = time.perf_counter() + TIME_LIMIT
            while clock.seen < records and time.perf_counter() < deadline:
                batch = await consumer.poll(1000)
                if batch:
                    clock.saw([r.value for r in batch])

    asyncio.run(main())


def _confluent(bootstrap: str, topic: str, records: int, clock: _Clock) -> None:
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, TopicPartition

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(PARTITIONS)])
    deadline = time.perf_counter() + TIME_LIMIT
    while clock.seen < records and time.perf_counter() < deadline:
        msgs = consumer.consume(500, 1.0)
        values = []
        for msg in msgs:
            if msg.error() is None:
                values.append(msg.value())
            elif msg.error().code() != -191:  # partition EOF
                raise KafkaException(msg.error())
        if values:
            clock.saw(values)
    consumer.close()


def _kafka_python(bootstrap: str, topic: str, records: int, clock: _Clock) -> None:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning(*tps)
    deadline = time.perf_counter() + TIME_LIMIT
    while clock.seen < records and time.perf_counter() < deadline:
        for batch in consumer.poll(timeout_ms=1000, max_records=500).values():
            clock.saw([r.value for r in batch])
    consumer.close()


def _aiokafka(bootstrap: str, topic: str, records: int, clock: _Clock) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    async def main() -> None:
        consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False
        )
        await consumer.start()
        try:
            tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
            consumer.assign(tps)
            await consumer.seek_to_beginning(*tps)
            deadline = time.perf_counter() + TIME_LIMIT
            while clock.seen < records and time.perf_counter() < deadline:
                got = await consumer.getmany(timeout_ms=1000, max_records=500)
                for batch in got.values():
                    clock.saw([r.value for r in batch])
        finally:
            await consumer.stop()

    asyncio.run(main())


RUNNERS = {
    "brook": _brook,
    "brook-async": _brook_async,
    "confluent-kafka": _confluent,
    "kafka-python": _kafka_python,
    "aiokafka": _aiokafka,
}


def worker(client: str, bootstrap: str, topic: str, records: int) -> None:
    clock = _Clock()
    RUNNERS[client](bootstrap, topic, records, clock)
    if clock.seen < records:
        raise SystemExit(f"{client} consumed only {clock.seen} of {records}")
    # From the first record to the last: connection set-up and close are not counted.
    elapsed = clock.end - (clock.start or clock.end)
    print(json.dumps({"seen": clock.seen, "bytes": clock.value_bytes, "elapsed": elapsed}))


def measure(client: str, bootstrap: str, topic: str, records: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-m", "bench.consumer_clients", "--worker", client, bootstrap, topic,
         str(records)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=TIME_LIMIT + 60,
    )  # fmt: skip
    if out.returncode:
        raise RuntimeError(f"{client} failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# -- the run ------------------------------------------------------------------------------------


def run(records: int, sizes: list[int], rounds: int, clients: list[str]) -> dict[str, Any]:
    raw: dict[str, dict[str, list[float]]] = {}
    with brook_broker() as bootstrap:
        topics = {size: load(bootstrap, records * 3 // 2, size) for size in sizes}
        for rnd in range(rounds):
            order = clients if rnd % 2 == 0 else list(reversed(clients))
            for size in sizes:
                for client in order:
                    m = measure(client, bootstrap, topics[size], records)
                    rate = m["seen"] / m["elapsed"]
                    raw.setdefault(f"{size}", {}).setdefault(client, []).append(rate)
                    print(
                        f"round {rnd + 1} {size:5} B {client:16} {rate:10.0f} records/s "
                        f"{rate * size / 1e6:7.1f} MB/s",
                        flush=True,
                    )
    summary: dict[str, Any] = {}
    for size, per_client in raw.items():
        rows: dict[str, Any] = {}
        brook = median(per_client["brook"]) if "brook" in per_client else float("nan")
        for client, rates in per_client.items():
            rate = median(rates)
            rows[client] = {
                "records_s": round(rate),
                "mb_s": round(rate * int(size) / 1e6, 1),
                "brook_ratio": round(brook / rate, 2),
            }
        summary[size] = rows
    return {
        "records": records,
        "partitions": PARTITIONS,
        "rounds": rounds,
        "machine": machine(),
        "raw": raw,
        "summary": summary,
    }


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        client, bootstrap, topic, records = sys.argv[2:6]
        worker(client, bootstrap, topic, int(records))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200000)
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    out = run(args.records, sizes, args.rounds, args.clients.split(","))
    print("\n| record size | client | records/s | MB/s | Brook / client |")
    print("|---|---|---|---|---|")
    for size, rows in out["summary"].items():
        for client, r in rows.items():
            print(f"| {size} B | {client} | {r['records_s']} | {r['mb_s']} | {r['brook_ratio']} |")
    print(f"\nsaved to {save('consumer_clients', out)}")


if __name__ == "__main__":
    main()
