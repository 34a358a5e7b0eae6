"""The partition leader's CPU time per follower fetch, by the size of the follower's fetch
session: the leader's work should follow the partitions that changed, not the session.

    python -m bench.follower_fetch_cpu [--partitions 1000,100] [--active 10] [--rounds 1500]

A 3-node ``brook cluster`` whose own replica fetchers are held back (an hour-long injected
fetch delay), so that only this benchmark fetches; for each session size P, a topic of P
partitions on brokers 1 and 2, all led by 1. One connection plays broker 2's replica
fetcher: a full Fetch v17 with ReplicaState opens its session (KIP-227) over the P
partitions, then each round produces one small batch (acks=1) to each of the next
``--active`` partitions (one Produce request) and sends the incremental follower fetch,
naming (as a replica fetcher does) the partitions the previous response brought records for
at their new offsets; it brings the new batches. The same rounds are then run by a consumer
session (replica id -1, the same P partitions), whose fetches read every partition of the
session as Kafka's leader does for every fetch, and without any fetch (the produce alone).
Reports node 1's user + system CPU time per round (/proc clock ticks), less what the node
uses idle over as long (its timers walk every partition), for each, and the fetch's share
(a round less the produce alone); raw results go to
``bench/results/follower_fetch_cpu.json``.
"""

from __future__ import annotations

import argparse
import socket
import struct
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from brook.cli.local_cluster import LocalCluster
from brook.protocol.api import request_class, response_class
from brook.protocol.build import build
from brook.protocol.framing import decode_kio, encode_kio, encode_request, response_body_offset
from brook.protocol.records import build_simple_batch

from .common import machine, process_cpu_seconds, save

OVERRIDES = {
    "broker.session.timeout.ms": "6000",
    "broker.heartbeat.interval.ms": "500",
    "offsets.topic.replication.factor": "1",
    # the follower here fetches only what it is sent: keep the ISR as it is
    "replica.lag.time.max.ms": "3600000",
}


class Conn:
    def __init__(self, address: str) -> None:
        host, port = address.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)))
        self.correlation = 0

    def call(self, key: int, version: int, data: dict[str, Any]) -> Any:
        self.correlation += 1
        body = encode_kio(build(request_class(key, version), data))
        self.sock.sendall(encode_request(key, version, self.correlation, "bench", body))
        head = self._exact(4)
        frame = self._exact(struct.unpack(">i", head)[0])
        return decode_kio(
            response_class(key, version), frame, response_body_offset(frame, key, version)
        )

    def _exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise RuntimeError("connection closed")
            out += chunk
        return bytes(out)


def _fetch(
    topic_id: uuid.UUID,
    replica: int,
    session: tuple[int, int],
    offsets: dict[int, int],
) -> dict[str, Any]:
    parts = [
        {
            "partition": p,
            "current_leader_epoch": 0,
            "fetch_offset": o,
            "last_fetched_epoch": -1,
            "log_start_offset": 0,
            "partition_max_bytes": 1 << 20,
            "replica_directory_id": None,
        }
        for p, o in offsets.items()
    ]
    return {
        "cluster_id": None,
        "replica_state": {"replica_id": replica, "replica_epoch": -1},
        "max_wait": 0,
        "min_bytes": 0,
        "max_bytes": 16 << 20,
        "isolation_level": 0,
        "session_id": session[0],
        "session_epoch": session[1],
        "topics": [{"topic_id": topic_id, "partitions": parts}] if parts else [],
        "forgotten_topics_data": [],
        "rack_id": "",
    }


def _create(conn: Conn, name: str, partitions: int) -> uuid.UUID:
    resp = conn.call(
        19,
        7,
        {
            "topics": [
                {
                    "name": name,
                    "num_partitions": -1,
                    "replication_factor": -1,
                    "assignments": [
                        {"partition_index": i, "broker_ids": [1, 2]} for i in range(partitions)
                    ],
                    "configs": [],
                }
            ],
            "timeout": 120000,
            "validate_only": False,
        },
    )
    # 36: a forwarded creation that took long was retried after it had succeeded
    assert resp.topics[0].error_code in (0, 36), resp
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        meta = conn.call(
            3,
            12,
            {
                "topics": [{"name": name, "topic_id": None}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        t = meta.topics[0]
        led = t.error_code == 0 and all(p.leader_id == 1 for p in t.partitions)
        if led and len(t.partitions) == partitions:
            return t.topic_id
        time.sleep(0.2)
    raise RuntimeError(f"{name} not led by node 1 in time")


def _rounds(
    conn: Conn,
    pid: int,
    name: str,
    topic_id: uuid.UUID,
    partitions: int,
    rounds: int,
    replica: int | None,
    active: int,
) -> float:
    """CPU microseconds per round; ``replica`` None: the produce alone, no fetch."""
    offsets = dict.fromkeys(range(partitions), 0)
    sid, epoch = 0, 0
    if replica is not None:
        full = conn.call(1, 17, _fetch(topic_id, replica, (0, 0), offsets))
        assert full.error_code == 0 and full.session_id, full
        sid, epoch = full.session_id, 1
        # the session's first incremental fetch reads everything once (all of it is new)
        first = conn.call(1, 17, _fetch(topic_id, replica, (sid, epoch), {}))
        assert first.error_code == 0, first
        epoch += 1
    batch = build_simple_batch([b"x" * 100])
    produce = {
        "transactional_id": None,
        "acks": 1,
        "timeout": 30000,
        "topic_data": [{"name": name, "partition_data": []}],
    }
    moved: dict[int, int] = {}  # what the last response brought, named at its new offset
    cpu0, wall0 = process_cpu_seconds(pid), time.monotonic()
    for r in range(rounds):
        produce["topic_data"][0]["partition_data"] = [
            {"index": (r * active + i) % partitions, "records": batch} for i in range(active)
        ]
        answers = conn.call(0, 9, produce).responses[0].partition_responses
        assert all(a.error_code == 0 for a in answers), answers
        if replica is None:
            continue
        resp = conn.call(1, 17, _fetch(topic_id, replica, (sid, epoch), moved))
        assert resp.error_code == 0, resp
        epoch += 1
        moved = {}
        for t in resp.responses:
            for part in t.partitions:
                if part.records:
                    offsets[part.partition_index] += 1  # one record a batch
                    moved[part.partition_index] = offsets[part.partition_index]
    cpu1, wall1 = process_cpu_seconds(pid), time.monotonic()
    # what the node spends meanwhile on its own (heartbeats, the flush and checkpoint
    # timers, which walk every partition): measured idle for as long, and taken off
    time.sleep(wall1 - wall0)
    idle = process_cpu_seconds(pid) - cpu1
    return (cpu1 - cpu0 - idle) / rounds * 1e6


def run(
    sizes: list[int], rounds: int, active: int, directory: Path | None = None
) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        where = directory if directory is not None else Path(tmp) / "c"
        cluster = LocalCluster.create(where, nodes=3, overrides=OVERRIDES)
        try:
            cluster.start(120)
            for node in (1, 2, 3):  # only this benchmark fetches
                cluster.slow(node, fetch_delay_ms=3_600_000)
            leader = cluster.node(1)
            assert leader.pid is not None
            conn = Conn(leader.broker_address)
            for size in sizes:
                row = {}
                for kind, replica in (("follower", 2), ("consumer", -1), ("produce only", None)):
                    name = f"bench-{kind.replace(' ', '-')}-{size}"
                    tid = _create(conn, name, size)
                    warm = min(rounds, 100)
                    _rounds(conn, leader.pid, name, tid, size, warm, replica, active)
                    cpu = _rounds(conn, leader.pid, name, tid, size, rounds, replica, active)
                    row[kind] = round(cpu, 1)
                    print(f"{size:6d} partitions  {kind:12}: {cpu:8.1f} us CPU per round")
                for kind in ("follower", "consumer"):
                    fetch = row[kind] - row["produce only"]
                    row[f"{kind} fetch"] = round(fetch, 1)
                    print(f"{size:6d} partitions  {kind} fetch alone: {fetch:8.1f} us")
                results[str(size)] = row
        finally:
            cluster.stop()
    return {"rounds": rounds, "active": active, "machine": machine(), "cpu_us_per_round": results}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="1000,100")
    parser.add_argument("--active", type=int, default=10, help="partitions written per round")
    parser.add_argument("--rounds", type=int, default=1500)
    parser.add_argument("--dir", type=Path, help="keep the cluster (and its logs) here")
    args = parser.parse_args()
    out = run([int(x) for x in args.partitions.split(",")], args.rounds, args.active, args.dir)
    print(f"saved to {save('follower_fetch_cpu', out)}")


if __name__ == "__main__":
    main()
