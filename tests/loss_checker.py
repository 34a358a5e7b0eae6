"""The loss checker for replicated partitions, as Jepsen's Kafka tests do it.

An idempotent confluent-kafka producer with acks=all writes numbered records (the value is
the record's number; record ``n`` goes to partition ``n % partitions``) to a topic of RF 3
and ``min.insync.replicas=2`` while one broker, most often a partition leader, is killed with
SIGKILL and started again. Every delivery report that says "written" is kept with its
partition and offset. Once the producer has stopped and every replica is back in the ISR, the
whole topic is read back and checked:

- every acknowledged record is read exactly once, at the offset its report gave (lost,
  misplaced);
- no record is read twice (duplicates, acknowledged or not: the producer is idempotent);
- the acknowledged records of a partition are in the order they were produced (out of order).

Once the cluster is stopped, every replica of every partition must hold the same bytes below
the high watermark (``replica_divergence``).

Used by ``tests/faults/test_replication_loss.py`` (a few trials on every test run) and
``bench/replication_loss.py`` (100 trials).
"""

from __future__ import annotations

import hashlib
import json
import random
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from support import env_with_repo

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.protocol.batch import iter_batches

PRODUCER = """
import json, os, sys
from confluent_kafka import Producer
bootstrap, topic, partitions, out, stop = sys.argv[1:6]
partitions = int(partitions)
acked = open(out, "a", buffering=1)
def report(err, msg):
    if err is None:
        acked.write(json.dumps([msg.partition(), msg.offset(), int(msg.value())]) + "\\n")
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all",
              "linger.ms": 5, "message.timeout.ms": 60000, "socket.timeout.ms": 10000})
n = 0
while not os.path.exists(stop):
    try:
        p.produce(topic, str(n).encode(), partition=n % partitions, on_delivery=report)
        n += 1
    except BufferError:
        p.poll(0.05)
    p.poll(0)
    if n % 200 == 0:
        p.poll(0.01)  # a steady stream, not a flood the cluster only queues
p.flush(60)
acked.close()
"""

TOPIC_CONFIGS = {"min.insync.replicas": "2"}


@dataclass
class Verdict:
    """What one topic's read-back showed against its delivery reports."""

    acknowledged: int
    read: int
    lost: list[tuple[int, int]] = field(default_factory=list)  # (partition, record number)
    misplaced: list[tuple[int, int, int]] = field(default_factory=list)  # (p, acked, read)
    duplicates: list[int] = field(default_factory=list)  # record numbers read twice or more
    out_of_order: list[int] = field(default_factory=list)  # partitions

    @property
    def ok(self) -> bool:
        return not (self.lost or self.misplaced or self.duplicates or self.out_of_order)

    def summary(self) -> str:
        return (
            f"{self.acknowledged} acknowledged, {self.read} read: {len(self.lost)} lost, "
            f"{len(self.misplaced)} misplaced, {len(self.duplicates)} duplicated, "
            f"{len(self.out_of_order)} partitions out of order"
            + ("" if self.ok else f" (first lost {self.lost[:5]}, dup {self.duplicates[:5]})")
        )


def check(acked: Iterable[tuple[int, int, int]], read: dict[int, list[tuple[int, int]]]) -> Verdict:
    """``acked``: (partition, offset, number) from delivery reports; ``read``: per partition,
    the (offset, number) of every record read back."""
    acked = list(acked)
    where: dict[int, tuple[int, int]] = {}
    counts: Counter[int] = Counter()
    for partition, records in read.items():
        for offset, number in records:
            counts[number] += 1
            where[number] = (partition, offset)
    verdict = Verdict(len(acked), sum(counts.values()))
    verdict.duplicates = sorted(n for n, c in counts.items() if c > 1)
    by_partition: dict[int, list[tuple[int, int]]] = {}
    for partition, offset, number in acked:
        found = where.get(number)
        if found is None:
            verdict.lost.append((partition, number))
        elif found != (partition, offset):
            verdict.misplaced.append((number, offset, found[1]))
        by_partition.setdefault(partition, []).append((number, offset))
    for partition, pairs in by_partition.items():
        offsets = [offset for _, offset in sorted(pairs)]
        if offsets != sorted(offsets):
            verdict.out_of_order.append(partition)
    return verdict


def read_acknowledged(path: Path) -> list[tuple[int, int, int]]:
    if not path.exists():
        return []
    rows = []
    for line in path.read_text().splitlines():
        if line.strip():
            partition, offset, number = json.loads(line)
            rows.append((partition, offset, number))
    return rows


def read_back(bootstrap: str, topic: str, partitions: int) -> tuple[dict, dict[int, int]]:
    """Every record of ``topic`` up to each partition's high watermark, with confluent-kafka;
    returns ({partition: [(offset, number)]}, {partition: high watermark})."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer
    from confluent_kafka import TopicPartition as CTP

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"checker-{topic}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        hws = {
            p: consumer.get_watermark_offsets(CTP(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
        consumer.assign([CTP(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        read: dict[int, list[tuple[int, int]]] = {p: [] for p in range(partitions)}
        position = dict.fromkeys(range(partitions), 0)
        deadline = time.monotonic() + 120
        while any(position[p] < hws[p] for p in hws):
            if time.monotonic() > deadline:
                raise TimeoutError(f"reading {topic} back: at {position}, high watermarks {hws}")
            for msg in consumer.consume(1000, 1.0):
                if msg.error() is not None:
                    continue  # partition EOF
                p = msg.partition()
                if msg.offset() < hws[p]:
                    read[p].append((msg.offset(), int(msg.value())))
                position[p] = max(position[p], msg.offset() + 1)
        return read, hws
    finally:
        consumer.close()


def wait_fully_replicated(admin: Admin, topic: str, timeout: float = 120.0) -> None:
    """Until every partition has a leader and all of its replicas in the ISR."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        try:
            last = admin.describe_topics([topic])[topic].partitions
        except Exception as exc:  # a broker just restarted: ask again
            last = exc
        else:
            if all(p.leader >= 0 and set(p.isr) == set(p.replicas) for p in last):
                return
        time.sleep(0.2)
    raise TimeoutError(f"{topic} not fully replicated within {timeout} s: {last}")


def replica_bytes(data_dir: Path, topic: str, partition: int, high_watermark: int) -> bytes:
    """The stored batches of a replica on a stopped node that end below the high watermark."""
    plog = PartitionLog.open(
        data_dir / f"{topic}-{partition}",
        LogConfig.from_topic_config({}),
        had_clean_shutdown=True,
    )
    try:
        data = bytes(plog.read(plog.log_start_offset, 1 << 31).records)
    finally:
        plog.close_files()
    end = 0
    for position, header in iter_batches(data):
        if header.base_offset + header.last_offset_delta >= high_watermark:
            break
        end = position + header.size
    return data[:end]


def replica_divergence(
    cluster: LocalCluster, topic: str, high_watermarks: dict[int, int]
) -> list[str]:
    """Partitions whose replicas (on the stopped cluster) differ below the high watermark."""
    problems = []
    dirs = {n.node_id: n.data_dir for n in cluster.brokers}
    for partition, hw in high_watermarks.items():
        digests = {}
        for node_id, data_dir in dirs.items():
            if (data_dir / f"{topic}-{partition}").is_dir():
                digests[node_id] = hashlib.sha256(
                    replica_bytes(data_dir, topic, partition, hw)
                ).hexdigest()
        if len(digests) < 3 or len(set(digests.values())) != 1:
            problems.append(f"{topic}-{partition}: {digests}")
    return problems


@dataclass
class Trial:
    topic: str
    victim: int
    was_leader: bool
    verdict: Verdict
    high_watermarks: dict[int, int]


def run_trial(
    cluster: LocalCluster,
    admin: Admin,
    workdir: Path,
    rng: random.Random,
    *,
    partitions: int = 6,
    warmup_records: int = 500,
    down_s: float = 1.0,
    after_s: float = 2.0,
    configs: Mapping[str, str] = TOPIC_CONFIGS,
    log: Callable[[str], None] = lambda _line: None,
) -> Trial:
    """One topic (RF 3, ``configs``), one producer, one broker killed and restarted; the
    verdict of its read-back."""
    topic = f"loss-{rng.getrandbits(40):010x}"
    admin.create_topics([NewTopic(topic, partitions, 3, configs=dict(configs))])
    wait_fully_replicated(admin, topic)
    acked_path, stop_path = workdir / f"{topic}.acked", workdir / f"{topic}.stop"
    producer = subprocess.Popen(
        [
            sys.executable,
            "-c",
            PRODUCER,
            cluster.bootstrap_servers,
            topic,
            str(partitions),
            str(acked_path),
            str(stop_path),
        ],
        env=env_with_repo(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_lines(acked_path, warmup_records, producer)
        leaders = [p.leader for p in admin.describe_topics([topic])[topic].partitions]
        brokers = [n.node_id for n in cluster.brokers]
        was_leader = rng.random() < 0.7
        victim = rng.choice(leaders if was_leader else brokers)
        was_leader = victim in leaders
        cluster.kill(victim)
        time.sleep(rng.uniform(0, down_s))
        cluster.restart(victim)
        time.sleep(after_s)
        stop_path.touch()
        producer.wait(120)
    finally:
        if producer.poll() is None:
            producer.kill()
            producer.wait()
    wait_fully_replicated(admin, topic)
    read, hws = read_back(cluster.bootstrap_servers, topic, partitions)
    verdict = check(read_acknowledged(acked_path), read)
    log(
        f"{topic}: broker {victim} killed ({'a' if was_leader else 'no'} leader): "
        f"{verdict.summary()}"
    )
    return Trial(topic, victim, was_leader, verdict, hws)


def _wait_lines(path: Path, lines: int, producer: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if producer.poll() is not None:
            raise RuntimeError(f"the producer exited with {producer.returncode}")
        if path.exists() and path.read_bytes().count(b"\n") >= lines:
            return
        time.sleep(0.05)
    raise TimeoutError(f"fewer than {lines} acknowledged records within 60 s")
