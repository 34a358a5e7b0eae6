"""Log compaction on a real broker: the cleaner keeps the latest record of each key at its
offset while the broker serves, consumers (Brook's poll loop and the range reads of the Spark
source) read across the gaps, tombstones go after delete.retention.ms, and
``__consumer_offsets`` stops growing with a group's commits, its offsets surviving a
restart."""

from __future__ import annotations

import time
from pathlib import Path

from broker_checks import eventually
from rawclient import RawClient, fetch
from support import BrookProcess

from brook import Consumer, Producer
from brook.client.admin import Admin, NewTopic
from brook.client.consumer import ConsumerRecord
from brook.protocol.batch import iter_batches
from brook.protocol.records import iter_records

CLEANER = {"log.cleaner.backoff.ms": "100"}
COMPACTED = {
    "cleanup.policy": "compact",
    "segment.bytes": "2000",
    "min.cleanable.dirty.ratio": "0.01",
}


def _create(bootstrap: str, topic: str, **configs: str) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, 1, 1, configs={**COMPACTED, **configs})])


def _produce(bootstrap: str, topic: str, entries: list[tuple[bytes, bytes | None]]) -> list[int]:
    """Offsets of ``entries`` (key, value), in order."""
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "batch.size": 1000}) as producer:
        futures = [producer.send(topic, value, key=key) for key, value in entries]
        producer.flush(30)
        return [f.result(30).offset for f in futures]


def _read_all(bootstrap: str, topic: str, end: int) -> list[ConsumerRecord]:
    """Every record below ``end``, polled from the beginning."""
    out: list[ConsumerRecord] = []
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([(topic, 0)])
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            out += c.poll(200)
            position = c.position((topic, 0))
            if position is not None and position >= end:
                break
    return [r for r in out if r.offset < end]


def _entries(rec: list[ConsumerRecord]) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(r.offset, r.key, r.value) for r in rec]


def test_consumers_read_the_latest_value_of_each_key_across_the_gaps(tmp_path: Path) -> None:
    with BrookProcess(tmp_path / "d", CLEANER) as broker:
        bootstrap = broker.bootstrap
        _create(bootstrap, "compacted")
        entries = [(b"k%02d" % (n % 20), b"v%04d" % n) for n in range(600)]
        offsets = _produce(bootstrap, "compacted", entries)
        assert offsets == list(range(600))
        # the cleaner runs while the broker serves: far fewer records than written remain
        assert eventually(lambda: len(_read_all(bootstrap, "compacted", 600)) < 200, 40)
        records = _entries(_read_all(bootstrap, "compacted", 600))
        written = dict(zip(offsets, entries, strict=True))
        # every record read is the one written at its offset, offsets increasing with gaps
        assert all(written[o] == (k, v) for o, k, v in records)
        assert [o for o, _, _ in records] == sorted({o for o, _, _ in records})
        # the latest value of every key is there
        latest = {k: (o, v) for o, (k, v) in written.items()}
        assert {k: (o, v) for o, k, v in records} == latest
        # Spark's range reads: a range that ends inside a gap stops there, without waiting
        gap = next(o for o in range(600) if o not in {r[0] for r in records})
        with Consumer({"bootstrap.servers": bootstrap}) as c:
            started = time.monotonic()
            ranged = [r for chunk in c.read_range(("compacted", 0), 0, gap) for r in chunk]
            assert time.monotonic() - started < 10
            whole = [r for chunk in c.read_range(("compacted", 0), 0, 600) for r in chunk]
        assert _entries(ranged) == [r for r in records if r[0] < gap]
        assert _entries(whole) == records
        assert "log cleaner 0 cleaned compacted-0" in broker.log_path.read_text()


def _stored(bootstrap: str, topic: str) -> list[tuple[int, bytes, bytes | None, int | None]]:
    """(offset, key, value, delete horizon of its batch) of every record the broker holds."""
    out = []
    offset = 0
    with RawClient(bootstrap) as c:
        while True:
            part = fetch(c, topic, 0, offset).responses[0].partitions[0]
            if not part.records:
                return out
            pos = 0
            for pos, header in iter_batches(part.records):
                batch = part.records[pos : pos + header.size]
                out += [
                    (r.offset, r.key, r.value, header.delete_horizon_ms)
                    for _, r in iter_records(batch)
                ]
                offset = header.next_offset


def test_tombstones_are_kept_until_delete_retention_and_go_after(tmp_path: Path) -> None:
    with BrookProcess(tmp_path / "d", CLEANER) as broker:
        bootstrap = broker.bootstrap
        _create(bootstrap, "deletes", **{"delete.retention.ms": "3000"})
        _produce(bootstrap, "deletes", [(b"gone", b"value"), (b"kept", b"value")])
        _produce(bootstrap, "deletes", [(b"gone", None)])
        filler = [(b"filler%d" % n, b"x" * 100) for n in range(40)]
        _produce(bootstrap, "deletes", filler)

        def keyed() -> list[tuple[bytes, bytes | None, int | None]]:
            return [(k, v, h) for _, k, v, h in _stored(bootstrap, "deletes") if b"filler" not in k]

        # the first cleaning drops the old value and keeps the tombstone, its batch marked
        # with a delete horizon (when the broker may drop it)
        assert eventually(
            lambda: [(k, v) for k, v, _ in keyed()] == [(b"kept", b"value"), (b"gone", None)], 30
        )
        horizon = keyed()[1][2]
        assert horizon is not None
        seen_before_horizon = time.time() * 1000 < horizon and keyed()[1][:2] == (b"gone", None)

        def tombstone_gone() -> bool:
            _produce(bootstrap, "deletes", filler)  # dirty records make the cleaner run again
            gone = [(k, v) for k, v, _ in keyed()] == [(b"kept", b"value")]
            # never before its horizon
            assert not gone or time.time() * 1000 >= horizon
            return gone

        assert eventually(tombstone_gone, 40)
        assert seen_before_horizon


def _offsets_topic_bytes(data: Path) -> int:
    return sum(f.stat().st_size for f in data.glob("__consumer_offsets-0/*.log"))


def _offsets_segments(data: Path) -> list[int]:
    return sorted(int(f.name.split(".")[0]) for f in data.glob("__consumer_offsets-0/*.log"))


def test_consumer_offsets_is_compacted(tmp_path: Path) -> None:
    data = tmp_path / "d"
    overrides = {
        **CLEANER,
        "offsets.topic.segment.bytes": "3000",
        "offsets.topic.num.partitions": "1",
    }
    with BrookProcess(data, overrides) as broker:
        bootstrap = broker.bootstrap
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic("input", 1, 1)])
        config = {"bootstrap.servers": bootstrap, "group.id": "g", "enable.auto.commit": "false"}
        with Consumer(config) as c:
            c.assign([("input", 0)])
            for n in range(400):
                c.commit({("input", 0): n})
            # 400 commit records of about 100 bytes each went in, in segments of 3000 bytes
            assert _offsets_segments(data)[-1] > 300
            # what is left is the active segment and a record or so per cleaned segment
            assert eventually(lambda: _offsets_topic_bytes(data) < 3000 + 1500, 40)
        broker.kill()
        broker.start()
        with Consumer(config) as c:
            committed = c.committed([("input", 0)])
        (value,) = committed.values()
        assert value is not None and value.offset == 399
