"""The producer's metrics, with the names and groups of Java's SenderMetricsRegistry,
BufferPool and network Selector: ``producer-metrics``, ``producer-node-metrics`` (tag
``node-id=node-N``) and ``producer-topic-metrics`` (tag ``topic``).

Everything is recorded per batch or per request on the sender's loop, never per record.
Network byte counts cover the requests the producer sends (Produce and InitProducerId) and
their responses; the shared metadata refreshes are not counted.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from brook.client.metrics import CumulativeSum, MetricName, Metrics, Rate, Sensor
from brook.protocol.batch import HEADER_SIZE

from .batch import RECORD_OVERHEAD, ProducerBatch

__all__ = ["ProducerMetrics"]

GROUP = "producer-metrics"
NODE_GROUP = "producer-node-metrics"
TOPIC_GROUP = "producer-topic-metrics"


class ProducerMetrics:
    def __init__(
        self,
        metrics: Metrics,
        client_id: str,
        *,
        buffer_total: int,
        buffer_available: Callable[[], float],
        requests_in_flight: Callable[[], float],
    ) -> None:
        self.metrics = metrics
        self.client_id = client_id
        self.tags = {"client-id": client_id}
        tags = self.tags
        s = metrics.sensor
        self.batch_size = s("batch-size").add_avg_max(GROUP, "batch-size", tags)
        self.compression_rate = s("compression-rate").add(
            MetricName("compression-rate-avg", GROUP, tags), metrics.avg()
        )
        self.queue_time = s("queue-time").add_avg_max(GROUP, "record-queue-time", tags)
        self.request_time = s("request-time").add_avg_max(GROUP, "request-latency", tags)
        self.throttle_time = s("produce-throttle-time").add_avg_max(
            GROUP, "produce-throttle-time", tags
        )
        self.records_per_request = (
            s("records-per-request")
            .add_meter(GROUP, "record-send", tags)
            .add(MetricName("records-per-request-avg", GROUP, tags), metrics.avg())
        )
        self.retries = s("record-retries").add_meter(GROUP, "record-retry", tags)
        self.errors = s("errors").add_meter(GROUP, "record-error", tags)
        self.record_size = s("record-size").add_avg_max(GROUP, "record-size", tags)
        # The Selector's metrics, for the producer's own requests.
        self.bytes_sent = (
            s("bytes-sent")
            .add_meter(GROUP, "outgoing-byte", tags)
            .add_meter(GROUP, "request", tags, count=True)
            .add_avg_max(GROUP, "request-size", tags)
        )
        self.bytes_received = (
            s("bytes-received")
            .add_meter(GROUP, "incoming-byte", tags)
            .add_meter(GROUP, "response", tags, count=True)
        )
        self.buffer_wait = s("bufferpool-wait-time")
        # Nanoseconds waited over elapsed time: a fraction, as Kafka's Meter in NANOSECONDS.
        ratio = Rate(metrics.windowed_sum(), 1e-6)
        self.buffer_wait.add(MetricName("bufferpool-wait-ratio", GROUP, tags), ratio)
        self.buffer_wait.add(
            MetricName("bufferpool-wait-time-ns-total", GROUP, tags), CumulativeSum()
        )
        self.buffer_wait.add(MetricName("bufferpool-wait-time-total", GROUP, tags), CumulativeSum())
        self.buffer_exhausted = s("buffer-exhausted-records").add_meter(
            GROUP, "buffer-exhausted", tags
        )
        metrics.add_gauge(MetricName("buffer-total-bytes", GROUP, tags), lambda: buffer_total)
        metrics.add_gauge(MetricName("buffer-available-bytes", GROUP, tags), buffer_available)
        metrics.add_gauge(MetricName("requests-in-flight", GROUP, tags), requests_in_flight)
        started = time.time()
        metrics.add_gauge(
            MetricName("start-time-ms", "app-info", tags), lambda: round(started * 1000)
        )
        self._nodes: dict[int, tuple[Sensor, Sensor, Sensor]] = {}
        self._topics: dict[str, tuple[Sensor, Sensor, Sensor, Sensor, Sensor]] = {}

    # -- per node and per topic sensors, created on first use ------------------------------

    def _node(self, node: int) -> tuple[Sensor, Sensor, Sensor]:
        sensors = self._nodes.get(node)
        if sensors is None:
            tags = {**self.tags, "node-id": f"node-{node}"}
            s = self.metrics.sensor
            sent = (
                s(f"node-{node}.bytes-sent")
                .add_meter(NODE_GROUP, "outgoing-byte", tags)
                .add_meter(NODE_GROUP, "request", tags, count=True)
                .add_avg_max(NODE_GROUP, "request-size", tags)
            )
            received = (
                s(f"node-{node}.bytes-received")
                .add_meter(NODE_GROUP, "incoming-byte", tags)
                .add_meter(NODE_GROUP, "response", tags, count=True)
            )
            latency = s(f"node-{node}.latency").add_avg_max(NODE_GROUP, "request-latency", tags)
            sensors = self._nodes[node] = (sent, received, latency)
        return sensors

    def _topic(self, topic: str) -> tuple[Sensor, Sensor, Sensor, Sensor, Sensor]:
        sensors = self._topics.get(topic)
        if sensors is None:
            tags = {**self.tags, "topic": topic}
            s = self.metrics.sensor
            sensors = self._topics[topic] = (
                s(f"topic.{topic}.records-per-batch").add_meter(TOPIC_GROUP, "record-send", tags),
                s(f"topic.{topic}.bytes").add_meter(TOPIC_GROUP, "byte", tags),
                s(f"topic.{topic}.compression-rate").add(
                    MetricName("compression-rate", TOPIC_GROUP, tags), self.metrics.avg()
                ),
                s(f"topic.{topic}.record-retries").add_meter(TOPIC_GROUP, "record-retry", tags),
                s(f"topic.{topic}.record-errors").add_meter(TOPIC_GROUP, "record-error", tags),
            )
        return sensors

    # -- recording -------------------------------------------------------------------------

    def record_request(
        self, node: int, batches: list[ProducerBatch], size: int, now: float
    ) -> None:
        """A Produce request leaves: Java's updateProduceRequestMetrics plus the byte counts."""
        wall = self.metrics.time()
        records = 0
        for batch in batches:
            records += batch.count
            send, byte_rate, compression, _, _ = self._topic(batch.tp[0])
            send.record(batch.count, wall)
            byte_rate.record(batch.wire_size(), wall)
            ratio = batch.compression_ratio()
            compression.record(ratio, wall)
            self.queue_time.record(now - batch.created_ms, wall)
            self.compression_rate.record(ratio, wall)
            self.batch_size.record(batch.wire_size(), wall)
            # Java records each batch's largest estimateSizeInBytesUpperBound.
            self.record_size.record(HEADER_SIZE + RECORD_OVERHEAD + batch.max_record_size, wall)
        self.records_per_request.record(records, wall)
        self.record_sent(node, size, wall)

    def record_sent(self, node: int, size: int, wall: float | None = None) -> None:
        wall = self.metrics.time() if wall is None else wall
        self.bytes_sent.record(size, wall)
        self._node(node)[0].record(size, wall)

    def record_response(self, node: int, size: int, latency_ms: float) -> None:
        wall = self.metrics.time()
        self.bytes_received.record(size, wall)
        _sent, received, latency = self._node(node)
        received.record(size, wall)
        latency.record(latency_ms, wall)
        self.request_time.record(latency_ms, wall)

    def record_throttle(self, throttle_ms: int) -> None:
        self.throttle_time.record(throttle_ms)

    def record_retries(self, topic: str, count: int) -> None:
        self.retries.record(count)
        self._topic(topic)[3].record(count)

    def record_errors(self, topic: str, count: int) -> None:
        self.errors.record(count)
        self._topic(topic)[4].record(count)

    def record_buffer_wait(self, wait_ns: float) -> None:
        self.buffer_wait.record(wait_ns)
