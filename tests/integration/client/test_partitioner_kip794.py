"""KIP-794 through the real produce path: unkeyed records spread uniformly over many switches;
the adaptive partitioner sends less to a partition whose broker answers slowly; with
partitioner.availability.timeout.ms that broker's partitions leave the draw altogether.

One Brook process plays three nodes behind a proxy (tests/multinode_proxy.py) that delays one
node's Produce responses; murmur2 and the switching rules themselves are unit-tested in
tests/unit/client/test_partitioner.py."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from typing import Any

from multinode_proxy import MultiNodeProxy
from readback import create_topic
from support import BrookProcess

from brook import Producer

SLOW_NODE = 1  # leads partition 0 behind the proxy
# With 5 requests in flight, a 250 ms answer lets the slow node take ~20 batches/s, well
# below its fair share at the rate sent: its queue grows and its connection stays full.
DELAY_MS = 250
RECORD = b"x" * 200


def produce_at_rate(
    producer: Producer, topic: str, rate: int, seconds: float, probe: Any = None
) -> list[int]:
    """Send unkeyed records at ``rate`` per second; returns each record's partition."""
    futures = []
    total = int(rate * seconds)
    start = time.monotonic()
    while len(futures) < total:
        due = min(total, int((time.monotonic() - start) * rate) + 1)
        while len(futures) < due:
            futures.append(producer.send(topic, RECORD))
        if probe is not None:
            probe()
        time.sleep(0.005)
    producer.flush(60)
    return [f.result(0).partition for f in futures]


def test_unkeyed_records_spread_uniformly_over_many_switches(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    create_topic(brook_session.bootstrap, unique_topic, 6)
    config = {"bootstrap.servers": brook_session.bootstrap, "batch.size": 2048}
    with Producer(config) as producer:
        futures = [producer.send(unique_topic, b"y" * 100) for _ in range(24000)]
        producer.flush(60)
        partitions = [f.result(0).partition for f in futures]
    switches = sum(1 for a, b in itertools.pairwise(partitions) if a != b)
    assert switches > 500
    counts = Counter(partitions)
    assert sorted(counts) == list(range(6))
    mean = len(partitions) / 6
    assert all(abs(n - mean) < 0.25 * mean for n in counts.values()), counts


def slow_cluster_config(proxy: MultiNodeProxy, **extra: Any) -> dict[str, Any]:
    return {
        "bootstrap.servers": proxy.bootstrap,
        "batch.size": 4096,
        "linger.ms": 0,
        **extra,
    }


def test_adaptive_partitioning_skews_away_from_a_slow_broker(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    create_topic(brook_session.bootstrap, unique_topic, 3)
    with MultiNodeProxy(brook_session.bootstrap, 3, {SLOW_NODE: DELAY_MS}) as proxy:
        with Producer(slow_cluster_config(proxy)) as producer:
            producer.partitions_for(unique_topic)
            partitions = produce_at_rate(producer, unique_topic, 4000, 3)
        assert proxy.produce_requests[SLOW_NODE] > 0
    counts = Counter(partitions)
    share = counts[0] / len(partitions)
    # Uniform would give each partition a third; the slow one gets far less.
    assert share < 0.2, counts
    assert counts[1] > 2 * counts[0] and counts[2] > 2 * counts[0], counts


def test_availability_timeout_takes_the_slow_brokers_partitions_out_of_the_draw(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    create_topic(brook_session.bootstrap, unique_topic, 3)
    observed: dict[str, list[Any]] = {"excluded": [], "ids": []}
    with MultiNodeProxy(brook_session.bootstrap, 3, {SLOW_NODE: DELAY_MS}) as proxy:
        config = slow_cluster_config(proxy, **{"partitioner.availability.timeout.ms": 20})
        with Producer(config) as producer:
            producer.partitions_for(unique_topic)
            core = producer._core
            bip = core.accumulator.partitioner(unique_topic)

            def probe() -> None:
                observed["excluded"].append(core.tracker.excludes(SLOW_NODE))
                stats = bip.load_stats
                if core.tracker.excludes(SLOW_NODE) and stats is not None:
                    observed["ids"].append(stats.partition_ids)

            partitions = produce_at_rate(producer, unique_topic, 4000, 3, probe)
    assert any(observed["excluded"]), "the slow node was never excluded"
    assert not all(observed["excluded"])
    # While excluded (with batches queued), partition 0 is out of the weighted draw.
    assert any(0 not in ids for ids in observed["ids"])
    counts = Counter(partitions)
    assert counts[0] / len(partitions) < 0.2, counts


def test_without_the_availability_timeout_no_node_is_excluded(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    create_topic(brook_session.bootstrap, unique_topic, 3)
    seen: list[bool] = []
    with (
        MultiNodeProxy(brook_session.bootstrap, 3, {SLOW_NODE: DELAY_MS}) as proxy,
        Producer(slow_cluster_config(proxy)) as producer,
    ):
        producer.partitions_for(unique_topic)
        produce_at_rate(
            producer,
            unique_topic,
            2000,
            1,
            lambda: seen.append(producer._core.tracker.excludes(SLOW_NODE)),
        )
    assert seen and not any(seen)
