"""Producer throughput and latency: Brook's Producer vs confluent-kafka, kafka-python, aiokafka.

    python -m bench.producer_clients [--records 100000] [--rounds 3] [--sizes 100,1024]

One Brook broker for the whole run; every measurement runs in a fresh process against a fresh
3-partition topic, and the order of the clients alternates between rounds. Every client gets
the same settings (SETTINGS below) and sends unkeyed records. Each client is measured twice:
sending as fast as it accepts records, then flushing (throughput), and again with a
per-record callback that notes the time from send to acknowledgement, as Kafka's
producer-perf-test measures latency. Reported: medians over
rounds of records/s, MB/s and latency avg/p50/p99, and the ratio Brook / each peer.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from typing import Any

from .common import brook_broker, machine, median, save

CLIENTS = ["brook", "confluent-kafka", "kafka-python", "aiokafka"]
PARTITIONS = 3
# The same producer settings for every client, each spelled in its own API.
SETTINGS = {
    "acks": 1,
    "linger.ms": 5,
    "batch.size": 16384,
    "compression": "none",
    "idempotence": False,
    "max.in.flight": 5,
}


def create_topic(bootstrap: str, topic: str) -> None:
    from brook.client.admin import Admin, NewTopic

    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])


class Clock:
    elapsed = 0.0


class Latencies:
    """Send-to-acknowledgement times, noted by each client's per-record callback."""

    def __init__(self, expected: int) -> None:
        self.values: list[float] = []
        self.errors = 0
        self.expected = expected

    def done(self, start: float, error: object = None) -> None:
        self.values.append(time.perf_counter() - start)
        if error is not None:
            self.errors += 1


def run_brook(
    bootstrap: str,
    topic: str,
    records: int,
    payload: bytes,
    lat: Latencies | None,
    clock: Clock,
) -> None:
    from brook import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": str(SETTINGS["acks"]),
            "linger.ms": SETTINGS["linger.ms"],
            "batch.size": SETTINGS["batch.size"],
            "enable.idempotence": SETTINGS["idempotence"],
            "max.in.flight.requests.per.connection": SETTINGS["max.in.flight"],
        }
    )
    producer.partitions_for(topic)

    def callback(start: float, _meta: object, error: object) -> None:
        lat.done(start, error)  # type: ignore[union-attr]

    def body() -> None:
        send = producer.send
        perf = time.perf_counter
        partial = functools.partial
        if lat is None:
            for _ in range(records):
                send(topic, payload)
        else:
            for _ in range(records):
                send(topic, payload, on_delivery=partial(callback, perf()))
        producer.flush()

    try:
        timed(body, clock)
    finally:
        producer.close()


def run_confluent(
    bootstrap: str,
    topic: str,
    records: int,
    payload: bytes,
    lat: Latencies | None,
    clock: Clock,
) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": SETTINGS["acks"],
            "linger.ms": SETTINGS["linger.ms"],
            "batch.size": SETTINGS["batch.size"],
            "enable.idempotence": SETTINGS["idempotence"],
            "max.in.flight.requests.per.connection": SETTINGS["max.in.flight"],
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    producer.list_topics(topic, timeout=10)

    def callback(start: float, error: object, _msg: object) -> None:
        lat.done(start, error)  # type: ignore[union-attr]

    def body() -> None:
        produce = producer.produce
        poll = producer.poll
        perf = time.perf_counter
        partial = functools.partial
        for _ in range(records):
            cb = None if lat is None else partial(callback, perf())
            while True:
                try:
                    if cb is None:
                        produce(topic, payload)
                    else:
                        produce(topic, payload, on_delivery=cb)
                    break
                except BufferError:
                    poll(0.001)
            poll(0)
        producer.flush(120)

    timed(body, clock)


def run_kafka_python(
    bootstrap: str,
    topic: str,
    records: int,
    payload: bytes,
    lat: Latencies | None,
    clock: Clock,
) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks=SETTINGS["acks"],
        linger_ms=SETTINGS["linger.ms"],
        batch_size=SETTINGS["batch.size"],
        enable_idempotence=SETTINGS["idempotence"],
        max_in_flight_requests_per_connection=SETTINGS["max.in.flight"],
    )
    producer.partitions_for(topic)

    def ok(start: float, _meta: object) -> None:
        lat.done(start)  # type: ignore[union-attr]

    def failed(start: float, error: object) -> None:
        lat.done(start, error)  # type: ignore[union-attr]

    def body() -> None:
        send = producer.send
        perf = time.perf_counter
        partial = functools.partial
        if lat is None:
            for _ in range(records):
                send(topic, payload)
        else:
            for _ in range(records):
                start = perf()
                send(topic, payload).add_callback(partial(ok, start)).add_errback(
                    partial(failed, start)
                )
        producer.flush()

    try:
        timed(body, clock)
    finally:
        producer.close()


def run_aiokafka(
    bootstrap: str,
    topic: str,
    records: int,
    payload: bytes,
    lat: Latencies | None,
    clock: Clock,
) -> None:
    from aiokafka import AIOKafkaProducer

    def callback(start: float, future: asyncio.Future[Any]) -> None:
        lat.done(start, None if future.cancelled() else future.exception())  # type: ignore

    async def main() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            acks=SETTINGS["acks"],
            linger_ms=SETTINGS["linger.ms"],
            max_batch_size=SETTINGS["batch.size"],
            enable_idempotence=SETTINGS["idempotence"],
        )
        await producer.start()
        try:
            await producer.partitions_for(topic)
            start_all = time.perf_counter()
            send = producer.send
            perf = time.perf_counter
            partial = functools.partial
            if lat is None:
                for _ in range(records):
                    await send(topic, payload)
            else:
                for _ in range(records):
                    start = perf()
                    future = await send(topic, payload)
                    future.add_done_callback(partial(callback, start))
            await producer.flush()
            clock.elapsed = time.perf_counter() - start_all
        finally:
            await producer.stop()

    asyncio.run(main())


def timed(body: Callable[[], None], clock: Clock) -> None:
    start = time.perf_counter()
    body()
    clock.elapsed = time.perf_counter() - start


RUNNERS = {
    "brook": run_brook,
    "confluent-kafka": run_confluent,
    "kafka-python": run_kafka_python,
    "aiokafka": run_aiokafka,
}


def measure_one(client: str, bootstrap: str, records: int, size: int) -> dict[str, float]:
    """One client, one record size, in this process: a run without callbacks (throughput),
    then one with a callback per record (throughput and latency)."""
    payload = b"x" * size
    figures: dict[str, float] = {}
    for mode in ("plain", "callbacks"):
        topic = f"bench-{client}-{size}-{mode}-{uuid.uuid4().hex[:8]}"
        create_topic(bootstrap, topic)
        lat = Latencies(records) if mode == "callbacks" else None
        clock = Clock()
        RUNNERS[client](bootstrap, topic, records, payload, lat, clock)
        figures[f"{mode}_records_per_s"] = records / clock.elapsed
        figures[f"{mode}_mb_per_s"] = records * size / clock.elapsed / 1_000_000
        if lat is None:
            continue
        # Callbacks may trail the flush by a moment in clients that run them elsewhere.
        deadline = time.monotonic() + 10
        while len(lat.values) < records and time.monotonic() < deadline:
            time.sleep(0.01)
        if len(lat.values) != records or lat.errors:
            raise RuntimeError(
                f"{client}: {len(lat.values)} of {records} acknowledged, {lat.errors} errors"
            )
        ms = sorted(v * 1000 for v in lat.values)
        figures["latency_avg_ms"] = statistics.fmean(ms)
        figures["latency_p50_ms"] = ms[len(ms) // 2]
        figures["latency_p99_ms"] = ms[min(len(ms) - 1, int(len(ms) * 0.99))]
    return figures


def measure_in_subprocess(client: str, bootstrap: str, records: int, size: int) -> dict:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.producer_clients",
            "--one",
            client,
            "--bootstrap",
            bootstrap,
            "--records",
            str(records),
            "--sizes",
            str(size),
        ],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{client} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def report(results: dict[int, dict[str, list[dict]]], args: argparse.Namespace) -> str:
    lines = [
        f"records per measurement: {args.records} (100 B) / {max(1, args.records // 4)} "
        f"(1 KiB); rounds: {args.rounds}; settings: {SETTINGS}",
        "",
        "| record | client | records/s | MB/s | Brook / client | records/s, callback per "
        "record | Brook / client | latency avg / p50 / p99 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for size, by_client in results.items():
        med = {
            c: {k: median([r[k] for r in rounds]) for k in rounds[0]}
            for c, rounds in by_client.items()
            if rounds
        }
        brook = med.get("brook")
        for client, m in med.items():
            plain = callbacks = ""
            if brook is not None and client != "brook":
                plain = f"{brook['plain_records_per_s'] / m['plain_records_per_s']:.2f}x"
                callbacks = (
                    f"{brook['callbacks_records_per_s'] / m['callbacks_records_per_s']:.2f}x"
                )
            lines.append(
                f"| {size} B | {client} | {m['plain_records_per_s']:,.0f} | "
                f"{m['plain_mb_per_s']:.1f} | {plain} | {m['callbacks_records_per_s']:,.0f} | "
                f"{callbacks} | {m['latency_avg_ms']:.1f} / {m['latency_p50_ms']:.1f} / "
                f"{m['latency_p99_ms']:.1f} |"
            )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--sizes", default="100,1024")
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--bootstrap", help=argparse.SUPPRESS)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if args.one:
        print(json.dumps(measure_one(args.one, args.bootstrap, args.records, sizes[0])))
        return
    clients = args.clients.split(",")
    results: dict[int, dict[str, list[dict]]] = {s: {c: [] for c in clients} for s in sizes}
    with brook_broker() as bootstrap:
        for round_no in range(args.rounds):
            order = clients if round_no % 2 == 0 else list(reversed(clients))
            for size in sizes:
                records = args.records if size <= 100 else max(1, args.records // 4)
                for client in order:
                    figures = measure_in_subprocess(client, bootstrap, records, size)
                    results[size][client].append(figures)
                    print(
                        f"round {round_no + 1} {size} B {client}: "
                        f"{figures['plain_records_per_s']:,.0f} rec/s, "
                        f"{figures['callbacks_records_per_s']:,.0f} rec/s with callbacks",
                        flush=True,
                    )
    text = report(results, args)
    print(text)
    path = save(
        "producer_clients",
        {"machine": machine(), "settings": SETTINGS, "args": vars(args), "results": results},
    )
    print(f"\nmachine: {machine()}\nsaved {path}")


if __name__ == "__main__":
    main()
