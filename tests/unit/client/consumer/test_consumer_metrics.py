"""The consumer's metrics: Kafka's fetch-manager names, values from what was recorded."""

from __future__ import annotations

from brook.client.consumer.consumer_metrics import ConsumerMetrics
from brook.client.metrics import Metrics


def make() -> tuple[Metrics, ConsumerMetrics, list[float]]:
    clock = [1_000_000.0]
    registry = Metrics(30000, 2, time_ms=lambda: clock[0])
    return registry, ConsumerMetrics(registry, "c-1"), clock


def test_fetch_and_consumption_metrics() -> None:
    registry, metrics, clock = make()
    metrics.record_response(12.0, 4000, 0)
    metrics.record_response(4.0, 1000, 5)
    metrics.record_consumed("t", 30, 4000)
    metrics.record_consumed("t", 20, 0)  # the rest of a chunk: its bytes counted already
    metrics.record_consumed("u", 5, 1000)
    metrics.record_lag(70)
    metrics.record_lag(10)
    clock[0] += 10_000
    m = registry.snapshot()
    group = "consumer-fetch-manager-metrics"
    assert m[f"{group}:fetch-latency-avg:{{client-id=c-1}}"] == 8.0
    assert m[f"{group}:fetch-latency-max:{{client-id=c-1}}"] == 12.0
    assert m[f"{group}:fetch-total:{{client-id=c-1}}"] == 2
    assert m[f"{group}:fetch-size-avg:{{client-id=c-1}}"] == 2500.0
    assert m[f"{group}:fetch-throttle-time-max:{{client-id=c-1}}"] == 5.0
    assert m[f"{group}:records-consumed-total:{{client-id=c-1}}"] == 55
    assert m[f"{group}:bytes-consumed-total:{{client-id=c-1}}"] == 5000
    assert m[f"{group}:records-consumed-total:{{client-id=c-1, topic=t}}"] == 50
    assert m[f"{group}:bytes-consumed-total:{{client-id=c-1, topic=u}}"] == 1000
    assert m[f"{group}:records-lag-max:{{client-id=c-1}}"] == 70.0
    # 55 records over the elapsed part of the window: Kafka's Rate, not a plain mean.
    assert m[f"{group}:records-consumed-rate:{{client-id=c-1}}"] > 0


def test_session_counters_are_gauges() -> None:
    registry, metrics, _ = make()
    count = [3]
    metrics.add_session_counters({"incremental-fetch-total": lambda: float(count[0])})
    name = "brook-fetch-session-metrics:incremental-fetch-total:{client-id=c-1}"
    assert registry.snapshot()[name] == 3.0
    count[0] = 4
    assert registry.snapshot()[name] == 4.0
