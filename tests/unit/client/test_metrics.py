"""The metrics registry computes as Kafka's metrics library: sampled windows, Rate's window
size, Avg/Max over retained samples, cumulative totals, and Java's --print-metrics format."""

from __future__ import annotations

import math
import threading

import pytest

from brook.client.metrics import (
    Avg,
    CumulativeCount,
    CumulativeSum,
    Max,
    MetricName,
    Metrics,
    Min,
    Rate,
    WindowedCount,
    WindowedSum,
    format_metrics,
)


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_metric_name_prints_as_java_and_keys_by_that_text() -> None:
    name = MetricName(
        "outgoing-byte-total",
        "producer-node-metrics",
        {"client-id": "producer-1", "node-id": "node-1"},
    )
    assert name == (
        "producer-node-metrics:outgoing-byte-total:{client-id=producer-1, node-id=node-1}"
    )
    assert name.group == "producer-node-metrics" and name.tags["node-id"] == "node-1"
    assert {name: 1.0}[str(name)] == 1.0
    assert str(MetricName("x", "g")) == "g:x:{}"


def test_avg_and_max_cover_the_retained_windows_only() -> None:
    avg, mx, mn = Avg(1000, 2), Max(1000, 2), Min(1000, 2)
    for stat in (avg, mx, mn):
        stat.record(10, 0)
        stat.record(20, 500)
        stat.record(60, 1500)  # second window
    assert avg.measure(1600) == 30.0
    assert mx.measure(1600) == 60.0 and mn.measure(1600) == 10.0
    # A third window reuses the first sample: its values drop out.
    for stat in (avg, mx, mn):
        stat.record(30, 2100)
    assert avg.measure(2200) == 45.0
    assert mx.measure(2200) == 60.0 and mn.measure(2200) == 30.0
    # Samples older than samples x window are purged when measured.
    assert math.isnan(avg.measure(10_000)) and math.isnan(mx.measure(10_000))


def test_rate_uses_kafkas_window_size() -> None:
    # Kafka's Rate: elapsed since the oldest sample, but at least (samples - 1) full windows.
    rate = Rate(WindowedSum(30000, 2))
    rate.record(300, 0)
    assert rate.measure(1000) == pytest.approx(300 / 31.0)  # 1 s elapsed + one 30 s window
    rate.record(300, 40000)  # second window
    assert rate.measure(40000) == pytest.approx(600 / 40.0)
    count = Rate(WindowedCount(1000, 2))
    for t in range(0, 1000, 100):
        count.record(123, t)
    assert count.measure(1000) == pytest.approx(10 / 1.0)  # one whole window elapsed
    # A nanosecond total over milliseconds of time: Kafka's bufferpool-wait-ratio.
    ratio = Rate(WindowedSum(1000, 2), unit_ms=1e-6)
    ratio.record(500_000_000, 0)  # 0.5 s waited
    assert ratio.measure(1000) == pytest.approx(0.5)


def test_cumulative_stats_never_expire() -> None:
    total, count = CumulativeSum(), CumulativeCount()
    for stat in (total, count):
        stat.record(5, 0)
        stat.record(7, 10**9)
    assert total.measure(10**12) == 12 and count.measure(10**12) == 2


def test_sensor_meter_and_registry_snapshot() -> None:
    clock = Clock()
    metrics = Metrics(window_ms=1000, num_samples=2, time_ms=clock)
    tags = {"client-id": "c"}
    sensor = metrics.sensor("records").add_meter("g", "record-send", tags)
    sensor.add(MetricName("records-per-request-avg", "g", tags), metrics.avg())
    assert metrics.sensor("records") is sensor
    sensor.record(10)
    clock.now += 500
    sensor.record(30)
    metrics.add_gauge(MetricName("buffer-available-bytes", "g", tags), lambda: 42)
    snap = metrics.snapshot()
    assert snap["g:record-send-total:{client-id=c}"] == 40
    assert snap["g:records-per-request-avg:{client-id=c}"] == 20
    assert snap["g:record-send-rate:{client-id=c}"] == pytest.approx(40 / 1.5)
    assert snap["g:buffer-available-bytes:{client-id=c}"] == 42
    assert metrics.snapshot(groups=["other"]) == {}
    with pytest.raises(ValueError, match="registered twice"):
        metrics.sensor("again").add_meter("g", "record-send", tags)


def test_sensors_are_thread_safe() -> None:
    metrics = Metrics()
    sensor = metrics.sensor("s").add(MetricName("t", "g"), CumulativeSum())

    def hammer() -> None:
        for _ in range(20000):
            sensor.record(1)

    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert metrics.value("g:t:{}") == 80000


def test_format_metrics_matches_tools_utils_print_metrics() -> None:
    a = MetricName(
        "outgoing-byte-total", "producer-node-metrics", {"client-id": "perf", "node-id": "node-0"}
    )
    b = MetricName("batch-size-avg", "producer-metrics", {"client-id": "perf"})
    text = format_metrics({a: 46826262.0, b: math.nan})
    lines = text.split("\n")
    width = len(a)
    assert lines[0] == ""
    assert lines[1] == f"{'Metric Name':<{width}}   Value"
    assert lines[2] == f"{b!s:<{width}} : NaN"
    assert lines[3] == f"{a} : 46826262.000"
