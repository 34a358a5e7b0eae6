"""Kafka's latency statistics and throttle, as the producer perf test keeps them."""

from __future__ import annotations

from brook.cli.producer_perf_test import Stats, ThroughputThrottler


def test_stats_percentiles_follow_kafka() -> None:
    stats = Stats(10)
    for latency in range(10, 0, -1):  # 10, 9, ..., 1
        stats.record(latency, 100, stats.start)
    line = stats.total_line()
    # Sorted 1..10: index int(0.5*10)=5 -> 6, int(0.95*10)=9 -> 10.
    assert "5.50 ms avg latency, 10.00 ms max latency, 6 ms 50th, 10 ms 95th, 10 ms 99th" in line


def test_throttler_decisions() -> None:
    throttler = ThroughputThrottler(100, start_ms=0)
    assert not throttler.should_throttle(50, 1000)  # 50 a second: below the target
    assert throttler.should_throttle(200, 1000)
    assert not ThroughputThrottler(-1, 0).should_throttle(10**9, 1)
