"""The producer partitioner: murmur2, KIP-794 sticky switching and weights, legacy and custom."""

from __future__ import annotations

import itertools
import logging
import random
import textwrap
from collections import Counter, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from brook.client.partitioner import (
    UNKNOWN_PARTITION,
    BuiltInPartitioner,
    ClusterView,
    InvalidPartitionError,
    LegacyStickyPartitioner,
    LegacyUniformStickyPartitioner,
    LoadStatsCollector,
    NodeLatencyTracker,
    Partitioner,
    aborts_on_new_batch,
    build_load_stats,
    load_partitioner,
    murmur2,
    node_latency_excluded,
    partition_for_key,
    select_partition,
    to_positive,
)
from brook.config.defs import ConfigError
from brook.protocol.batch import HEADER_SIZE

TOPIC = "t"


class FakeCluster:
    def __init__(self, count: int, unavailable: Iterable[int] = ()) -> None:
        self.count = count
        self.unavailable = set(unavailable)

    def partitions_for(self, topic: str) -> Sequence[int]:
        return list(range(self.count))

    def available_partitions_for(self, topic: str) -> Sequence[int]:
        return [p for p in range(self.count) if p not in self.unavailable]


class ScriptedRandom(random.Random):
    """Hands out the given 32-bit draws in order, so each choice in a test is known."""

    def __init__(self, draws: Iterable[int]) -> None:
        super().__init__(0)
        self.draws = deque(draws)

    def getrandbits(self, k: int) -> int:
        return self.draws.popleft()


# --------------------------------------------------------------------------------------------
# murmur2 and the keyed path
# --------------------------------------------------------------------------------------------

JAVA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
]


@pytest.mark.parametrize(("data", "expected"), JAVA_VECTORS)
def test_murmur2_matches_java_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@settings(max_examples=3000, deadline=None)
@given(st.binary(max_size=300))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    # kafka-python returns the same 32 bits unsigned.
    assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data)
    assert -(2**31) <= murmur2(data) < 2**31


def test_murmur2_bulk_random_keys_every_tail_length() -> None:
    rng = random.Random(794)
    for _ in range(5000):
        data = rng.randbytes(rng.randrange(0, 70))
        assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data)


def test_murmur2_accepts_buffers() -> None:
    data = b"a-little-bit-long-string"
    assert murmur2(bytearray(data)) == murmur2(memoryview(data)) == -985981536
    assert murmur2(b"") == murmur2(bytearray())


def test_to_positive_clears_the_sign_bit_rather_than_negating() -> None:
    assert to_positive(-1) == 0x7FFFFFFF
    assert to_positive(-(2**31)) == 0
    assert to_positive(-973932308) == 1173551340
    assert to_positive(5) == 5


def test_partition_for_key_uses_to_positive_not_python_modulo() -> None:
    # murmur2(b"21") is negative; Python's % of the signed value would pick another partition.
    assert partition_for_key(b"21", 7) == 1173551340 % 7
    assert partition_for_key(b"21", 7) != -973932308 % 7
    for key, _ in JAVA_VECTORS:
        for n in (1, 3, 10, 64):
            assert partition_for_key(key, n) == (kafka_python_murmur2(key) & 0x7FFFFFFF) % n


def test_partition_for_key_needs_partitions() -> None:
    with pytest.raises(ValueError, match="0 partitions"):
        partition_for_key(b"k", 0)


# --------------------------------------------------------------------------------------------
# select_partition: the producer's per-record decision
# --------------------------------------------------------------------------------------------


class FixedPartitioner:
    def __init__(self, result: object = 2) -> None:
        self.result = result
        self.calls: list[tuple[str, bytes | None, bytes | None]] = []

    def partition(
        self, topic: str, key: bytes | None, value: bytes | None, cluster: ClusterView
    ) -> int:
        self.calls.append((topic, key, value))
        return self.result  # type: ignore[return-value]

    def close(self) -> None:
        pass


def test_select_partition_order_of_precedence() -> None:
    cluster = FakeCluster(10, unavailable={0, 1, 2, 3, 4})
    custom = FixedPartitioner(2)
    assert select_partition(TOPIC, b"k", b"v", cluster, partition=7, partitioner=custom) == 7
    assert custom.calls == []
    assert select_partition(TOPIC, b"k", b"v", cluster, partitioner=custom) == 2
    assert custom.calls == [(TOPIC, b"k", b"v")]
    # Keys hash over all ten partitions even though five have no leader.
    assert select_partition(TOPIC, b"k", None, cluster) == partition_for_key(b"k", 10)
    assert select_partition(TOPIC, b"k", None, cluster, ignore_keys=True) == UNKNOWN_PARTITION
    assert select_partition(TOPIC, None, b"v", cluster) == UNKNOWN_PARTITION


@pytest.mark.parametrize("bad", [-1, -5, None, "3", 1.0, True])
def test_select_partition_rejects_a_bad_custom_result(bad: object) -> None:
    with pytest.raises(InvalidPartitionError, match=r"partitioner\.class .*FixedPartitioner"):
        select_partition(TOPIC, None, None, FakeCluster(3), partitioner=FixedPartitioner(bad))


# --------------------------------------------------------------------------------------------
# BuiltInPartitioner: byte accounting and switch rules
# --------------------------------------------------------------------------------------------


def test_first_peek_draws_a_partition_and_sticks() -> None:
    bip = BuiltInPartitioner(TOPIC, 1000, rng=ScriptedRandom([5]))
    cluster = FakeCluster(4, unavailable={1})
    info = bip.peek_current_partition(cluster)
    assert info.partition == [0, 2, 3][5 % 3]
    assert bip.peek_current_partition(cluster) is info
    assert info.produced_bytes == 0


def test_switch_at_exactly_batch_size_counting_the_batch_header() -> None:
    bip = BuiltInPartitioner(TOPIC, 1000, rng=ScriptedRandom([0, 1]))
    cluster = FakeCluster(3)
    info = bip.peek_current_partition(cluster)
    bip.update_partition_info(info, HEADER_SIZE + 400, cluster)  # a new batch: 461
    bip.update_partition_info(info, 400, cluster)
    bip.update_partition_info(info, 138, cluster)
    assert info.produced_bytes == 999
    assert not bip.is_partition_changed(info)
    bip.update_partition_info(info, 1, cluster)
    assert bip.is_partition_changed(info)
    new = bip.peek_current_partition(cluster)
    assert (new.partition, new.produced_bytes) == (1, 0)


def test_incomplete_batch_defers_the_switch_until_partition_changed() -> None:
    bip = BuiltInPartitioner(TOPIC, 1000, rng=ScriptedRandom([0, 2]))
    cluster = FakeCluster(3)
    info = bip.peek_current_partition(cluster)
    bip.update_partition_info(info, 1500, cluster, enable_switch=False)
    assert not bip.is_partition_changed(info)
    # The deque still ends in a batch that is not full: nothing happens.
    assert bip.partition_changed(info, all_batches_full=False, cluster=cluster) is False
    assert not bip.is_partition_changed(info)
    # That batch filled up: the held-back switch fires and the caller must retry.
    assert bip.partition_changed(info, all_batches_full=True, cluster=cluster) is True
    assert bip.peek_current_partition(cluster).partition == 2


def test_partition_changed_without_enough_bytes_keeps_the_partition() -> None:
    bip = BuiltInPartitioner(TOPIC, 1000, rng=ScriptedRandom([0]))
    cluster = FakeCluster(3)
    info = bip.peek_current_partition(cluster)
    bip.update_partition_info(info, 999, cluster, enable_switch=False)
    assert bip.partition_changed(info, all_batches_full=True, cluster=cluster) is False
    assert info.produced_bytes == 999


def test_hard_cap_at_twice_batch_size_switches_regardless() -> None:
    bip = BuiltInPartitioner(TOPIC, 1000, rng=ScriptedRandom([0, 1]))
    cluster = FakeCluster(3)
    info = bip.peek_current_partition(cluster)
    bip.update_partition_info(info, 1999, cluster, enable_switch=False)
    assert not bip.is_partition_changed(info)
    bip.update_partition_info(info, 1, cluster, enable_switch=False)
    assert bip.is_partition_changed(info)


def test_the_next_draw_may_repeat_the_same_partition() -> None:
    bip = BuiltInPartitioner(TOPIC, 10, rng=ScriptedRandom([4, 7]))
    cluster = FakeCluster(3)
    info = bip.peek_current_partition(cluster)
    bip.update_partition_info(info, 10, cluster)
    new = bip.peek_current_partition(cluster)
    assert new is not info and new.partition == info.partition == 1


def test_stale_info_is_reported_and_cannot_switch_again() -> None:
    bip = BuiltInPartitioner(TOPIC, 10, rng=ScriptedRandom([0, 1, 2]))
    cluster = FakeCluster(3)
    old = bip.peek_current_partition(cluster)
    bip.update_partition_info(old, 10, cluster)
    current = bip.peek_current_partition(cluster)
    assert bip.is_partition_changed(old)
    assert bip.partition_changed(old, all_batches_full=True, cluster=cluster) is True
    bip.update_partition_info(old, 100, cluster)
    assert bip.peek_current_partition(cluster) is current
    assert current.produced_bytes == 0


def test_records_with_a_known_partition_pass_none() -> None:
    bip = BuiltInPartitioner(TOPIC, 10, rng=ScriptedRandom([]))
    bip.update_partition_info(None, 100, FakeCluster(3))
    assert bip.partition_changed(None, all_batches_full=True, cluster=FakeCluster(3)) is False
    assert not bip.is_partition_changed(None)


def test_uniform_draw_without_any_leader_uses_all_partitions() -> None:
    bip = BuiltInPartitioner(TOPIC, 10, rng=ScriptedRandom([0xFFFFFFFF]))
    assert bip.peek_current_partition(FakeCluster(5, unavailable=range(5))).partition == (
        0x7FFFFFFF % 5
    )


def test_sticky_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="sticky_batch_size"):
        BuiltInPartitioner(TOPIC, 0)


# A minimal accumulator that follows the protocol of the module docstring. Batch sizes are
# estimated as the 61-byte header plus the records; a batch is full once the estimate reaches
# batch.size or a record did not fit (Java closes it for appends).


@dataclass
class Batch:
    capacity: int
    size: int = HEADER_SIZE
    records: int = 0
    closed: bool = False

    def try_append(self, record_size: int) -> bool:
        if self.closed or (self.records and self.size + record_size > self.capacity):
            self.closed = True
            return False
        self.size += record_size
        self.records += 1
        return True

    @property
    def full(self) -> bool:
        return self.closed or (self.records > 0 and self.size >= self.capacity)


@dataclass
class AppendResult:
    partition: int
    aborted: bool = False


@dataclass
class FakeAccumulator:
    batch_size: int
    rng: random.Random
    deques: dict[int, list[Batch]] = field(default_factory=dict)
    bips: dict[str, BuiltInPartitioner] = field(default_factory=dict)

    def _full(self, dq: list[Batch]) -> bool:
        return not dq or dq[-1].full

    def append(
        self,
        topic: str,
        partition: int,
        record_size: int,
        cluster: ClusterView,
        abort_on_new_batch: bool = False,
    ) -> AppendResult:
        bip = self.bips.setdefault(topic, BuiltInPartitioner(topic, self.batch_size, self.rng))
        while True:
            info = bip.peek_current_partition(cluster) if partition == UNKNOWN_PARTITION else None
            effective = info.partition if info is not None else partition
            dq = self.deques.setdefault(effective, [])
            if bip.partition_changed(info, self._full(dq), cluster):
                continue
            if dq:
                before = dq[-1].size
                if dq[-1].try_append(record_size):
                    appended = dq[-1].size - before
                    bip.update_partition_info(info, appended, cluster, self._full(dq))
                    return AppendResult(effective)
            if abort_on_new_batch:
                return AppendResult(effective, aborted=True)
            # Java drops the deque lock to allocate here, then checks again.
            if bip.partition_changed(info, self._full(dq), cluster):
                continue
            batch = Batch(self.batch_size)
            batch.try_append(record_size)
            dq.append(batch)
            bip.update_partition_info(info, batch.size, cluster, self._full(dq))
            return AppendResult(effective)


def send(
    acc: FakeAccumulator,
    cluster: ClusterView,
    record_size: int,
    key: bytes | None = None,
    partitioner: Partitioner | None = None,
) -> int:
    """Java's doSend around partition(), append and the onNewBatch retry."""
    partition = select_partition(TOPIC, key, None, cluster, partitioner=partitioner)
    abort = aborts_on_new_batch(partitioner)
    result = acc.append(TOPIC, partition, record_size, cluster, abort)
    if result.aborted:
        assert partitioner is not None
        partitioner.on_new_batch(TOPIC, cluster, partition)  # type: ignore[attr-defined]
        partition = select_partition(TOPIC, key, None, cluster, partitioner=partitioner)
        result = acc.append(TOPIC, partition, record_size, cluster)
    return result.partition


def runs(seq: Sequence[int]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for p in seq:
        if out and out[-1][0] == p:
            out[-1] = (p, out[-1][1] + 1)
        else:
            out.append((p, 1))
    return out


def test_switch_lines_up_with_batch_boundaries() -> None:
    # 100-byte records: a batch takes 9 (61 + 900 = 961 bytes). One batch is short of 1000, so
    # the switch waits for the second batch to be closed: 18 records per partition, no leftovers.
    acc = FakeAccumulator(1000, ScriptedRandom([0, 1, 2, 0, 1]))
    cluster = FakeCluster(3)
    placed = [send(acc, cluster, 100) for _ in range(4 * 18)]
    assert runs(placed) == [(0, 18), (1, 18), (2, 18), (0, 18)]
    assert [b.records for b in acc.deques[1]] == [9, 9]
    assert all(b.full for dq in acc.deques.values() for b in dq[:-1])


def test_switch_right_away_when_a_batch_fills_exactly() -> None:
    # 61 + 3 * 313 = 1000: the third record completes the batch and reaches batch.size at once.
    acc = FakeAccumulator(1000, ScriptedRandom([0, 1, 2, 0]))
    placed = [send(acc, FakeCluster(3), 313) for _ in range(9)]
    assert runs(placed) == [(0, 3), (1, 3), (2, 3)]


def test_keyed_records_leave_a_batch_open_until_the_hard_cap() -> None:
    cluster = FakeCluster(3)
    acc = FakeAccumulator(1000, ScriptedRandom([0, 1]))
    key = next(k for k in (bytes([i]) for i in range(256)) if partition_for_key(k, 3) == 0)
    # Two batches' worth of unkeyed records on partition 0 (9 + 9 records, 1922 bytes); then a
    # keyed record for partition 0 opens a third batch, so the deque never looks all full again.
    for _ in range(10):
        send(acc, cluster, 100)
    bip = acc.bips[TOPIC]
    info = bip.peek_current_partition(cluster)
    assert (info.partition, info.produced_bytes) == (0, 1122)
    placed = []
    for _ in range(8):
        placed.append(send(acc, cluster, 100))
    assert placed == [0] * 8 and info.produced_bytes == 1922
    send(acc, cluster, 100, key=key)  # opens batch 3 on partition 0: not counted, stays open
    assert not acc.deques[0][-1].full
    assert send(acc, cluster, 100) == 0  # 2022 bytes >= 2 x batch.size: switch despite it
    assert bip.peek_current_partition(cluster).partition == 1


# --------------------------------------------------------------------------------------------
# Adaptive weights: the cumulative frequency table
# --------------------------------------------------------------------------------------------


def test_cft_worked_example() -> None:
    stats = build_load_stats([0, 3, 1], [10, 11, 12], 3)
    assert stats is not None
    assert stats.cumulative_frequency_table == (4, 5, 8)
    assert [stats.pick(r) for r in range(8)] == [10, 10, 10, 10, 11, 12, 12, 12]
    assert [stats.pick(r + 8 * 1000) for r in range(8)] == [10, 10, 10, 10, 11, 12, 12, 12]


def test_cft_drives_next_partition() -> None:
    draws = [4, 3, 7, 5, 8 + 4, 0x80000000 | 4]  # the sign bit is dropped before the modulo
    bip = BuiltInPartitioner(TOPIC, 1, rng=ScriptedRandom(draws))
    bip.update_partition_load_stats([0, 3, 1], [10, 11, 12], 3)
    assert bip.load_stats_range_end() == 8
    cluster = FakeCluster(13)
    assert [bip.next_partition(cluster) for _ in draws] == [11, 10, 12, 12, 11, 11]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 7), min_size=2, max_size=9), st.data())
def test_cft_lookup_matches_expanded_weights_for_every_r(
    sizes: list[int], data: st.DataObject
) -> None:
    length = data.draw(st.integers(1, len(sizes)))
    ids = [100 + i for i in range(len(sizes))]
    stats = build_load_stats(list(sizes), ids, length)
    eligible = sizes[:length]
    if length == len(sizes) and len(set(eligible)) == 1:
        assert stats is None
        return
    assert stats is not None
    top = max(eligible) + 1
    expanded = [ids[i] for i, size in enumerate(eligible) for _ in range(top - size)]
    assert stats.range_end == len(expanded)
    assert [stats.pick(r) for r in range(stats.range_end)] == expanded


def test_load_stats_input_lists_are_not_modified() -> None:
    sizes, ids = [0, 3, 1], [0, 1, 2]
    build_load_stats(sizes, ids, 3)
    assert sizes == [0, 3, 1] and ids == [0, 1, 2]


@pytest.mark.parametrize(
    ("sizes", "length"),
    [
        (None, 0),  # no stats (adaptive off, or not every partition has a deque yet)
        ([1, 2, 3], 0),  # everything excluded
        ([4], 1),  # fewer than two deques
        ([2, 2, 2], 3),  # all equal and nothing excluded
        ([0, 0], 2),
    ],
)
def test_uniform_fallback(sizes: list[int] | None, length: int) -> None:
    ids = None if sizes is None else list(range(len(sizes)))
    assert build_load_stats(sizes, ids, length) is None
    bip = BuiltInPartitioner(TOPIC, 1)
    bip.update_partition_load_stats([0, 5], [0, 1], 2)
    assert bip.load_stats is not None
    bip.update_partition_load_stats(sizes, ids, length)
    assert bip.load_stats is None and bip.load_stats_range_end() is None


def test_exclusion_forces_adaptive_even_with_equal_queues() -> None:
    stats = build_load_stats([2, 2, 2], [5, 6, 7], 2)
    assert stats is not None
    assert (stats.cumulative_frequency_table, stats.partition_ids) == ((1, 2), (5, 6))
    lone = build_load_stats([3, 0], [8, 9], 1)
    assert lone is not None and {lone.pick(r) for r in range(50)} == {8}


def test_load_stats_argument_errors() -> None:
    with pytest.raises(ValueError, match="one id per queue size"):
        build_load_stats([1, 2], [0], 2)
    with pytest.raises(ValueError, match="exceeds"):
        build_load_stats([1, 2], [0, 1], 3)


def chi_square(counts: Counter[int], expected: dict[int, float]) -> float:
    return sum((counts[p] - e) ** 2 / e for p, e in expected.items())


def drive_switches(bip: BuiltInPartitioner, cluster: ClusterView, switches: int) -> Counter[int]:
    counts: Counter[int] = Counter()
    for _ in range(switches):
        info = bip.peek_current_partition(cluster)
        bip.update_partition_info(info, bip.sticky_batch_size, cluster)
        counts[bip.peek_current_partition(cluster).partition] += 1
    return counts


def test_equal_queues_share_switches_uniformly() -> None:
    partitions, switches = 6, 60_000
    bip = BuiltInPartitioner(TOPIC, 16384, rng=random.Random(3))
    bip.update_partition_load_stats([2] * partitions, list(range(partitions)), partitions)
    assert bip.load_stats is None
    counts = drive_switches(bip, FakeCluster(partitions), switches)
    expected = {p: switches / partitions for p in range(partitions)}
    # 5 degrees of freedom: 20.5 is the 0.1% tail.
    assert chi_square(counts, expected) < 20.5
    assert all(abs(counts[p] / switches - 1 / partitions) < 0.01 for p in range(partitions))


def test_skewed_queues_are_chosen_in_proportion_to_their_weights() -> None:
    sizes, switches = [0, 2, 5, 1], 64_000
    bip = BuiltInPartitioner(TOPIC, 16384, rng=random.Random(4))
    bip.update_partition_load_stats(list(sizes), [0, 1, 2, 3], 4)
    counts = drive_switches(bip, FakeCluster(4), switches)
    weights = [6 - s for s in sizes]  # 6, 4, 1, 5 out of 16
    expected = {p: switches * w / sum(weights) for p, w in enumerate(weights)}
    # 3 degrees of freedom: 16.3 is the 0.1% tail.
    assert chi_square(counts, expected) < 16.3
    assert counts[2] < counts[1] < counts[3] < counts[0]


def test_uniform_draw_skips_partitions_without_a_leader() -> None:
    bip = BuiltInPartitioner(TOPIC, 10, rng=random.Random(5))
    counts = drive_switches(bip, FakeCluster(5, unavailable={1, 3}), 3000)
    assert set(counts) == {0, 2, 4}


# --------------------------------------------------------------------------------------------
# What the sender gathers: availability timeout and queue lengths
# --------------------------------------------------------------------------------------------


def test_node_latency_excluded() -> None:
    assert not node_latency_excluded(10_000, 0, 0)  # 0 turns the check off
    assert not node_latency_excluded(105, 100, 5)  # must exceed, not reach
    assert node_latency_excluded(106, 100, 5)
    assert not node_latency_excluded(100, 100, 5)


def test_node_latency_tracker() -> None:
    off = NodeLatencyTracker(0)
    off.record(1, 100, can_drain=False)
    assert off.stats(1) is None and not off.excludes(1)

    tracker = NodeLatencyTracker(50)
    tracker.record(1, 1000, can_drain=False)  # first sighting starts both clocks now
    stats = tracker.stats(1)
    assert stats is not None and (stats.ready_time_ms, stats.drain_time_ms) == (1000, 1000)
    tracker.record(1, 1050, can_drain=False)
    assert not tracker.excludes(1)
    tracker.record(1, 1051, can_drain=False)
    assert tracker.excludes(1)
    tracker.record(1, 1060, can_drain=True)
    assert not tracker.excludes(1)
    assert not tracker.excludes(2)  # never seen
    with pytest.raises(ValueError):
        NodeLatencyTracker(-1)


def test_collector_stays_uniform_until_every_partition_has_a_deque() -> None:
    collector = LoadStatsCollector(num_deques=2, num_partitions=3)
    collector.add(0, True, 4)
    collector.add(1, True, 0)
    assert collector.result() == (None, None, 0)
    off = LoadStatsCollector(num_deques=3, num_partitions=3, adaptive=False)
    off.add(0, True, 4)
    assert off.result() == (None, None, 0)


def test_collector_skips_leaderless_and_takes_back_excluded_slots() -> None:
    collector = LoadStatsCollector(num_deques=5, num_partitions=5)
    collector.add(0, True, 3)
    collector.add(1, False, 9)  # no leader: not in the arrays at all
    collector.add(2, True, 2, node_excluded=True)  # slow node: slot taken back
    collector.add(3, True, 0, node_excluded=True)  # empty deque: stays eligible
    collector.add(4, True, 1)
    sizes, ids, length = collector.result()
    assert length == 3
    assert sizes is not None and ids is not None
    assert (sizes[:length], ids[:length]) == ([3, 0, 1], [0, 3, 4])
    bip = BuiltInPartitioner(TOPIC, 1)
    collector.publish(bip)
    assert bip.load_stats is not None
    assert bip.load_stats.partition_ids == (0, 3, 4)
    assert bip.load_stats.cumulative_frequency_table == (1, 5, 8)


def test_collector_with_a_leaderless_deque_is_adaptive_even_when_equal() -> None:
    collector = LoadStatsCollector(num_deques=3, num_partitions=3)
    collector.add(0, True, 1)
    collector.add(1, True, 1)
    collector.add(2, False, 1)
    bip = BuiltInPartitioner(TOPIC, 1)
    collector.publish(bip)
    assert bip.load_stats is not None and bip.load_stats.partition_ids == (0, 1)


def test_collector_refuses_more_deques_than_announced() -> None:
    collector = LoadStatsCollector(num_deques=1, num_partitions=1)
    collector.add(0, True, 1)
    with pytest.raises(ValueError):
        collector.add(1, True, 1)


# --------------------------------------------------------------------------------------------
# Legacy sticky partitioner (pre-KIP-794)
# --------------------------------------------------------------------------------------------


def test_legacy_sticks_until_a_new_batch_then_moves_to_another_partition() -> None:
    legacy = LegacyStickyPartitioner(rng=ScriptedRandom([0, 0, 0, 1]))
    cluster = FakeCluster(4)
    assert legacy.partition(TOPIC, None, b"v", cluster) == 0
    assert legacy.partition(TOPIC, None, b"v", cluster) == 0
    legacy.on_new_batch(TOPIC, cluster, 0)  # draws 0 twice (the current one), then 1
    assert legacy.partition(TOPIC, None, b"v", cluster) == 1


def test_legacy_ignores_a_new_batch_on_a_partition_it_already_left() -> None:
    legacy = LegacyStickyPartitioner(rng=ScriptedRandom([2]))
    cluster = FakeCluster(4)
    assert legacy.partition(TOPIC, None, None, cluster) == 2
    legacy.on_new_batch(TOPIC, cluster, 3)
    assert legacy.partition(TOPIC, None, None, cluster) == 2


def test_legacy_with_one_or_no_available_partition() -> None:
    one = LegacyStickyPartitioner(rng=ScriptedRandom([]))
    cluster = FakeCluster(4, unavailable={0, 1, 3})
    assert one.partition(TOPIC, None, None, cluster) == 2
    one.on_new_batch(TOPIC, cluster, 2)
    assert one.partition(TOPIC, None, None, cluster) == 2
    none = LegacyStickyPartitioner(rng=ScriptedRandom([0xFFFFFFFE]))
    assert none.partition(TOPIC, None, None, FakeCluster(4, unavailable=range(4))) == (
        0x7FFFFFFE % 4
    )


def test_legacy_keys() -> None:
    cluster = FakeCluster(6)
    assert LegacyStickyPartitioner().partition(TOPIC, b"key", None, cluster) == (
        partition_for_key(b"key", 6)
    )
    uniform = LegacyUniformStickyPartitioner(rng=ScriptedRandom([5]))
    assert uniform.partition(TOPIC, b"key", None, cluster) == 5
    assert uniform.partition(TOPIC, b"other", None, cluster) == 5


def test_legacy_switches_on_every_new_batch() -> None:
    # 400-byte records with batch.size 1000: two per batch, so every second record opens a new
    # batch, and each new batch moves to a different partition.
    legacy = LegacyStickyPartitioner(rng=random.Random(6))
    acc = FakeAccumulator(1000, random.Random(7))
    cluster = FakeCluster(4)
    placed = [send(acc, cluster, 400, partitioner=legacy) for _ in range(2000)]
    chunks = runs(placed)
    assert all(length == 2 for _, length in chunks)
    assert all(a != b for (a, _), (b, _) in itertools.pairwise(chunks))
    assert set(placed) == {0, 1, 2, 3}
    assert TOPIC not in acc.bips or acc.bips[TOPIC].load_stats is None


def test_legacy_keyed_new_batch_does_not_move_unkeyed_stickiness() -> None:
    legacy = LegacyStickyPartitioner(rng=ScriptedRandom([1]))
    cluster = FakeCluster(4)
    key = next(k for k in (bytes([i]) for i in range(256)) if partition_for_key(k, 4) == 3)
    assert legacy.partition(TOPIC, None, None, cluster) == 1
    legacy.on_new_batch(TOPIC, cluster, legacy.partition(TOPIC, key, None, cluster))
    assert legacy.partition(TOPIC, None, None, cluster) == 1


# --------------------------------------------------------------------------------------------
# partitioner.class loading
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec", [None, "", "  "])
def test_no_partitioner_class_means_built_in(spec: str | None) -> None:
    assert load_partitioner(spec) is None


@pytest.mark.parametrize(
    "spec",
    [
        "brook.client.partitioner:LegacyStickyPartitioner",
        "brook.client.partitioner.LegacyStickyPartitioner",
        LegacyStickyPartitioner,
    ],
)
def test_load_by_path_or_class(spec: str | type) -> None:
    loaded = load_partitioner(spec)
    assert type(loaded) is LegacyStickyPartitioner
    assert aborts_on_new_batch(loaded)


def test_kafka_class_names_map_to_legacy_partitioners(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="brook.client.partitioner"):
        default = load_partitioner("org.apache.kafka.clients.producer.internals.DefaultPartitioner")
        uniform = load_partitioner("org.apache.kafka.clients.producer.UniformStickyPartitioner")
    assert isinstance(default, LegacyStickyPartitioner) and default.hash_keys
    assert isinstance(uniform, LegacyUniformStickyPartitioner) and not uniform.hash_keys
    assert "DefaultPartitioner is deprecated" in caplog.text
    assert "partitioner.ignore.keys=true" in caplog.text


def test_instance_is_used_as_is() -> None:
    fixed = FixedPartitioner(1)
    assert load_partitioner(fixed) is fixed
    assert not aborts_on_new_batch(fixed)
    assert not aborts_on_new_batch(None)


def test_custom_partitioner_from_a_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "brook_custom_partitioner_mod.py").write_text(
        textwrap.dedent(
            """
            class EvenOnly:
                def configure(self, configs):
                    self.configs = configs

                def partition(self, topic, key, value, cluster):
                    return 2 * (len(value or b"") % 2)

                def close(self):
                    self.closed = True
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    loaded = load_partitioner(
        "brook_custom_partitioner_mod:EvenOnly", {"client.id": "c1", "batch.size": 10}
    )
    assert loaded is not None
    assert loaded.configs == {"client.id": "c1", "batch.size": 10}  # type: ignore[attr-defined]
    cluster = FakeCluster(4)
    assert select_partition(TOPIC, None, b"x", cluster, partitioner=loaded) == 2
    assert select_partition(TOPIC, None, b"xy", cluster, partitioner=loaded) == 0
    loaded.close()


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_such_module_for_brook:Thing", "cannot import module 'no_such_module_for_brook'"),
        ("brook.client.partitioner:NoSuchPartitioner", "has no attribute 'NoSuchPartitioner'"),
        ("brook.client.partitioner.NoSuchPartitioner", "has no attribute 'NoSuchPartitioner'"),
        ("JustAName", "expected 'module:Class' or 'module.Class'"),
        ("collections:OrderedDict", r"has no partition\(\) method"),
        ("brook.client.partitioner:BuiltInPartitioner", "cannot instantiate"),
    ],
)
def test_bad_partitioner_class(spec: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as raised:
        load_partitioner(spec)
    assert "partitioner.class" in str(raised.value)
    assert spec in str(raised.value)


def test_partitioner_without_close_is_rejected() -> None:
    class NoClose:
        def partition(self, topic: str, key: bytes | None, value: bytes | None, cluster: object):
            return 0

    with pytest.raises(ConfigError, match=r"partitioner\.class: it has no close\(\) method"):
        load_partitioner(NoClose)
