"""The broker's CPU time per Produce and per Fetch request, for the same fixed requests.

    python -m bench.request_cpu [--requests 12000] [--rounds 4]

Throughput benchmarks on a shared machine vary by more than a few percent between runs; CPU
time spent by the broker process on a fixed sequence of requests varies much less. One
``brook server`` per round; one connection sends ``--requests`` identical Produce v9
requests (one topic, three partitions, a 16 KiB batch each, acks=1), eight in flight, then as
many Fetch v12 requests (the same three partitions from offset 0, 64 KiB each), after 50 of
each as warm-up. Reports the broker's user + system CPU time per request (median of the
rounds; /proc clock ticks, 10 ms, so at least a second per measurement) and the wall time.
Run it on two commits to compare them. Raw results go to ``bench/results/request_cpu.json``.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import struct
import time
from typing import Any

from brook.protocol.api import request_class
from brook.protocol.build import build
from brook.protocol.framing import encode_kio, encode_request
from brook.protocol.records import build_simple_batch

from .common import brook_process, machine, process_cpu_seconds, save

TOPIC = "cpu"


def _produce_frames(count: int) -> list[bytes]:
    batch = build_simple_batch([b"x" * 1024] * 16)
    partitions = [{"index": i, "records": batch} for i in range(3)]
    data = {
        "transactional_id": None,
        "acks": 1,
        "timeout": 30000,
        "topic_data": [{"name": TOPIC, "partition_data": partitions}],
    }
    body = encode_kio(build(request_class(0, 9), data))
    return [encode_request(0, 9, i, "bench", body) for i in range(count)]


def _fetch_frames(count: int) -> list[bytes]:
    partitions = [
        {
            "partition": i,
            "current_leader_epoch": -1,
            "fetch_offset": 0,
            "last_fetched_epoch": -1,
            "log_start_offset": -1,
            "partition_max_bytes": 65536,
        }
        for i in range(3)
    ]
    data = {
        "replica_id": -1,
        "max_wait": 0,
        "min_bytes": 1,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [{"topic": TOPIC, "partitions": partitions}],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    body = encode_kio(build(request_class(1, 12), data))
    return [encode_request(1, 12, i, "bench", body) for i in range(count)]


def _pump(sock: socket.socket, frames: list[bytes], window: int = 8) -> None:
    """Send ``frames`` with at most ``window`` unanswered; read every response."""
    sent = answered = 0
    buf = bytearray()
    while answered < len(frames):
        while sent < len(frames) and sent - answered < window:
            sock.sendall(frames[sent])
            sent += 1
        while True:
            if len(buf) >= 4:
                (size,) = struct.unpack_from(">i", buf)
                if len(buf) >= 4 + size:
                    del buf[: 4 + size]
                    answered += 1
                    break
            chunk = sock.recv(1 << 20)
            if not chunk:
                raise RuntimeError("the broker closed the connection")
            buf += chunk


def _create_topic(sock: socket.socket) -> None:
    data = {
        "topics": [
            {
                "name": TOPIC,
                "num_partitions": 3,
                "replication_factor": 1,
                "assignments": [],
                "configs": [],
            }
        ],
        "timeout": 30000,
        "validate_only": False,
    }
    body = encode_kio(build(request_class(19, 7), data))
    _pump(sock, [encode_request(19, 7, 0, "bench", body)])


def _round(requests: int) -> dict[str, tuple[float, float]]:
    out: dict[str, tuple[float, float]] = {}
    with brook_process() as broker:
        assert broker.proc is not None
        pid = broker.proc.pid
        with socket.create_connection(("127.0.0.1", broker.port)) as sock:
            _create_topic(sock)
            for name, make in (("produce", _produce_frames), ("fetch", _fetch_frames)):
                _pump(sock, make(50))
                frames = make(requests)
                cpu0, wall0 = process_cpu_seconds(pid), time.perf_counter()
                _pump(sock, frames)
                cpu1, wall1 = process_cpu_seconds(pid), time.perf_counter()
                out[name] = ((cpu1 - cpu0) / requests * 1e6, (wall1 - wall0) / requests * 1e6)
    return out


def run(requests: int, rounds: int) -> dict[str, Any]:
    samples: dict[str, list[tuple[float, float]]] = {"produce": [], "fetch": []}
    for r in range(rounds):
        for name, value in _round(requests).items():
            samples[name].append(value)
            print(f"round {r + 1} {name:8} cpu {value[0]:6.1f} us  wall {value[1]:6.1f} us")
    summary = {
        name: {
            "cpu_us_per_request": round(statistics.median(v[0] for v in values), 1),
            "wall_us_per_request": round(statistics.median(v[1] for v in values), 1),
        }
        for name, values in samples.items()
    }
    return {
        "requests": requests,
        "rounds": rounds,
        "machine": machine(),
        "raw": samples,
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=12000)
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args()
    out = run(args.requests, args.rounds)
    for name, row in out["summary"].items():
        print(
            f"{name}: {row['cpu_us_per_request']} us of broker CPU per request, "
            f"{row['wall_us_per_request']} us wall"
        )
    print(f"saved to {save('request_cpu', out)}")


if __name__ == "__main__":
    main()
