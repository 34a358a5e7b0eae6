"""Storage recovery under damage: a log is written, the process "crashes" (files closed with no
flush, snapshot or clean-shutdown marker), then a segment, an index, the leader-epoch
checkpoint or a producer snapshot is cut or garbled at a random point. Reopening must keep
every whole batch before the damage, nothing at or after it, and consistent indexes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import pytest

from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.log.segment import LogSegment, segment_path
from brook.protocol.batch import LOG_OVERHEAD, read_header
from brook.protocol.records import build_simple_batch

NOW = 1_700_000_000_000
ITERATIONS = 40
# partitionLeaderEpoch (bytes 12-15 of a batch) is outside the CRC by the format's design, so
# that a leader can stamp it: a flipped epoch byte is not detectable damage.
EPOCH_FIELD = range(12, 16)


@dataclass(frozen=True)
class Written:
    base: int
    count: int
    epoch: int
    body: bytes  # attributes to the end, as stored
    segment: int  # base offset of the segment holding it
    position: int
    size: int
    producer: tuple[int, int, int] | None  # producer id, first and last sequence

    @property
    def next(self) -> int:
        return self.base + self.count


def _config(rng: random.Random) -> LogConfig:
    return LogConfig.from_topic_config(
        {
            "segment.bytes": rng.choice((1500, 4000, 100_000)),
            "index.interval.bytes": rng.choice((0, 300, 4096)),
        }
    )


def _write(directory: Path, rng: random.Random) -> tuple[PartitionLog, list[Written]]:
    """A log of random batches (sizes, codecs, epochs, idempotent producers), then a crash."""
    plog = PartitionLog.open(directory, _config(rng))
    epoch = 0
    sequences = {11: 0, 12: 0}
    appended = []
    for i in range(rng.randint(15, 45)):
        epoch += rng.random() < 0.15
        count = rng.randint(1, 5)
        values = [rng.randbytes(rng.randint(0, 250)) for _ in range(count)]
        producer = None
        kwargs: dict[str, int] = {}
        if rng.random() < 0.5:
            pid = rng.choice((11, 12))
            kwargs = {"producer_id": pid, "producer_epoch": 0, "base_sequence": sequences[pid]}
            producer = (pid, sequences[pid], sequences[pid] + count - 1)
            sequences[pid] += count
        batch = build_simple_batch(
            values, timestamp=NOW + rng.randint(0, 5000), codec=rng.choice((0, 1, 3)), **kwargs
        )
        result = plog.append_as_leader(batch, epoch, NOW + i)
        appended.append((result.first_offset, count, epoch, batch[21:], producer))
    plog.close_files()
    where = {}
    for segment in plog.segments():
        fresh = LogSegment(
            segment.dir, segment.base_offset, index_interval_bytes=0, max_index_size=10**6
        )
        for position, header in fresh.iter_headers():
            where[header.base_offset] = (segment.base_offset, position, header.size)
        fresh.close()
    return plog, [Written(b, c, e, body, *where[b], p) for b, c, e, body, p in appended]


def _read_all(plog: PartitionLog, max_bytes: int) -> list[tuple[int, int, int, bytes]]:
    batches = []
    offset = plog.log_start_offset
    while offset < plog.log_end_offset:
        data = plog.read(offset, max_bytes).records
        pos = 0
        while pos < len(data):
            header = read_header(data, pos)
            end = pos + header.batch_length + LOG_OVERHEAD
            batches.append(
                (
                    header.base_offset,
                    header.records_count,
                    header.partition_leader_epoch,
                    data[pos + 21 : end],
                )
            )
            offset = header.next_offset
            pos = end
    return batches


def _assert_indexes_consistent(plog: PartitionLog) -> None:
    for segment in plog.segments():
        batches = list(segment.iter_headers())
        assert sum(h.size for _, h in batches) == segment.size
        last_offset_at = {pos: h.last_offset for pos, h in batches}
        index = segment.offset_index
        assert index.path.stat().st_size == 8 * len(index)
        entries = [index.entry(i) for i in range(len(index))]
        for offset, position in entries:
            assert last_offset_at[position] == offset
        running_max, max_at = -1, {}
        for _, header in batches:
            running_max = max(running_max, header.max_timestamp)
            max_at[header.last_offset] = running_max
        times = segment.time_index
        assert times.path.stat().st_size == 12 * len(times)
        previous = -1
        for i in range(len(times)):
            timestamp, offset = times.entry(i)
            assert max_at[offset] == timestamp and timestamp > previous
            previous = timestamp
        assert segment.max_timestamp == running_max


def _expected_epochs(kept: list[Written]) -> list[tuple[int, int]]:
    epochs: list[tuple[int, int]] = []
    for w in kept:
        if not epochs or w.epoch > epochs[-1][0]:
            epochs.append((w.epoch, w.base))
    return epochs


def _reopen_and_check(plog: PartitionLog, kept: list[Written], rng: random.Random) -> None:
    recovered = PartitionLog.open(plog.dir, plog.config, had_clean_shutdown=False)
    try:
        expected_end = kept[-1].next if kept else 0
        assert recovered.log_end_offset == expected_end
        want = [(w.base, w.count, w.epoch, w.body) for w in kept]
        assert _read_all(recovered, rng.choice((1, 500, 1 << 20))) == want
        _assert_indexes_consistent(recovered)
        assert recovered.epoch_cache.entries() == _expected_epochs(kept)
        for pid in (11, 12):
            last = [w for w in kept if w.producer and w.producer[0] == pid]
            if not last or last[-1].producer is None:
                continue
            _, first_seq, last_seq = last[-1].producer
            retry = build_simple_batch(
                [b"r"] * (last_seq - first_seq + 1),
                timestamp=NOW,
                producer_id=pid,
                producer_epoch=0,
                base_sequence=first_seq,
            )
            result = recovered.append_as_leader(retry, 99, NOW)
            assert result.duplicate and result.first_offset == last[-1].base
        # the recovered log takes appends at its end and reopens cleanly
        appended = recovered.append_as_leader(build_simple_batch([b"after"]), 99, NOW)
        assert appended.first_offset == expected_end
        recovered.close()
        again = PartitionLog.open(plog.dir, plog.config, had_clean_shutdown=True)
        assert again.log_end_offset == expected_end + 1
        assert _read_all(again, 1 << 20)[:-1] == want
        again.close_files()
    finally:
        recovered.close_files()


def _garble(path: Path, rng: random.Random) -> None:
    data = bytearray(path.read_bytes())
    if not data or rng.random() < 0.5:
        path.write_bytes(bytes(data[: rng.randint(0, len(data))]))
        return
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] ^= rng.randint(1, 255)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("seed", range(ITERATIONS))
def test_torn_active_segment(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    plog, written = _write(tmp_path / "torn-0", rng)
    active = plog.segments()[-1]
    size = active.log_path.stat().st_size
    cut = rng.randint(0, size)
    with open(active.log_path, "r+b") as f:
        f.truncate(cut)
    kept = [w for w in written if w.segment != active.base_offset or w.position + w.size <= cut]
    _reopen_and_check(plog, kept, rng)


@pytest.mark.parametrize("seed", range(ITERATIONS))
def test_flipped_byte_in_a_segment(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    plog, written = _write(tmp_path / "flip-0", rng)
    victim = rng.choice(written)
    offset_in_batch = rng.choice([i for i in range(victim.size) if i not in EPOCH_FIELD])
    path = segment_path(plog.dir, victim.segment, ".log")
    with open(path, "r+b") as f:
        f.seek(victim.position + offset_in_batch)
        byte = f.read(1)[0]
        f.seek(victim.position + offset_in_batch)
        f.write(bytes([byte ^ rng.randint(1, 255)]))
    _reopen_and_check(plog, [w for w in written if w.base < victim.base], rng)


@pytest.mark.parametrize("seed", range(ITERATIONS))
def test_damaged_index_files(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    plog, written = _write(tmp_path / "index-0", rng)
    for segment in rng.sample(plog.segments(), rng.randint(1, len(plog.segments()))):
        suffix = rng.choice((".index", ".timeindex"))
        path = segment_path(plog.dir, segment.base_offset, suffix)
        if rng.random() < 0.2:
            path.unlink()
        else:
            _garble(path, rng)
    _reopen_and_check(plog, written, rng)


@pytest.mark.parametrize("seed", range(ITERATIONS))
def test_damaged_leader_epoch_checkpoint(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    plog, written = _write(tmp_path / "epochs-0", rng)
    path = plog.dir / "leader-epoch-checkpoint"
    if rng.random() < 0.2:
        path.unlink()
    else:
        _garble(path, rng)
    _reopen_and_check(plog, written, rng)


@pytest.mark.parametrize("seed", range(ITERATIONS))
def test_damaged_producer_snapshot(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    plog, written = _write(tmp_path / "snapshot-0", rng)
    snapshots = sorted(plog.dir.glob("*.snapshot"))
    for path in rng.sample(snapshots, rng.randint(0, len(snapshots))):
        _garble(path, rng)
    _reopen_and_check(plog, written, rng)


@pytest.mark.parametrize("seed", range(10))
def test_cut_index_after_a_clean_shutdown(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    plog, written = _write(tmp_path / "clean-0", rng)
    closed = PartitionLog.open(plog.dir, plog.config)
    closed.close()
    for segment in closed.segments():
        for suffix in (".index", ".timeindex"):
            path = segment_path(plog.dir, segment.base_offset, suffix)
            path.write_bytes(path.read_bytes()[: rng.randint(0, path.stat().st_size)])
    reopened = PartitionLog.open(plog.dir, plog.config, had_clean_shutdown=True)
    try:
        want = [(w.base, w.count, w.epoch, w.body) for w in written]
        assert _read_all(reopened, rng.choice((1, 700, 1 << 20))) == want
        _assert_indexes_consistent(reopened)
    finally:
        reopened.close_files()
