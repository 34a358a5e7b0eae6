"""The partition-switch rule KIP-794's diagnosis patches into Brook's producer
(bench/kip794_switch_rule.py): the rule the KIP measured must take effect on the producer's
real append path, where the accumulator counts a sticky partition's bytes itself and calls the
partitioner only when the shipped rule could switch."""

from __future__ import annotations

import random

import pytest

from bench import kip794_switch_rule
from brook.client.cluster import ClusterMetadata
from brook.client.partitioner import UNKNOWN_PARTITION, BuiltInPartitioner, NodeLatencyTracker
from brook.client.producer.accumulator import RecordAccumulator
from brook.client.producer.batch import encode_record_body
from brook.client.producer.buffer_pool import BufferPool
from brook.client.producer.record import RecordFuture

TOPIC = "t"
BATCH_SIZE = 1000
BODY = encode_record_body(None, b"x" * 100, None)  # 107 bytes in a batch, after 61 of header


class _Obj:
    __version__ = 12

    def __init__(self, **fields: object) -> None:
        self.__dict__.update(fields)


def three_nodes() -> ClusterMetadata:
    """Partition p led by node p + 1, as a Metadata response would say."""
    partitions = [
        _Obj(
            partition_index=p,
            leader_id=p + 1,
            leader_epoch=1,
            replica_nodes=[p + 1],
            isr_nodes=[p + 1],
            offline_replicas=[],
            error_code=0,
        )
        for p in range(3)
    ]
    response = _Obj(
        brokers=[_Obj(node_id=n, host="h", port=9000 + n, rack=None) for n in (1, 2, 3)],
        cluster_id="c",
        controller_id=1,
        topics=[
            _Obj(name=TOPIC, error_code=0, topic_id=None, is_internal=False, partitions=partitions)
        ],
    )
    cluster = ClusterMetadata()
    cluster.update(response, topics=[TOPIC])
    return cluster


def accumulator() -> RecordAccumulator:
    return RecordAccumulator(
        batch_size=BATCH_SIZE,
        linger_ms=0,
        delivery_timeout_ms=1000,
        codec=0,
        pool=BufferPool(1 << 20),
        adaptive=False,
        node_tracker=NodeLatencyTracker(0),
        partitioner_factory=lambda topic: BuiltInPartitioner(topic, BATCH_SIZE, random.Random(0)),
    )


def append(acc: RecordAccumulator, cluster: ClusterMetadata) -> None:
    result = acc.append(TOPIC, UNKNOWN_PARTITION, 0, BODY, -1, 100, None, cluster)
    assert isinstance(result, RecordFuture)


@pytest.mark.parametrize("rule", kip794_switch_rule.RULES)
def test_switch_at_batch_size_bytes_while_the_open_batch_is_not_full(
    rule: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The slow node's case: earlier batches of the sticky partition left (their requests in
    flight), batch.size bytes have been counted, and its open batch is not full."""
    if rule == "kip-2022":
        # Whatever the patch replaces is put back after the test.
        for name in ("__init__", "update_partition_info"):
            monkeypatch.setattr(BuiltInPartitioner, name, getattr(BuiltInPartitioner, name))
        kip794_switch_rule.use_kip_2022_rule()
    cluster = three_nodes()
    acc = accumulator()
    append(acc, cluster)
    bip = acc.partitioner(TOPIC)
    sticky = bip.current
    assert sticky is not None
    for _ in range(2):
        append(acc, cluster)
    # The sender takes the sticky partition's batch (3 records, 388 bytes counted).
    drained = acc.drain(cluster, {1, 2, 3}, 10_000, 1e12, None)
    assert sum(len(batches) for batches in drained.values()) == 1
    # Six records more in a new batch: 1,103 bytes counted, and the open batch holds 715
    # bytes of 1,000.
    for _ in range(6):
        append(acc, cluster)
    assert sticky.produced_bytes >= BATCH_SIZE
    assert acc.queue_lengths(TOPIC)[sticky.partition] == 1
    if rule == "kip-2022":
        # The KIP's rule: switch once batch.size bytes were counted, whatever the batch.
        assert bip.current is not sticky
    else:
        # Kafka's since KAFKA-14156: wait for the open batch to fill (or 2 x batch.size).
        assert bip.current is sticky
