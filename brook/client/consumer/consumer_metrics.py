"""The consumer's metrics, with the names of Java's FetchMetricsRegistry
(``consumer-fetch-manager-metrics``, tag ``client-id``; per topic with a ``topic`` tag), plus
Brook's own fetch-session counters (``brook-fetch-session-metrics``).

Recorded per fetch response and per consumed partition chunk, never per record.
"""

from __future__ import annotations

from collections.abc import Callable

from brook.client.metrics import MetricName, Metrics, Sensor

__all__ = ["ConsumerMetrics"]

GROUP = "consumer-fetch-manager-metrics"
SESSION_GROUP = "brook-fetch-session-metrics"


class ConsumerMetrics:
    def __init__(self, metrics: Metrics, client_id: str) -> None:
        self.metrics = metrics
        self.tags = tags = {"client-id": client_id}
        s = metrics.sensor
        self.fetch_latency = (
            s("fetch-latency")
            .add_avg_max(GROUP, "fetch-latency", tags)
            .add_meter(GROUP, "fetch", tags, count=True)
        )
        self.fetch_size = s("fetch-size").add_avg_max(GROUP, "fetch-size", tags)
        self.throttle_time = s("fetch-throttle-time").add_avg_max(
            GROUP, "fetch-throttle-time", tags
        )
        self.bytes_consumed = s("bytes-consumed").add_meter(GROUP, "bytes-consumed", tags)
        self.records_consumed = s("records-consumed").add_meter(GROUP, "records-consumed", tags)
        self.records_lag = s("records-lag").add(
            MetricName("records-lag-max", GROUP, tags), metrics.max()
        )
        self._topic_sensors: dict[str, tuple[Sensor, Sensor]] = {}

    def add_session_counters(self, counters: dict[str, Callable[[], float]]) -> None:
        """Brook's fetch-session counters (no Kafka equivalent) as gauges."""
        for name, read in counters.items():
            self.metrics.add_gauge(MetricName(name, SESSION_GROUP, self.tags), read)

    def record_response(self, latency_ms: float, size: int, throttle_ms: int) -> None:
        self.fetch_latency.record(latency_ms)
        self.fetch_size.record(size)
        self.throttle_time.record(throttle_ms)

    def record_consumed(self, topic: str, records: int, size: int) -> None:
        """``records`` handed out from one partition's fetched chunk of ``size`` bytes."""
        sensors = self._topic_sensors.get(topic)
        if sensors is None:
            tags = {**self.tags, "topic": topic}
            s = self.metrics.sensor
            sensors = self._topic_sensors[topic] = (
                s(f"topic.{topic}.bytes-consumed").add_meter(GROUP, "bytes-consumed", tags),
                s(f"topic.{topic}.records-consumed").add_meter(GROUP, "records-consumed", tags),
            )
        if size:
            self.bytes_consumed.record(size)
            sensors[0].record(size)
        self.records_consumed.record(records)
        sensors[1].record(records)

    def record_lag(self, lag: int) -> None:
        self.records_lag.record(lag)
