"""Controller failover and metadata throughput on real ``brook cluster`` processes.

    python -m bench.controller_failover [--trials 50] [--topics 400] [--concurrency 8]

Failover: on a 3-node cluster (combined nodes, Kafka's quorum defaults: election timeout
1 s, fetch timeout 2 s), the active controller is killed with SIGKILL; from that moment a
client sends CreateTopics (through a live broker, each with a 1 s timeout) until one succeeds.
The time from the kill to that success is one trial; the killed node is restarted and the
cluster settles before the next. Reports p50, p99 and max. Meanwhile another client creates
topics one after another (200 ms apart) through every broker; at the end every topic whose
creation it saw acknowledged must be listed by every broker, and once the cluster is stopped
every node's metadata image must be the same (a digest), or the run fails.

Metadata throughput: topics created per second (CreateTopics of one single-partition topic
each, ``--concurrency`` requests in flight, through one broker) on a 3-voter quorum and on a
single node, in the same run.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from brook.broker.handlers import create_topics as create_topics_api
from brook.cli.local_cluster import LocalCluster
from brook.net.connection import NodeConnection, NodeUnavailable
from brook.protocol.api import ApiKey

from .common import Creator, check_metadata, machine, save


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))
    return ordered[index]


async def _create(conn: NodeConnection, name: str, timeout_ms: int) -> int:
    spec = create_topics_api.CreateTopicSpec(name, 1, 1)
    request = create_topics_api.request_of([spec], False, timeout_ms)
    response = await conn.send(ApiKey.CREATE_TOPICS, 7, request, timeout_ms / 1000 + 1)
    return int(response.topics[0].error_code)


def _wait_leader(cluster: LocalCluster, timeout: float = 60.0) -> tuple[int, int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        quorum = cluster.describe_quorum()
        if quorum is not None:
            return quorum.leader_id, quorum.leader_epoch
        time.sleep(0.05)
    raise TimeoutError("no quorum leader")


async def _until_created(ports: list[int], started: float) -> float:
    """Seconds from ``started`` until a CreateTopics through some live broker succeeds."""
    while True:
        for port in ports:
            conn = NodeConnection("127.0.0.1", port, "bench")
            try:
                code = await _create(conn, "f-" + uuid.uuid4().hex[:10], 1000)
            except (NodeUnavailable, TimeoutError):
                code = -1
            finally:
                conn.close()
            if code == 0:
                return time.monotonic() - started
        await asyncio.sleep(0.01)


def failover(directory: Path, trials: int) -> tuple[list[float], dict[str, Any]]:
    cluster = LocalCluster.create(directory, nodes=3)
    times: list[float] = []
    with cluster:
        creator = Creator(cluster.bootstrap_servers, pause=0.2)
        creator.start()
        for trial in range(trials):
            leader, epoch = _wait_leader(cluster)
            live = [n.ports["PLAINTEXT"] for n in cluster.brokers if n.node_id != leader]
            started = time.monotonic()
            cluster.kill(leader)
            elapsed = asyncio.run(_until_created(live, started))
            times.append(elapsed)
            print(
                f"trial {trial + 1}: node {leader} (epoch {epoch}) killed, admin back in "
                f"{elapsed * 1000:.0f} ms",
                flush=True,
            )
            cluster.restart(leader)
        creator.stop()
        verdict = check_metadata(cluster, creator.acked, timeout=30)
        loss = {
            "lost": len(set().union(*verdict.missing.values())),
            "identical_images": verdict.identical_images,
        }
    return times, {**loss, "acknowledged": len(creator.acked), "failed": creator.failed}


async def _throughput(port: int, topics: int, concurrency: int) -> float:
    conns = [NodeConnection("127.0.0.1", port, "bench") for _ in range(concurrency)]
    names = iter(f"m-{uuid.uuid4().hex[:12]}" for _ in range(topics))
    failures = 0

    async def worker(conn: NodeConnection) -> None:
        nonlocal failures
        for name in names:
            if await _create(conn, name, 30000) != 0:
                failures += 1

    await _create(conns[0], "warm-" + uuid.uuid4().hex[:8], 30000)
    start = time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    elapsed = time.perf_counter() - start
    for conn in conns:
        conn.close()
    if failures:
        raise RuntimeError(f"{failures} topic creations failed")
    return topics / elapsed


def throughput(directory: Path, nodes: int, topics: int, concurrency: int) -> float:
    with LocalCluster.create(directory, nodes=nodes) as cluster:
        port = cluster.brokers[-1].ports["PLAINTEXT"]  # not the first voter: often forwarded
        return asyncio.run(_throughput(port, topics, concurrency))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--topics", type=int, default=400)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="brook-failover-") as tmp:
        base = Path(tmp)
        times, loss = failover(base / "failover", args.trials)
        rate3 = throughput(base / "three", 3, args.topics, args.concurrency)
        rate1 = throughput(base / "one", 1, args.topics, args.concurrency)
    result: dict[str, Any] = {
        "machine": machine(),
        "metadata_loss": loss,
        "failover_ms": {
            "trials": len(times),
            "p50": round(statistics.median(times) * 1000),
            "p99": round(_percentile(times, 0.99) * 1000),
            "max": round(max(times) * 1000),
        },
        "topics_per_second": {
            "three_voters": round(rate3, 1),
            "single_node": round(rate1, 1),
            "ratio": round(rate3 / rate1, 2),
        },
    }
    print(
        f"failover after kill -9 of the active controller ({len(times)} trials): "
        f"p50 {result['failover_ms']['p50']} ms, p99 {result['failover_ms']['p99']} ms, "
        f"max {result['failover_ms']['max']} ms"
    )
    print(
        f"meanwhile {loss['acknowledged']} topics acknowledged, {loss['lost']} lost, "
        f"images identical on every node: {loss['identical_images']}"
    )
    print(
        f"topics created per second: 3 voters {rate3:.1f}, single node {rate1:.1f} "
        f"(ratio {rate3 / rate1:.2f})"
    )
    save("controller_failover", result)
    return 0 if loss["lost"] == 0 and loss["identical_images"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
