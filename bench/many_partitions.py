"""Many partitions on one node under a low descriptor limit: creation, serving, restarts.

    python -m bench.many_partitions --partitions 50000 --nofile 4096

A ``brook server`` runs under ``prlimit --nofile=N:N`` with its data on disk. The benchmark
creates the partitions (topics of ``--per-topic`` partitions, ``--per-request`` topics per
CreateTopics), asks Metadata for every topic, produces ``--records`` records to each of
``--sample`` partitions spread over the whole range and reads them back; then it stops the
node (SIGTERM), starts it again under the same limit and checks metadata and data again;
then kills it (SIGKILL) and starts it once more (recovery from the checkpointed recovery
points). It reports the time of each step, the node's RSS and its open descriptors. Raw
results go to ``bench/results/many_partitions.json``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from brook.protocol.records import build_simple_batch, iter_records

from .common import BrookProcess, machine, process_cpu_seconds, save

if TYPE_CHECKING:
    from rawclient import RawClient

TOPIC = "mp{:04d}"
IDLE_S = 10.0


class LimitedBrook(BrookProcess):
    """``brook server`` under ``prlimit --nofile=N:N``."""

    def __init__(self, data_dir: Path, nofile: int, overrides: dict[str, str]) -> None:
        super().__init__(data_dir, overrides)
        self.nofile = nofile

    def command(self) -> list[str]:
        return ["prlimit", f"--nofile={self.nofile}:{self.nofile}", "--", *super().command()]

    def start_timed(self, timeout: float) -> float:
        """Start and wait until the listener answers; returns the seconds it took."""
        from support import env_with_repo, wait_for_port  # on sys.path through bench.common

        began = time.perf_counter()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child process
        self.proc = subprocess.Popen(
            self.command(), stdout=log, stderr=subprocess.STDOUT, env=env_with_repo()
        )
        log.close()
        wait_for_port(self.port, timeout, self.proc)
        return time.perf_counter() - began

    def stop_timed(self) -> float:
        began = time.perf_counter()
        code = self.stop(timeout=600)
        if code != 0:
            raise RuntimeError(f"brook exited with {code}:\n{self.log()}")
        return time.perf_counter() - began


def connect(bootstrap: str) -> RawClient:
    from rawclient import RawClient  # on sys.path through bench.common

    return RawClient(bootstrap, timeout=600)


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def layout(partitions: int, per_topic: int) -> list[tuple[str, int]]:
    topics = []
    left = partitions
    while left > 0:
        count = min(per_topic, left)
        topics.append((TOPIC.format(len(topics)), count))
        left -= count
    return topics


def create(client: RawClient, topics: list[tuple[str, int]], per_request: int) -> None:
    for i in range(0, len(topics), per_request):
        chunk = topics[i : i + per_request]
        resp = client.request(
            19,
            7,
            {
                "topics": [
                    {
                        "name": name,
                        "num_partitions": count,
                        "replication_factor": 1,
                        "assignments": [],
                        "configs": [],
                    }
                    for name, count in chunk
                ],
                "timeout": 600000,
                "validate_only": False,
            },
        )
        failed = [(t.name, t.error_code, t.error_message) for t in resp.topics if t.error_code]
        if failed:
            raise RuntimeError(f"CreateTopics failed: {failed[:3]}")


def metadata_partitions(client: RawClient) -> int:
    resp = client.request(
        3,
        12,
        {
            "topics": None,
            "allow_auto_topic_creation": False,
            "include_topic_authorized_operations": False,
        },
    )
    bad = [t.name for t in resp.topics if t.error_code]
    if bad:
        raise RuntimeError(f"metadata errors for {bad[:3]}")
    return sum(len(t.partitions) for t in resp.topics if not t.name.startswith("__"))


def sample(topics: list[tuple[str, int]], count: int) -> list[tuple[str, int]]:
    """``count`` partitions spread evenly over the whole range, first and last included."""
    everything = [(name, p) for name, n in topics for p in range(n)]
    if count >= len(everything):
        return everything
    step = (len(everything) - 1) / max(1, count - 1)
    return [everything[round(i * step)] for i in range(count)]


def payload(topic: str, partition: int, i: int) -> bytes:
    return f"{topic}/{partition}/{i}".encode()


def produce(client: RawClient, targets: list[tuple[str, int]], records: int) -> None:
    for i in range(0, len(targets), 100):
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for topic, p in targets[i : i + 100]:
            batch = build_simple_batch(
                [payload(topic, p, k) for k in range(records)], timestamp=int(time.time() * 1000)
            )
            by_topic.setdefault(topic, []).append({"index": p, "records": batch})
        resp = client.request(
            0,
            9,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 30000,
                "topic_data": [
                    {"name": name, "partition_data": parts} for name, parts in by_topic.items()
                ],
            },
        )
        for t in resp.responses:
            for part in t.partition_responses:
                if part.error_code:
                    raise RuntimeError(f"produce to {t.name}-{part.index}: {part.error_code}")


def consume_and_check(client: RawClient, targets: list[tuple[str, int]], records: int) -> None:
    for i in range(0, len(targets), 100):
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for topic, p in targets[i : i + 100]:
            by_topic.setdefault(topic, []).append(
                {
                    "partition": p,
                    "current_leader_epoch": -1,
                    "fetch_offset": 0,
                    "last_fetched_epoch": -1,
                    "log_start_offset": -1,
                    "partition_max_bytes": 1 << 20,
                }
            )
        resp = client.request(
            1,
            12,
            {
                "replica_id": -1,
                "replica_state": {"replica_id": -1, "replica_epoch": -1},
                "max_wait": 0,
                "min_bytes": 1,
                "max_bytes": 64 << 20,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [
                    {"topic": name, "topic_id": None, "partitions": parts}
                    for name, parts in by_topic.items()
                ],
                "forgotten_topics_data": [],
                "rack_id": "",
            },
        )
        for t in resp.responses:
            for part in t.partitions:
                got = [r.value for _, r in iter_records(part.records or b"")]
                want = [payload(t.topic, part.partition_index, k) for k in range(records)]
                if part.error_code or got != want:
                    raise RuntimeError(
                        f"{t.topic}-{part.partition_index}: error {part.error_code}, "
                        f"{len(got)} of {len(want)} records as written"
                    )


def timed(fn: Any, *args: Any) -> float:
    began = time.perf_counter()
    fn(*args)
    return time.perf_counter() - began


def serve_and_check(
    broker: LimitedBrook, topics: list[tuple[str, int]], targets: list[tuple[str, int]], args: Any
) -> dict[str, float]:
    """Metadata for every partition and the sample's records, as written."""
    assert broker.proc is not None
    out: dict[str, float] = {}
    with connect(broker.bootstrap) as client:
        began = time.perf_counter()
        partitions = metadata_partitions(client)
        out["metadata_all_s"] = time.perf_counter() - began
        if partitions != args.partitions:
            raise RuntimeError(f"metadata lists {partitions} partitions, not {args.partitions}")
        out["fetch_sample_s"] = timed(consume_and_check, client, targets, args.records)
    out["rss_mib"] = rss_mib(broker.proc.pid)
    out["open_fds"] = open_fds(broker.proc.pid)
    # Background work that walks every partition (flush checks, checkpoints) costs CPU even
    # when no client sends anything.
    used = process_cpu_seconds(broker.proc.pid)
    time.sleep(IDLE_S)
    out["idle_cpu_pct"] = 100 * (process_cpu_seconds(broker.proc.pid) - used) / IDLE_S
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="brook-many-", dir=args.dir))
    broker = LimitedBrook(tmp / "data", args.nofile, {"log.segment.bytes": str(1 << 20)})
    topics = layout(args.partitions, args.per_topic)
    targets = sample(topics, args.sample)
    result: dict[str, Any] = {"machine": machine(), "args": vars(args)}
    try:
        result["first_start_s"] = broker.start_timed(args.timeout)
        assert broker.proc is not None
        result["rss_empty_mib"] = rss_mib(broker.proc.pid)
        with connect(broker.bootstrap) as client:
            result["create_s"] = timed(create, client, topics, args.per_request)
            result["produce_sample_s"] = timed(produce, client, targets, args.records)
        result["serving"] = serve_and_check(broker, topics, targets, args)
        result["clean_stop_s"] = broker.stop_timed()
        result["clean_restart_s"] = broker.start_timed(args.timeout)
        result["after_clean_restart"] = serve_and_check(broker, topics, targets, args)
        assert broker.proc is not None
        os.kill(broker.proc.pid, signal.SIGKILL)
        broker.proc.wait()
        broker.proc = None
        result["unclean_restart_s"] = broker.start_timed(args.timeout)
        result["after_unclean_restart"] = serve_and_check(broker, topics, targets, args)
        broker.stop_timed()
    except BaseException:
        print(broker.log())
        raise
    finally:
        broker.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", type=int, default=50_000)
    parser.add_argument("--nofile", type=int, default=4096, help="RLIMIT_NOFILE of the node")
    parser.add_argument("--per-topic", type=int, default=1000, help="partitions per topic")
    parser.add_argument("--per-request", type=int, default=5, help="topics per CreateTopics")
    parser.add_argument("--sample", type=int, default=500, help="partitions produced to")
    parser.add_argument("--records", type=int, default=20, help="records per sampled partition")
    parser.add_argument("--timeout", type=float, default=900.0, help="start-up deadline (s)")
    parser.add_argument("--dir", default=None, help="where the data goes (default: $TMPDIR)")
    args = parser.parse_args()
    result = run(args)
    path = save("many_partitions", result)
    total = args.partitions
    print(f"{total} partitions, ulimit -n {args.nofile} ({path})")
    print(f"  first start          {result['first_start_s']:8.2f} s")
    print(f"  create               {result['create_s']:8.2f} s")
    print(f"  produce to {args.sample:<6}     {result['produce_sample_s']:8.2f} s")
    for label, key, start in (
        ("serving", "serving", None),
        ("after clean restart", "after_clean_restart", "clean_restart_s"),
        ("after kill -9 restart", "after_unclean_restart", "unclean_restart_s"),
    ):
        step = result[key]
        started = f", started in {result[start]:.2f} s" if start else ""
        print(
            f"  {label}: metadata (all) {step['metadata_all_s']:.2f} s, fetch sample "
            f"{step['fetch_sample_s']:.2f} s, RSS {step['rss_mib']:.0f} MiB, "
            f"{step['open_fds']} fds, idle CPU {step['idle_cpu_pct']:.0f}%{started}"
        )
    print(f"  clean stop           {result['clean_stop_s']:8.2f} s")


if __name__ == "__main__":
    main()
