"""What the schema walk adds to reading a request: kio alone vs ``framing.decode_kio``.

    python -m bench.schema_walk [--rounds 5]

Produce (v7, v9, v13) and Fetch (v11, v12, v15) requests as librdkafka sends them on the hot
path (one topic, three partitions; Produce with a 16 KiB batch per partition), decoded from
a read-only view of the frame as the broker decodes them. Reports the time per request of
kio's reader alone, of the walk alone, and of ``decode_kio`` (walk, then kio): the fastest of
the rounds, the one least disturbed by other processes (as ``timeit`` advises), and the
median. Raw results go to ``bench/results/schema_walk.json``.
"""

from __future__ import annotations

import argparse
import statistics
import timeit
import uuid
from typing import Any

from kio.serial import entity_reader

from brook.protocol.api import request_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio
from brook.protocol.records import build_simple_batch
from brook.protocol.schema_walk import walk_message

from .common import machine, save


def _produce(version: int) -> bytes:
    batch = build_simple_batch([b"x" * 1024] * 16)
    partitions = [{"index": i, "records": batch} for i in range(3)]
    data = {
        "transactional_id": None,
        "acks": 1,
        "timeout": 30000,
        "topic_data": [{"name": "bench", "topic_id": uuid.uuid4(), "partition_data": partitions}],
    }
    return encode_kio(build(request_class(0, version), data))


def _fetch(version: int) -> bytes:
    partitions = [
        {
            "partition": i,
            "current_leader_epoch": -1,
            "fetch_offset": 1000,
            "last_fetched_epoch": -1,
            "log_start_offset": -1,
            "partition_max_bytes": 1 << 20,
        }
        for i in range(3)
    ]
    data = {
        "replica_id": -1,
        "max_wait": 500,
        "min_bytes": 1,
        "max_bytes": 50 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": "bench", "topic_id": uuid.uuid4(), "partitions": partitions}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    return encode_kio(build(request_class(1, version), data))


CASES = {
    "Produce v7": (0, 7, _produce),
    "Produce v9": (0, 9, _produce),
    "Produce v13": (0, 13, _produce),
    "Fetch v11": (1, 11, _fetch),
    "Fetch v12": (1, 12, _fetch),
    "Fetch v15": (1, 15, _fetch),
}


def _per_call_us(fn: Any, number: int) -> float:
    return timeit.timeit(fn, number=number) / number * 1e6


def _measure(cls: Any, frame: bytes, rounds: int, number: int) -> dict[str, float]:
    view = memoryview(bytearray(b"\0" * 16) + frame).toreadonly()
    reader = entity_reader(cls)
    calls = {
        "kio": lambda: reader(view, 16),
        "walk": lambda: walk_message(cls, view, 16),
        "decode_kio": lambda: decode_kio(cls, view, 16),
    }
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            samples[name].append(_per_call_us(call, number))
    best = {k: round(min(v), 2) for k, v in samples.items()}
    median = {f"{k}_median": round(statistics.median(v), 2) for k, v in samples.items()}
    return best | median


def run(rounds: int, number: int = 20000) -> dict[str, Any]:
    results = {
        name: _measure(request_class(key, version), make(version), rounds, number)
        for name, (key, version, make) in CASES.items()
    }
    return {"rounds": rounds, "calls_per_round": number, "machine": machine(), "us": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    out = run(args.rounds)
    print("| request | kio alone us | walk us | decode_kio (walk + kio) us | medians |")
    print("|---|---|---|---|---|")
    for name, r in out["us"].items():
        medians = f"{r['kio_median']} / {r['walk_median']} / {r['decode_kio_median']}"
        print(f"| {name} | {r['kio']} | {r['walk']} | {r['decode_kio']} | {medians} |")
    print(f"\nsaved to {save('schema_walk', out)}")


if __name__ == "__main__":
    main()
