"""RecordAccumulator: appends (KIP-794 byte counting through the real append protocol),
ready/drain decisions, memory, expiry, re-enqueue order, and concurrent appends."""

from __future__ import annotations

import random
import threading
from collections import deque

import pytest

from brook.client.cluster import ClusterMetadata
from brook.client.partitioner import UNKNOWN_PARTITION, BuiltInPartitioner, NodeLatencyTracker
from brook.client.producer.accumulator import ABORTED, NeedMemory, RecordAccumulator
from brook.client.producer.batch import encode_record_body
from brook.client.producer.buffer_pool import BufferPool
from brook.client.producer.errors import ProducerClosedError
from brook.client.producer.idempotence import IdempotenceManager
from brook.client.producer.record import RecordFuture
from brook.protocol.batch import HEADER_SIZE

TOPIC = "t"


class Response:
    """The fields of a Metadata response ClusterMetadata.update reads."""

    def __init__(self, leaders: dict[int, int], epoch: int = 3) -> None:
        self.brokers = [_Obj(node_id=n, host="h", port=9000 + n, rack=None) for n in (1, 2)]
        self.cluster_id = "c"
        self.controller_id = 1
        parts = [
            _Obj(
                partition_index=p,
                leader_id=leader,
                leader_epoch=epoch,
                replica_nodes=[leader],
                isr_nodes=[leader],
                offline_replicas=[],
                error_code=0,
            )
            for p, leader in leaders.items()
        ]
        self.topics = [
            _Obj(name=TOPIC, error_code=0, topic_id=None, is_internal=False, partitions=parts)
        ]


class _Obj:
    __version__ = 12

    def __init__(self, **fields: object) -> None:
        self.__dict__.update(fields)


def cluster(leaders: dict[int, int] | None = None) -> ClusterMetadata:
    c = ClusterMetadata()
    response = Response(leaders or {0: 1, 1: 1, 2: 2})
    type(response).__version__ = 12  # type: ignore[attr-defined]
    c.update(response, topics=[TOPIC])
    return c


class Draws(random.Random):
    def __init__(self, draws: list[int]) -> None:
        super().__init__(0)
        self.draws = deque(draws)

    def getrandbits(self, k: int) -> int:
        return self.draws.popleft() if self.draws else 0


def accumulator(
    batch_size: int = 1000,
    linger_ms: float = 5,
    memory: int = 1 << 20,
    draws: list[int] | None = None,
    **extra: object,
) -> RecordAccumulator:
    factory = None
    if draws is not None:
        rng = Draws(draws)
        factory = lambda topic: BuiltInPartitioner(topic, max(1, batch_size), rng)  # noqa: E731
    return RecordAccumulator(
        batch_size=batch_size,
        linger_ms=linger_ms,
        delivery_timeout_ms=extra.pop("timeout", 1000),
        codec=0,
        pool=BufferPool(memory),
        adaptive=bool(extra.pop("adaptive", True)),
        node_tracker=NodeLatencyTracker(0),
        partitioner_factory=factory,
    )


BODY = encode_record_body(None, b"x" * 100, None)


def append(
    acc: RecordAccumulator,
    c: ClusterMetadata,
    partition: int = UNKNOWN_PARTITION,
    body: bytes = BODY,
) -> RecordFuture:
    result = acc.append(TOPIC, partition, 0, body, -1, 100, None, c)
    assert isinstance(result, RecordFuture)
    return result


def test_sticky_partition_switches_after_batch_size_estimated_bytes() -> None:
    c = cluster()
    acc = accumulator(batch_size=1000, draws=[0, 1, 2])
    record = len(BODY) + 3  # length prefix, attributes, two 1-byte deltas
    partitions = []
    for _ in range(20):
        append(acc, c)
        partitions.append(acc.queue_lengths(TOPIC))
    # The first batch holds 8 records (61 + 8 x 107 = 917; a ninth would pass 1000), is then
    # full at 917 estimated bytes < 1000: the switch waits for 1000 bytes, so the ninth record
    # opens a second batch on partition 0 (61 more bytes counted), and then it switches.
    lengths = acc.queue_lengths(TOPIC)
    assert record == 107
    assert lengths[0] == 2 and lengths[1] >= 1
    bip = acc.partitioner(TOPIC)
    assert bip.peek_current_partition(c).partition == 1


def test_keyed_or_explicit_partitions_bypass_the_sticky_partitioner() -> None:
    c = cluster()
    acc = accumulator(draws=[2])
    append(acc, c, partition=1)
    assert acc.queue_lengths(TOPIC) == {1: 1}
    assert acc.partitioner(TOPIC).load_stats is None


def test_ready_waits_for_linger_or_a_full_batch() -> None:
    c = cluster()
    acc = accumulator(batch_size=1000, linger_ms=50)
    append(acc, c, partition=0)
    created = next(iter(acc.incomplete)).created_ms
    check = acc.ready(c, created + 10)
    assert check.nodes == set() and check.next_delay_ms == pytest.approx(40)
    assert acc.ready(c, created + 50).nodes == {1}
    for _ in range(10):
        append(acc, c, partition=2)  # fills partition 2's first batch
    assert acc.ready(c, created + 1).nodes == {2}
    acc.begin_flush()
    assert acc.ready(c, created + 1).nodes == {1, 2}
    acc.end_flush()


def test_ready_reports_topics_without_a_leader() -> None:
    c = cluster({0: -1, 1: 1, 2: 2})
    acc = accumulator(linger_ms=0)
    append(acc, c, partition=0)
    check = acc.ready(c, 1e12)
    assert check.nodes == set() and check.unknown_leader_topics == {TOPIC}


def test_drain_takes_one_batch_per_partition_within_max_size() -> None:
    c = cluster({0: 1, 1: 1, 2: 1})
    acc = accumulator(batch_size=300, linger_ms=0)
    for p in (0, 0, 0, 0, 1, 1, 2):
        append(acc, c, partition=p)
    drained = acc.drain(c, {1}, 10_000, 1e12, None)
    assert sorted(b.tp[1] for b in drained[1]) == [0, 1, 2]
    assert all(b.closed for b in drained[1])
    small = acc.drain(c, {1}, 1, 1e12, None)  # the first batch always goes
    assert len(small[1]) == 1


def test_need_memory_then_append_with_the_reservation() -> None:
    c = cluster()
    acc = accumulator(batch_size=1000, memory=1500)
    append(acc, c, partition=0)
    result = acc.append(TOPIC, 1, 0, BODY, -1, 100, None, c)
    assert isinstance(result, NeedMemory) and result.size == 1000
    assert acc.pool.available == 500
    batch = next(iter(acc.incomplete))
    acc.deallocate(batch)
    acc.pool.allocate(result.size, 100)
    assert isinstance(acc.append(TOPIC, 1, 0, BODY, -1, 100, None, c, reserved=1000), RecordFuture)
    assert acc.pool.available == 500


def test_abort_on_new_batch_stops_before_creating_one() -> None:
    c = cluster()
    acc = accumulator()
    assert acc.append(TOPIC, 0, 0, BODY, -1, 100, None, c, abort_on_new_batch=True) is ABORTED
    assert acc.queue_lengths(TOPIC) == {0: 0}
    append(acc, c, partition=0)
    # An open batch still takes the record without aborting.
    assert isinstance(
        acc.append(TOPIC, 0, 0, BODY, -1, 100, None, c, abort_on_new_batch=True), RecordFuture
    )


def test_expired_batches_leave_their_deque() -> None:
    c = cluster()
    acc = accumulator(timeout=100)
    append(acc, c, partition=0)
    created = next(iter(acc.incomplete)).created_ms
    assert acc.expired_batches(created + 99) == []
    assert acc.next_expiry_delay(created + 40) == pytest.approx(60)
    expired = acc.expired_batches(created + 100)
    assert len(expired) == 1 and acc.queue_lengths(TOPIC) == {0: 0}


def test_reenqueue_keeps_sequence_order_at_the_head() -> None:
    c = cluster({0: 1, 1: 1, 2: 1})
    acc = accumulator(batch_size=200, linger_ms=0)
    idem = IdempotenceManager()
    idem.set_producer_id(9, 0)
    for _ in range(3):
        append(acc, c, partition=0)
    first = acc.drain(c, {1}, 10_000, 1e12, idem)[1][0]
    second = acc.drain(c, {1}, 10_000, 1e12, idem)[1][0]
    assert (first.base_sequence, second.base_sequence) == (0, 1)
    acc.reenqueue(second, 1e12, 100)
    acc.reenqueue(first, 1e12, 100)
    state = acc._topics[TOPIC].deques[0].batches
    assert [b.base_sequence for b in state] == [0, 1, -1]
    # Retried batches go one at a time, the first in line first.
    assert idem.should_stop_drain(second) and not idem.should_stop_drain(first)


def test_concurrent_appends_lose_and_duplicate_nothing() -> None:
    c = cluster()
    acc = accumulator(batch_size=2000, memory=1 << 30)
    futures: list[RecordFuture] = []
    lock = threading.Lock()

    def worker(n: int) -> None:
        mine = [
            append(acc, c, body=encode_record_body(None, f"{n}-{i}".encode(), None))
            for i in range(2000)
        ]
        with lock:
            futures.extend(mine)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    drained = []
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        for batches in acc.drain(c, {1, 2}, 1 << 20, 1e12, None).values():
            drained.extend(batches)
    for t in threads:
        t.join()
    drained.extend(acc.remove_all_queued())
    assert sum(b.count for b in drained) == 8000 == len(futures)
    assert len({id(f) for f in futures}) == 8000
    assert HEADER_SIZE < max(b.estimated_size() for b in drained) <= 2000


def test_appends_fail_once_the_accumulator_is_closed() -> None:
    c = cluster()
    acc = accumulator()
    append(acc, c, partition=0)
    acc.closed = True
    with pytest.raises(ProducerClosedError):
        acc.append(TOPIC, 0, 0, BODY, -1, 100, None, c)
    # Queued batches become sendable at once (no linger) while closing.
    created = next(iter(acc.incomplete)).created_ms
    assert acc.ready(c, created).nodes == {1}
