"""confluent-kafka's transactional producer on a compacted topic the cleaner rewrites: once
cleaned, the partition holds no record of the aborted transaction, a read_committed consumer
(and a read_uncommitted one) sees each key's latest committed value and nothing else, the
abort marker goes after ``delete.retention.ms`` while the commit markers of transactions whose
records remain stay, and a consumer still reads the same afterwards."""

from __future__ import annotations

import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from rawclient import RawClient, create_topic, fetch
from support import BrookProcess
from txn_support import read_to_end

from brook.protocol.batch import BatchHeader, iter_batches
from brook.protocol.records import iter_records
from brook.protocol.txn_marker import read_marker

TOPIC = "compacted-txn"
KEYS = 10
CONFIGS = {
    "cleanup.policy": "compact",
    "segment.bytes": "2000",
    "min.cleanable.dirty.ratio": "0.01",
    "delete.retention.ms": "3000",  # a window wide enough to see a stamped marker
}


def _stored(
    bootstrap: str,
) -> tuple[dict[int, tuple[bytes, bytes]], list[tuple[BatchHeader, bool]]]:
    """What the broker holds: offset -> (key, value) of every data record, and each control
    batch with whether it commits."""
    rows: dict[int, tuple[bytes, bytes]] = {}
    markers: list[tuple[BatchHeader, bool]] = []
    offset = 0
    with RawClient(bootstrap) as c:
        while True:
            data = fetch(c, TOPIC, 0, offset).responses[0].partitions[0].records
            if not data:
                return rows, markers
            for pos, header in iter_batches(data):
                offset = header.next_offset
                if header.is_control:
                    markers.append((header, read_marker(data, pos).commit))
            for _, r in iter_records(data):  # control records skipped
                rows[r.offset] = (r.key, r.value)


def _read(bootstrap: str, level: str) -> list[tuple[int, bytes, bytes]]:
    """Every record to the partition's end (for read_committed, its last stable offset)."""
    return [(m.offset(), m.key(), m.value()) for m in read_to_end(bootstrap, TOPIC, level=level)]


class Filler:
    """Records of keys of their own, so that the transactions' segments roll and get
    cleaned again."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer(
            {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 1000}
        )
        self.written: dict[bytes, bytes] = {}

    def write(self, n: int) -> None:
        errors: list[object] = []

        def delivered(err: object, _msg: object) -> None:
            if err is not None:
                errors.append(err)

        for _ in range(n):
            key = b"f%05d" % len(self.written)
            self.written[key] = b"x" * 40
            self.producer.produce(
                TOPIC, self.written[key], key=key, partition=0, on_delivery=delivered
            )
        assert self.producer.flush(30) == 0
        assert not errors, errors


def test_a_read_committed_consumer_of_a_cleaned_topic(tmp_path: Path) -> None:
    with BrookProcess(tmp_path / "d", {"log.cleaner.backoff.ms": "100"}) as broker:
        bootstrap = broker.bootstrap
        with RawClient(bootstrap) as c:
            create_topic(c, TOPIC, partitions=1, configs=CONFIGS)
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "app"})
        producer.init_transactions(30)

        def transaction(values: dict[bytes, bytes], commit: bool) -> None:
            producer.begin_transaction()
            for key, value in values.items():
                producer.produce(TOPIC, value, key=key, partition=0)
            assert producer.flush(30) == 0
            if commit:
                producer.commit_transaction(30)
            else:
                producer.abort_transaction(30)

        first = {b"k%d" % i: b"c1-%d" % i for i in range(KEYS)}
        transaction(first, commit=True)
        aborted = {b"k%d" % i: b"a-%d" % i for i in range(KEYS)}
        aborted.update({b"ghost%d" % i: b"a-ghost" for i in range(KEYS)})
        transaction(aborted, commit=False)
        third = {b"k%d" % i: b"c3-%d" % i for i in range(KEYS // 2)}
        transaction(third, commit=True)
        filler = Filler(bootstrap)
        expected = {**first, **third}

        # The cleaner removes the aborted records and the older committed values.
        deadline = time.monotonic() + 60
        while True:
            filler.write(60)
            rows, markers = _stored(bootstrap)
            values = [v for _, v in rows.values()]
            if not [v for v in values if v.startswith((b"a-", b"c1-0"))]:
                break
            assert time.monotonic() < deadline, (values[:40], markers)
        want = {**expected, **filler.written}
        for level in ("read_committed", "read_uncommitted"):
            seen = _read(bootstrap, level)
            # no aborted record, no control record, each key's latest value at its offset
            assert {k: v for _, k, v in seen} == want
            below = [(k, v) for o, k, v in seen if k.startswith(b"k")]
            assert sorted(below) == sorted(expected.items())
            assert all(rows[o] == (k, v) for o, k, v in seen)

        # The abort marker goes after delete.retention.ms (at a later cleaning); the two
        # commit markers stay: records of both transactions remain.
        deadline = time.monotonic() + 60
        read_stamped = False
        while True:
            filler.write(60)
            rows, markers = _stored(bootstrap)
            if [commit for _, commit in markers] == [True, True]:
                break
            if not read_stamped and any(h.delete_horizon_ms for h, _ in markers):
                # a marker with its delete horizon (negative timestamp delta) reads as any
                seen = _read(bootstrap, "read_committed")
                assert {k: v for _, k, v in seen} == {**expected, **filler.written}
                read_stamped = True
            assert time.monotonic() < deadline, markers
        assert read_stamped
        want = {**expected, **filler.written}
        seen = _read(bootstrap, "read_committed")
        assert {k: v for _, k, v in seen} == want
        assert len(seen) == len(want)


def _offsets_log(bootstrap: str) -> dict[int, bytes]:
    """offset -> value of every data record ``__consumer_offsets-0`` holds."""
    rows: dict[int, bytes] = {}
    offset = 0
    with RawClient(bootstrap) as c:
        while True:
            data = fetch(c, "__consumer_offsets", 0, offset).responses[0].partitions[0].records
            if not data:
                return rows
            for _, header in iter_batches(data):
                offset = header.next_offset
            for _, r in iter_records(data):
                rows[r.offset] = r.value or b""


def test_transactional_offsets_survive_the_cleaning_of_consumer_offsets(tmp_path: Path) -> None:
    data = tmp_path / "d"
    overrides = {
        "log.cleaner.backoff.ms": "100",
        "offsets.topic.segment.bytes": "3000",
        "offsets.topic.num.partitions": "1",
    }
    with BrookProcess(data, overrides) as broker:
        bootstrap = broker.bootstrap
        with RawClient(bootstrap) as c:
            create_topic(c, "input", partitions=1)
            create_topic(c, "output", partitions=1)
        group = Consumer({"bootstrap.servers": bootstrap, "group.id": "etl"})
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "etl"})
        producer.init_transactions(30)
        committed = -1
        for n in range(60):
            # every third transaction is aborted, its offset far ahead of the committed ones
            commit = n % 3 != 2
            offset = n if commit else 100_000 + n
            producer.begin_transaction()
            producer.produce("output", b"%d" % n, partition=0)
            producer.send_offsets_to_transaction(
                [TopicPartition("input", 0, offset)], group.consumer_group_metadata(), 30
            )
            if commit:
                producer.commit_transaction(30)
                committed = offset
            else:
                producer.abort_transaction(30)
        assert committed == 58  # the last transaction (59) was aborted
        # Other groups' commits roll __consumer_offsets past the transactions' segments.
        other = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "other", "enable.auto.commit": False}
        )
        deadline = time.monotonic() + 60
        n = 0
        while [v for v in _offsets_log(bootstrap).values() if b"\x00\x01\x86" in v]:
            # (an aborted offset, 100_000 + n, is 0x0186xx: still stored)
            assert time.monotonic() < deadline, "the aborted offsets were not cleaned"
            for _ in range(20):
                other.commit(offsets=[TopicPartition("input", 0, n)], asynchronous=False)
                n += 1
        other.close()
        group.close()
        broker.kill()
        broker.start()
        reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "etl"})
        try:
            (tp,) = reader.committed([TopicPartition("input", 0)], 30)
        finally:
            reader.close()
        assert tp.offset == committed
