"""Prometheus metrics: counters the broker updates on its event loop, a snapshot of them and
of the node's state taken on that loop, and the HTTP endpoint (``metrics.prometheus.listener``)
that serves the snapshot with Kafka's metric names as the JMX exporter renders them."""
