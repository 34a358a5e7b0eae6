"""The exactly-once checker (the loss checker's counterpart for transactions): a
consume-transform-produce pipeline in a process of its own (confluent-kafka: a read_committed
group consumer and a transactional producer sending the consumed offsets to each
transaction) copies numbered records from one topic to another while the pipeline process and
brokers are killed with SIGKILL and restarted; afterwards every input record must be in the
output exactly once under read_committed."""

from __future__ import annotations

import random
import subprocess
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from support import env_with_repo

PARTITIONS = 3

PIPELINE = """
import sys
from confluent_kafka import Consumer, KafkaException, Producer
bootstrap, source, sink, group, tid = sys.argv[1:6]
# static membership: a restarted pipeline takes its place in the group at once
consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "group.instance.id": "pipeline",
                     "isolation.level": "read_committed", "enable.auto.commit": False,
                     "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid,
                     "transaction.timeout.ms": 10000})
producer.init_transactions(60)
consumer.subscribe([source])
while True:
    batch = [m for m in consumer.consume(20, 0.5) if m.error() is None]
    if not batch:
        continue
    producer.begin_transaction()
    for m in batch:
        producer.produce(sink, m.value(), partition=m.partition())
    producer.send_offsets_to_transaction(consumer.position(consumer.assignment()),
                                         consumer.consumer_group_metadata(), 30)
    producer.commit_transaction(30)
"""


@dataclass
class TrialResult:
    records: int
    pipeline_kills: int
    broker_kills: int
    duplicates: list[int]
    missing: list[int]
    killed_broker: int | None = None  # the node killed and restarted, if any
    seconds: float = 0.0  # from the pipeline's start until every record was copied (or timeout)


def _read_committed(bootstrap: str, topic: str) -> list[int]:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"check-{uuid.uuid4().hex}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        got: list[int] = []
        ended: set[int] = set()
        deadline = time.monotonic() + 60
        while len(ended) < PARTITIONS and time.monotonic() < deadline:
            msg = consumer.poll(0.2)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == KafkaError._PARTITION_EOF:
                    ended.add(msg.partition())
                continue
            got.append(int(msg.value()))
        return got
    finally:
        consumer.close()


def run_trial(
    cluster: Any,
    records: int,
    seed: int,
    timeout: float = 120.0,
    command: list[str] | None = None,
) -> TrialResult:
    """One trial on a running local cluster (``kill`` / ``restart`` by node id); ``command``
    is another pipeline taking the same five arguments (default: confluent-kafka's)."""
    rng = random.Random(seed)
    bootstrap = cluster.bootstrap_servers
    source, sink = f"in-{uuid.uuid4().hex[:6]}", f"out-{uuid.uuid4().hex[:6]}"
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for topic in (source, sink):
        new = NewTopic(topic, PARTITIONS, 3, config={"min.insync.replicas": "2"})
        admin.create_topics([new])[topic].result(60)
    loader = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True})
    for n in range(records):
        loader.produce(source, str(n).encode(), partition=n % PARTITIONS)
    assert loader.flush(60) == 0
    group, tid = f"eos-{uuid.uuid4().hex[:6]}", f"eos-{uuid.uuid4().hex[:6]}"
    pipeline = command or [sys.executable, "-c", PIPELINE]
    args = [*pipeline, bootstrap, source, sink, group, tid]
    pipeline_kills = broker_kills = 0

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            args, env=env_with_repo(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

    def copied() -> int:
        return len(set(_read_committed(bootstrap, sink)))

    # The faults, at random times while it copies (transactions of at most 20 records): two
    # kills of the pipeline, and in every other trial a broker killed and restarted.
    first = rng.uniform(0.5, 2.0)
    kill_at = [first, first + rng.uniform(1.0, 3.0)]
    broker = rng.choice([1, 2, 3]) if seed % 2 == 0 else None
    killed_broker = broker
    proc = start()
    started = time.monotonic()
    deadline = started + timeout
    try:
        while time.monotonic() < deadline:
            if not kill_at and broker is None and copied() >= records:
                break
            if kill_at and time.monotonic() - started >= kill_at[0]:
                kill_at.pop(0)
                proc.kill()
                proc.wait()
                pipeline_kills += 1
                if broker is not None and broker_kills == 0:
                    cluster.kill(broker)
                    broker_kills += 1
                proc = start()
            elif broker is not None and broker_kills == 1 and not kill_at:
                cluster.restart(broker)
                broker = None
            elif proc.poll() is not None:
                proc = start()  # it gave up on an error: as an operator's supervisor would
            time.sleep(0.2)
        seconds = time.monotonic() - started
        if broker is not None and broker_kills:
            cluster.restart(broker)
    finally:
        proc.kill()
        proc.wait()
    counts = Counter(_read_committed(bootstrap, sink))
    return TrialResult(
        records,
        pipeline_kills,
        broker_kills,
        duplicates=sorted(n for n, c in counts.items() if c > 1),
        missing=sorted(n for n in range(records) if n not in counts),
        killed_broker=killed_broker if broker_kills else None,
        seconds=seconds,
    )
