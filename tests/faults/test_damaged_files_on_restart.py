"""A real broker killed with kill -9, its newest segment torn at a random point and its offset
and time indexes garbled: the restarted broker serves every whole batch before the tear,
nothing after it, takes new records at the offset after the last kept one, and keeps serving
the topic's other partition untouched."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from rawclient import RawClient, create_topic, fetch, produce
from support import BrookProcess

from brook.protocol.batch import iter_batches
from brook.protocol.records import build_simple_batch, iter_records


def _values(c: RawClient, topic: str, partition: int) -> list[bytes]:
    values: list[bytes] = []
    offset = 0
    while True:
        part = fetch(c, topic, partition, offset).responses[0].partitions[0]
        assert part.error_code == 0
        records = list(iter_records(part.records))  # checks every CRC
        if not records:
            return values
        values += [r.value for _, r in records]
        offset = records[-1][1].offset + 1


@pytest.mark.parametrize("seed", range(3))
def test_torn_segment_and_garbled_indexes_after_kill_9(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    topic = "damaged"
    overrides = {"log.index.interval.bytes": "0", "log.segment.bytes": "6000"}
    with BrookProcess(tmp_path / "data", overrides) as broker:
        with RawClient(broker.bootstrap) as c:
            create_topic(c, topic, partitions=2)
            written: list[list[bytes]] = []
            for i in range(40):
                values = [
                    b"%d-%d-" % (i, j) + rng.randbytes(rng.randint(0, 200))
                    for j in range(rng.randint(1, 4))
                ]
                written.append(values)
                for p in (0, 1):
                    resp = produce(c, topic, p, build_simple_batch(values))
                    assert resp.responses[0].partition_responses[0].error_code == 0
        broker.kill()

        directory = broker.data_dir / f"{topic}-0"
        segments = sorted(directory.glob("*.log"))
        assert len(segments) >= 2
        newest = segments[-1]
        data = newest.read_bytes()
        ends = [pos + header.size for pos, header in iter_batches(data)]
        cut = rng.randint(1, len(data) - 1)
        newest.write_bytes(data[:cut])
        for suffix in (".index", ".timeindex"):
            for index in directory.glob(f"*{suffix}"):
                raw = bytearray(index.read_bytes())
                for _ in range(rng.randint(1, 3)):
                    if raw:
                        raw[rng.randrange(len(raw))] ^= rng.randint(1, 255)
                index.write_bytes(bytes(raw))

        batches_before = len(written) - len(ends)  # batches in the older, intact segments
        kept_batches = batches_before + sum(1 for end in ends if end <= cut)
        expected = [v for batch in written[:kept_batches] for v in batch]
        broker.start()
        with RawClient(broker.bootstrap) as c:
            assert _values(c, topic, 0) == expected
            assert _values(c, topic, 1) == [v for batch in written for v in batch]
            resp = produce(c, topic, 0, build_simple_batch([b"after"]))
            part = resp.responses[0].partition_responses[0]
            assert (part.error_code, part.base_offset) == (0, len(expected))
            assert _values(c, topic, 0) == [*expected, b"after"]
