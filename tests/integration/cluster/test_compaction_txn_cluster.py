"""Transactions on a replicated compacted topic on a real 3-node ``brook cluster``: a follower
killed while the leader takes committed and aborted transactions and cleans them copies the
cleaned log when it is back (no aborted record, no transaction left open), and after the
leader is killed, read_committed consumers of the survivors see each key's latest committed
value and no aborted one."""

from __future__ import annotations

import uuid
from pathlib import Path

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from quorum_support import FAST, wait_for
from support import local_cluster
from txn_support import read_to_end

from brook.cli.main import main as brook
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.protocol.batch import iter_batches
from brook.protocol.records import iter_records

NODES = (1, 2, 3)
KEYS = 12
OVERRIDES = {**FAST, "log.cleaner.backoff.ms": "100"}


def _partition(admin: AdminClient, topic: str) -> tuple[int, list[int]]:
    meta = admin.list_topics(topic, timeout=10).topics[topic].partitions[0]
    return meta.leader, sorted(meta.isrs)


def _read(bootstrap: str, topic: str, level: str) -> dict[bytes, bytes]:
    """key -> value of every record up to the partition's end (its LSO for read_committed),
    a key read twice keeping its later value; values of aborted records start with "a"."""
    got: dict[bytes, bytes] = {}
    for msg in read_to_end(bootstrap, topic, level=level):
        assert not msg.value().startswith(b"a"), (msg.offset(), msg.value())
        got[msg.key()] = msg.value()
    return got


def _cleanings(log_path: Path, topic: str) -> int:
    return log_path.read_text(errors="replace").count(f"cleaned {topic}-0")


def test_a_follower_copies_a_cleaned_transactional_log(tmp_path: Path) -> None:
    topic = "compacted-txn-" + uuid.uuid4().hex[:6]
    with local_cluster(tmp_path / "c", nodes=3, overrides=OVERRIDES) as cluster:
        bootstrap = cluster.bootstrap_servers
        code = brook(
            [
                "topics", "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                "--partitions", "1", "--replication-factor", "3",
                "--config", "cleanup.policy=compact",
                "--config", "segment.bytes=3000",
                "--config", "min.cleanable.dirty.ratio=0.01",
            ]
        )  # fmt: skip
        assert code == 0
        admin = AdminClient({"bootstrap.servers": bootstrap})
        leader, _ = wait_for(
            "a leader and a full ISR",
            lambda: p if (p := _partition(admin, topic))[0] > 0 and len(p[1]) == 3 else None,
        )
        # __transaction_state is created while every node is up (its replication factor)
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "app"})
        producer.init_transactions(60)
        follower = next(n for n in NODES if n != leader)
        other = next(n for n in NODES if n not in (leader, follower))
        cluster.kill(follower)
        admin = AdminClient({"bootstrap.servers": cluster.node(other).broker_address})
        wait_for(
            f"node {follower} out of the ISR",
            lambda: follower not in _partition(admin, topic)[1],
            timeout=60,
        )
        survivors = ",".join(cluster.node(n).broker_address for n in (leader, other))
        expected: dict[bytes, bytes] = {}
        for txn in range(20):
            commit = txn % 3 != 1
            values = {
                b"k%02d" % i: b"%s%d-%d" % (b"c" if commit else b"a", txn, i) for i in range(KEYS)
            }
            producer.begin_transaction()
            for key, value in values.items():
                producer.produce(topic, value, key=key, partition=0)
            assert producer.flush(60) == 0
            if commit:
                producer.commit_transaction(60)
                expected.update(values)
            else:
                producer.abort_transaction(60)
        before = _cleanings(cluster.node(leader).log_path, topic)
        filler = Producer({"bootstrap.servers": survivors, "acks": "all", "batch.size": 1000})
        for n in range(150):  # rolls the transactions' segments out of the active one
            key = b"f%03d" % n
            expected[key] = b"x" * 30
            filler.produce(topic, expected[key], key=key, partition=0)
        assert filler.flush(60) == 0
        leader_log = cluster.node(leader).log_path
        wait_for("the leader cleaning", lambda: _cleanings(leader_log, topic) > before)
        # the leader's cleaned log holds no aborted record (checked by _read)
        wait_for(
            "the leader's log without aborted records",
            lambda: (
                _read(cluster.node(leader).broker_address, topic, "read_uncommitted") == expected
            ),
            timeout=60,
        )
        # back, the follower copies the cleaned log and rejoins the ISR
        cluster.restart(follower)
        wait_for(
            f"node {follower} back in the ISR",
            lambda: follower in _partition(admin, topic)[1],
            timeout=90,
        )
        # the leader killed: the survivors serve the committed values only
        cluster.kill(leader)
        wait_for(
            "a new leader",
            lambda: (
                p[0] if (p := _partition(admin, topic))[0] in NODES and p[0] != leader else None
            ),
        )
        survivors = ",".join(cluster.node(n).broker_address for n in (follower, other))
        assert _read(survivors, topic, "read_committed") == expected
        cluster.stop()
        # the follower's copy: no aborted record, every transaction ended
        plog = PartitionLog.open(
            cluster.node(follower).directory / "data" / f"{topic}-0",
            LogConfig.from_topic_config({}),
            now_ms=0,
        )
        try:
            plog.on_high_watermark(plog.log_end_offset)
            assert plog.first_unstable_offset() is None
            values = []
            offset = plog.log_start_offset
            while offset < plog.log_end_offset:
                chunk = bytes(plog.read(offset, 1 << 20, None, True).records)
                for _, header in iter_batches(chunk):
                    offset = header.next_offset
                values += [r.value for _, r in iter_records(chunk)]
            assert values and not [v for v in values if v.startswith(b"a")]
        finally:
            plog.close_files()
