"""Property tests of the partition log: any sequence of appends, rolls, reads, truncations,
retention, log start moves and reopenings (clean or after a crash) keeps every offset in
[log start, log end) readable in the batch that was appended for it, in order."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.protocol.batch import LOG_OVERHEAD, read_header
from brook.protocol.errors import KafkaError
from brook.protocol.records import build_simple_batch

NOW = 1_700_000_000_000
CODECS = (0, 1, 2, 3, 4)
Op = tuple[Any, ...]


@dataclass
class Batch:
    base: int
    count: int
    epoch: int
    body: bytes  # attributes to the end: what offset assignment leaves untouched

    @property
    def next(self) -> int:
        return self.base + self.count


@dataclass
class Model:
    """What the log must hold, kept by the test's own simple rules."""

    batches: list[Batch] = field(default_factory=list)
    log_start: int = 0
    log_end: int = 0
    epochs: list[tuple[int, int]] = field(default_factory=list)

    def append(self, batch: Batch) -> None:
        self.batches.append(batch)
        self.log_end = batch.next
        if not self.epochs or batch.epoch > self.epochs[-1][0]:
            # a new epoch replaces one that started at the same offset (after a log start move)
            self.forget_epochs_from(batch.base)
            self.epochs.append((batch.epoch, batch.base))

    def move_start(self, offset: int) -> None:
        self.log_start = max(self.log_start, offset)
        self.batches = [b for b in self.batches if b.next > self.log_start]
        below = [e for e in self.epochs if e[1] <= self.log_start]
        if below:
            self.epochs = [(below[-1][0], self.log_start)] + [
                e for e in self.epochs if e[1] > self.log_start
            ]

    def truncate(self, offset: int) -> None:
        if offset >= self.log_end:
            return
        if offset >= self.log_start:
            kept = [b for b in self.batches if b.next <= offset]
            removed = [b for b in self.batches if b.next > offset]
            self.batches = kept
            self.log_end = kept[-1].next if kept else removed[0].base
            self.forget_epochs_from(self.log_end)
            if self.log_end >= self.log_start:
                return
            offset = self.log_start
        self.batches, self.epochs = [], []
        self.log_start = self.log_end = offset

    def forget_epochs_from(self, offset: int) -> None:
        self.epochs = [e for e in self.epochs if e[1] < offset]


append_op = st.tuples(
    st.just("append"),
    st.integers(1, 6),  # records
    st.integers(0, 200),  # value size
    st.sampled_from(CODECS),
    st.integers(0, 1),  # leader epoch bump
)
ops = st.lists(
    st.one_of(
        append_op,
        append_op,
        append_op,
        st.tuples(st.just("read"), st.sampled_from((1, 150, 700, 1 << 20))),
        st.tuples(st.just("truncate"), st.floats(0, 1)),
        st.tuples(st.just("retention"), st.floats(0, 1)),
        st.tuples(st.just("log_start"), st.floats(0, 1)),
        st.tuples(st.just("flush"), st.floats(0, 1)),
        st.tuples(st.just("reopen"), st.booleans()),
    ),
    max_size=60,
)
configs = st.fixed_dictionaries(
    {
        "segment.bytes": st.sampled_from((400, 900, 100_000)),
        "index.interval.bytes": st.sampled_from((0, 100, 4096)),
        "retention.bytes": st.sampled_from((-1, 500, 2000)),
        "retention.ms": st.just(-1),
    }
)


def _within(model: Model, fraction: float) -> int:
    return model.log_start + int(fraction * (model.log_end - model.log_start))


def _check_read(plog: PartitionLog, model: Model, offset: int, max_bytes: int) -> None:
    data = plog.read(offset, max_bytes).records
    if offset == model.log_end:
        assert data == b""
        return
    index = next(i for i, b in enumerate(model.batches) if b.next > offset)
    pos = 0
    while pos < len(data):
        header = read_header(data, pos)
        expected = model.batches[index]
        assert header.base_offset == expected.base
        assert header.last_offset_delta + 1 == expected.count
        assert header.partition_leader_epoch == expected.epoch
        assert data[pos + 21 : pos + header.batch_length + LOG_OVERHEAD] == expected.body
        pos += header.batch_length + LOG_OVERHEAD
        index += 1
    assert pos == len(data) and pos > 0


def _check(plog: PartitionLog, model: Model) -> None:
    assert (plog.log_start_offset, plog.log_end_offset) == (model.log_start, model.log_end)
    assert plog.epoch_cache.entries() == model.epochs
    span = range(model.log_start, model.log_end + 1)
    offsets = span if len(span) <= 40 else [*span[:15], *span[-15:], *span[:: len(span) // 10]]
    for offset in offsets:
        _check_read(plog, model, offset, 1 << 20)
    # a sequential consumer with a small fetch size sees every batch once
    offset = model.log_start
    seen: list[int] = []
    while offset < model.log_end:
        data = plog.read(offset, 200).records
        pos = 0
        while pos < len(data):
            header = read_header(data, pos)
            seen.append(header.base_offset)
            offset = header.next_offset
            pos += header.size
    assert seen == [b.base for b in model.batches]


def _apply(op: Op, plog: PartitionLog, model: Model, state: dict[str, int]) -> PartitionLog:
    kind = op[0]
    if kind == "append":
        _, count, size, codec, bump = op
        state["epoch"] += bump
        values = [bytes([(state["n"] + i) % 251]) * size for i in range(count)]
        state["n"] += 1
        batch = build_simple_batch(values, timestamp=NOW + state["n"], codec=codec)
        if len(batch) > plog.config.segment_bytes:
            with pytest.raises(KafkaError):
                plog.append_as_leader(batch, state["epoch"], NOW)
            return plog
        result = plog.append_as_leader(batch, state["epoch"], NOW + state["n"])
        assert result.first_offset == model.log_end
        model.append(Batch(result.first_offset, count, state["epoch"], batch[21:]))
    elif kind == "read":
        _check_read(plog, model, model.log_start, op[1])
    elif kind == "truncate":
        target = _within(model, op[1])
        plog.truncate_to(target)
        model.truncate(target)
    elif kind == "retention":
        high_watermark = _within(model, op[1])
        plog.delete_old_segments(NOW * 2, high_watermark)
        assert model.log_start <= plog.log_start_offset <= max(high_watermark, model.log_start)
        model.move_start(plog.log_start_offset)
    elif kind == "log_start":
        target = _within(model, op[1])
        plog.maybe_increment_log_start_offset(target)
        model.move_start(target)
    elif kind == "flush":
        plog.flush(_within(model, op[1]))
    elif kind == "reopen":
        clean = op[1]
        if clean:
            plog.close()
        else:
            plog.close_files()
        plog = PartitionLog.open(
            plog.dir,
            plog.config,
            recovery_point=plog.recovery_point,
            log_start_offset=plog.log_start_offset,
            had_clean_shutdown=clean,
        )
        # as Kafka, loading drops an epoch that starts at the log end (it holds no data yet)
        model.forget_epochs_from(model.log_end)
    return plog


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(config=configs, operations=ops)
def test_reads_always_match_what_was_appended(config: dict[str, int], operations: list[Op]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        plog = PartitionLog.open(Path(tmp) / "prop-0", LogConfig.from_topic_config(config))
        model = Model()
        state = {"epoch": 0, "n": 0}
        try:
            for op in operations:
                plog = _apply(op, plog, model, state)
                _check(plog, model)
            follower = PartitionLog.open(Path(tmp) / "prop-1", plog.config)
            follower.truncate_fully_and_start_at(model.log_start)
            if model.batches:
                follower.truncate_fully_and_start_at(model.batches[0].base)
                offset = model.batches[0].base
                while offset < model.log_end:
                    data = plog.read(max(offset, model.log_start), 700).records
                    follower.append_as_follower(data)
                    offset = follower.log_end_offset
                assert follower.log_end_offset == model.log_end
            follower.close_files()
        finally:
            plog.close_files()
