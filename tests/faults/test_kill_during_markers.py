"""kill -9 a broker while transactions and their markers are being written, over many small
segments: after the restart (recovery from the recovery point, producer state and
aborted-transaction indexes rebuilt), a read_committed reader sees every transaction whose
COMMIT marker was acknowledged and none whose ABORT marker was; a read_uncommitted reader
still sees both."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from rawclient import RawClient, create_topic
from support import BrookProcess, env_with_repo
from txn_support import READ_COMMITTED, UNVERIFIED, fetch_at_offset

from brook.client.cluster import TopicPartition
from brook.client.consumer.partition_records import PartitionRecords

WRITER = """
import json, sys
sys.path.insert(0, sys.argv[4])
from rawclient import RawClient
from txn_support import TxnProducer
bootstrap, topic, out = sys.argv[1:4]
acked = open(out, "a", buffering=1)
with RawClient(bootstrap) as c:
    producers = [TxnProducer(c, topic) for _ in range(3)]
    for i in range(1000000):
        p = producers[i % 3]
        error, first = p.send(f"v{i}".encode())
        if error:
            continue
        commit = i % 4 != 3
        if p.end(commit=commit) == 0:
            acked.write(json.dumps([f"v{i}", commit]) + "\\n")
"""


def _read(bootstrap: str, topic: str, level: int) -> list[str]:
    """Every record a reader at ``level`` gets, fetch after fetch, as a client filters them."""
    out: list[str] = []
    offset = 0
    with RawClient(bootstrap) as c:
        while True:
            part = fetch_at_offset(c, topic, level, offset)
            assert part.error_code == 0, part.error_code
            if not part.records:
                return out
            aborted = [(t.producer_id, t.first_offset) for t in part.aborted_transactions or ()]
            records = PartitionRecords(
                TopicPartition(topic, 0),
                offset,
                bytes(part.records),
                read_committed=level == READ_COMMITTED,
                aborted_transactions=aborted,
            )
            while not records.consumed:
                out += [r.value.decode() for r in records.take(10_000)]
            if records.next_offset <= offset:
                return out
            offset = records.next_offset


def test_decided_transactions_survive_kill_9(tmp_path: Path, unique_topic: str) -> None:
    acked = tmp_path / "acked.jsonl"
    tests_dir = str(Path(__file__).resolve().parents[1])
    with BrookProcess(
        tmp_path / "d",
        # the test writes the markers itself: no coordinator to verify its batches (KIP-890)
        {"log.flush.interval.messages": "1", **UNVERIFIED},
    ) as broker:
        with RawClient(broker.bootstrap) as c:
            create_topic(c, unique_topic, configs={"segment.bytes": "2048"})
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, broker.bootstrap, unique_topic, str(acked), tests_dir],
            env=env_with_repo(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and (
                not acked.exists() or len(acked.read_text().splitlines()) < 300
            ):
                time.sleep(0.05)
            broker.kill()  # in the middle of the stream
        finally:
            time.sleep(0.3)
            proc.kill()
            proc.wait()
        decided = [json.loads(line) for line in acked.read_text().splitlines() if line.strip()]
        assert len(decided) >= 300
        segments = len(list((tmp_path / "d").glob(f"{unique_topic}-0/*.log")))
        assert segments > 10
        broker.start()
        committed_view = set(_read(broker.bootstrap, unique_topic, READ_COMMITTED))
        everything = set(_read(broker.bootstrap, unique_topic, 0))
        lost = [v for v, commit in decided if commit and v not in committed_view]
        leaked = [v for v, commit in decided if not commit and v in committed_view]
        assert not lost, lost[:5]
        assert not leaked, leaked[:5]
        assert all(v in everything for v, _ in decided)
