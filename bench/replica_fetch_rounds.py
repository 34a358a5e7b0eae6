"""What one replica fetch round costs the follower, by partitions in the session and
partitions that changed: building the request (session bookkeeping and encoding) and
reading the response (decoding it into one tuple per partition carried), in process, no
network. Also: a full fetch of every partition each round (what a follower without a
session would send), and the cost of appending one small batch to a real log, against which
the decoding cost per partition is weighed.

    python -m bench.replica_fetch_rounds [--partitions 10000] [--rounds 200]

Raw results go to ``bench/results/replica_fetch_rounds.json``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from brook.broker.replica_fetcher.codec import (
    FETCH_VERSION,
    FetchSettings,
    decode_fetch_response,
    encode_fetch_request,
)
from brook.broker.replica_fetcher.session import FetchPosition, FollowerSession
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.protocol.api import ApiKey, response_class
from brook.protocol.build import build
from brook.protocol.framing import encode_kio
from brook.protocol.records import build_batch, encode_record

from .common import machine, save

TOPICS = 100
SETTINGS = FetchSettings(replica_id=2)


def _batch(base_offset: int) -> bytes:
    return build_batch(
        [encode_record(0, 0, None, b"x" * 100, ())],
        base_timestamp=0,
        max_timestamp=0,
        base_offset=base_offset,
        partition_leader_epoch=1,
    )


def _topic_ids() -> list[uuid.UUID]:
    return [uuid.UUID(int=i + 1) for i in range(TOPICS)]


def _response(changed: list[tuple[uuid.UUID, int]], offset: int) -> bytes:
    topics: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for tid, p in changed:
        topics.setdefault(tid, []).append(
            {
                "partition_index": p,
                "error_code": 0,
                "high_watermark": offset + 1,
                "last_stable_offset": offset + 1,
                "log_start_offset": 0,
                "diverging_epoch": {"epoch": -1, "end_offset": -1},
                "current_leader": {"leader_id": -1, "leader_epoch": -1},
                "snapshot_id": {"end_offset": -1, "epoch": -1},
                "aborted_transactions": None,
                "preferred_read_replica": -1,
                "records": _batch(offset),
            }
        )
    data = {
        "throttle_time": 0,
        "error_code": 0,
        "session_id": 7,
        "responses": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
        "node_endpoints": [],
    }
    return encode_kio(build(response_class(ApiKey.FETCH, FETCH_VERSION), data))


def _round_costs(partitions: int, changed: int, rounds: int) -> dict[str, float]:
    ids = _topic_ids()
    per_topic = partitions // TOPICS
    keys = [(f"t{t}", p) for t in range(TOPICS) for p in range(per_topic)]
    tid = {f"t{t}": ids[t] for t in range(TOPICS)}
    session = FollowerSession()
    for tp in keys:
        session.put(tp, FetchPosition(tid[tp[0]], 0, 0, 1 << 20, 1, 1))
    session.on_response(session.build(), 0, 7)
    step = max(1, len(keys) // max(1, changed))
    moving = keys[::step][:changed]
    bodies = [_response([(tid[t], p) for t, p in moving], r) for r in range(2)]
    build_s = decode_s = 0.0
    for r in range(rounds):
        t0 = time.perf_counter()
        for tp in moving:
            session.put(tp, FetchPosition(tid[tp[0]], r + 1, 0, 1 << 20, 1, 1))
        request = session.build()
        encode_fetch_request(request, SETTINGS, 5)
        t1 = time.perf_counter()
        result = decode_fetch_response(bodies[r % 2])
        for _ in result.partitions:
            pass
        t2 = time.perf_counter()
        session.on_response(request, 0, 7)
        build_s += t1 - t0
        decode_s += t2 - t1
    return {
        "build_us": build_s / rounds * 1e6,
        "decode_us": decode_s / rounds * 1e6,
    }


def _full_fetch_us(partitions: int, rounds: int) -> float:
    ids = _topic_ids()
    per_topic = partitions // TOPICS
    session = FollowerSession()
    for t in range(TOPICS):
        for p in range(per_topic):
            session.put((f"t{t}", p), FetchPosition(ids[t], 0, 0, 1 << 20, 1, 1))
    start = time.perf_counter()
    for _ in range(rounds):
        request = session.build()  # never answered: every round is full
        encode_fetch_request(request, SETTINGS, 5)
    return (time.perf_counter() - start) / rounds * 1e6


def _append_us(count: int) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        plog = PartitionLog.open(Path(tmp) / "t-0", LogConfig.from_topic_config({}), now_ms=0)
        batches = [_batch(i) for i in range(count)]
        start = time.perf_counter()
        for b in batches:
            plog.append_as_follower(b)
        elapsed = time.perf_counter() - start
        plog.close_files()
    return elapsed / count * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=200)
    args = parser.parse_args()
    rows = []
    for changed in (0, 1, 10, 100, 1000):
        costs = _round_costs(args.partitions, changed, args.rounds)
        rows.append({"changed": changed, **costs})
        print(
            f"{args.partitions} partitions, {changed:5d} changed: build {costs['build_us']:9.1f}"
            f" us, decode {costs['decode_us']:9.1f} us per round"
        )
    full = _full_fetch_us(args.partitions, max(5, args.rounds // 20))
    print(f"full fetch of {args.partitions} partitions: build {full:9.1f} us per round")
    append = _append_us(2000)
    print(f"append_as_follower of one 1-record batch: {append:.1f} us")
    path = save(
        "replica_fetch_rounds",
        {
            "machine": machine(),
            "partitions": args.partitions,
            "rounds": rows,
            "full_fetch_build_us": full,
            "append_one_batch_us": append,
        },
    )
    print(f"results in {path}")


if __name__ == "__main__":
    main()
