"""kill -9 a broker while producers are writing: after a restart every acknowledged record
(flushed by log.flush.interval.messages=1) is readable, and no batch is corrupt."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from rawclient import RawClient, create_topic, fetch
from support import BrookProcess, env_with_repo

from brook.protocol.records import iter_records

PRODUCER = """
import json, sys
from confluent_kafka import Producer
bootstrap, topic, out = sys.argv[1:4]
acked = open(out, "a", buffering=1)
def report(err, msg):
    if err is None:
        acked.write(json.dumps([msg.partition(), msg.offset(), msg.value().decode()]) + "\\n")
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
              "message.timeout.ms": 5000, "retries": 0})
for i in range(1000000):
    try:
        p.produce(topic, f"r{i}".encode(), partition=i % 3, on_delivery=report)
    except BufferError:
        p.poll(0.01)
    p.poll(0)
"""


def test_acknowledged_records_survive_kill_9(tmp_path: Path, unique_topic: str) -> None:
    acked = tmp_path / "acked.jsonl"
    with BrookProcess(tmp_path / "d", {"log.flush.interval.messages": "1"}) as broker:
        with RawClient(broker.bootstrap) as c:
            create_topic(c, unique_topic, partitions=3)
        proc = subprocess.Popen(
            [sys.executable, "-c", PRODUCER, broker.bootstrap, unique_topic, str(acked)],
            env=env_with_repo(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (
                not acked.exists() or acked.stat().st_size < 20000
            ):
                time.sleep(0.05)
            broker.kill()  # in the middle of the stream
        finally:
            time.sleep(0.5)
            proc.kill()
            proc.wait()
        records = [json.loads(line) for line in acked.read_text().splitlines() if line.strip()]
        assert len(records) > 100
        broker.start()
        with RawClient(broker.bootstrap) as c:
            stored: dict[tuple[int, int], str] = {}
            for p in range(3):
                offset = 0
                while True:
                    part = fetch(c, unique_topic, p, offset).responses[0].partitions[0]
                    assert part.error_code == 0
                    batch = list(iter_records(part.records))  # verifies every CRC
                    if not batch:
                        break
                    for _, r in batch:
                        stored[(p, r.offset)] = r.value.decode()
                    offset = batch[-1][1].offset + 1
        missing = [r for r in records if stored.get((r[0], r[1])) != r[2]]
        assert not missing, missing[:5]
