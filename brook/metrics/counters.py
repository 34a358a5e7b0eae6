"""What the broker counts as it works: plain integers and lists, updated on the event loop
only (a request's handler, the AlterPartition manager), so counting costs a dictionary update
and no lock. The scrape reads them through a snapshot taken on the same loop (snapshot.py).
"""

from __future__ import annotations

import time
from bisect import bisect_left
from dataclasses import dataclass, field

# Pseudo API keys under which fetches are counted a second time (Kafka's RequestMetrics
# names FetchConsumer and FetchFollower besides Fetch).
FETCH_CONSUMER = -1
FETCH_FOLLOWER = -2
# Upper bounds (ms) of the request latency histogram's buckets; +Inf is implied.
LATENCY_BUCKETS_MS: tuple[float, ...] = (
    0.5,
    1,
    2.5,
    5,
    10,
    25,
    50,
    100,
    250,
    500,
    1000,
    2500,
    5000,
    10000,
    30000,
)
# Upper bounds (ms) of the event-loop lag histogram's buckets.
LOOP_LAG_BUCKETS_MS: tuple[float, ...] = (1, 5, 10, 25, 50, 100, 250, 500, 1000, 5000)


@dataclass(slots=True)
class Histogram:
    """Counts per bucket (not cumulative; the last one is +Inf) and the sum of observations."""

    bounds: tuple[float, ...]
    counts: list[int] = field(default_factory=list)
    total: float = 0.0

    def __post_init__(self) -> None:
        if not self.counts:
            self.counts = [0] * (len(self.bounds) + 1)

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.total += value

    def copy(self) -> Histogram:
        return Histogram(self.bounds, list(self.counts), self.total)


@dataclass(slots=True)
class TopicCounters:
    """Kafka's BrokerTopicMetrics of one topic (or of all topics)."""

    messages_in: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    replication_bytes_in: int = 0
    replication_bytes_out: int = 0
    produce_requests: int = 0
    failed_produce_requests: int = 0
    fetch_requests: int = 0
    failed_fetch_requests: int = 0


class BrokerCounters:
    """Every counter of one node. Methods are called on the event loop only."""

    def __init__(self) -> None:
        self.all_topics = TopicCounters()
        self.topics: dict[str, TopicCounters] = {}
        # (api key or FETCH_*, version) -> requests answered (or, for acks=0, handled)
        self.requests: dict[tuple[int, int], int] = {}
        # api key or FETCH_* -> latency from dispatch to response handed to the socket, in ms
        self.request_latency: dict[int, Histogram] = {}
        self.loop_lag = Histogram(LOOP_LAG_BUCKETS_MS)
        self.last_loop_lag_ms = 0.0

    def topic(self, name: str) -> TopicCounters:
        counters = self.topics.get(name)
        if counters is None:
            counters = self.topics[name] = TopicCounters()
        return counters

    def produced(self, topic: str, messages: int, size: int) -> None:
        """A leader appended ``messages`` records of ``size`` bytes produced by a client."""
        for c in (self.all_topics, self.topic(topic)):
            c.messages_in += messages
            c.bytes_in += size

    def produce_request(self, topic: str, failed: bool) -> None:
        """One partition of a produce request for ``topic`` (Kafka counts per partition)."""
        for c in (self.all_topics, self.topic(topic)):
            c.produce_requests += 1
            if failed:
                c.failed_produce_requests += 1

    def fetched(self, topic: str | None, size: int, follower: bool, failed: bool = False) -> None:
        """One partition of ``topic`` answered in a fetch response, with ``size`` bytes of
        records (Kafka counts fetch requests per partition too). ``topic`` None: one that
        does not exist, counted in all topics only (a client asking for made-up names must
        not add a series per name)."""
        scopes = (self.all_topics,) if topic is None else (self.all_topics, self.topic(topic))
        for c in scopes:
            c.fetch_requests += 1
            if failed:
                c.failed_fetch_requests += 1
            if follower:
                c.replication_bytes_out += size
            else:
                c.bytes_out += size

    def replicated(self, topic: str, size: int) -> None:
        """A follower appended ``size`` bytes fetched from its leader."""
        for c in (self.all_topics, self.topic(topic)):
            c.replication_bytes_in += size

    def forget_topic(self, name: str) -> None:
        self.topics.pop(name, None)

    def request_done(
        self, api_key: int, version: int, started: float, from_follower: bool | None = None
    ) -> None:
        """A request handled: ``started`` is its ``time.perf_counter()`` at dispatch. A fetch
        (``from_follower`` not None) is also counted as FetchFollower or FetchConsumer, as
        Kafka's RequestMetrics does."""
        elapsed_ms = (time.perf_counter() - started) * 1000
        self._count(api_key, version, elapsed_ms)
        if from_follower is not None:
            self._count(FETCH_FOLLOWER if from_follower else FETCH_CONSUMER, version, elapsed_ms)

    def _count(self, key: int, version: int, elapsed_ms: float) -> None:
        self.requests[(key, version)] = self.requests.get((key, version), 0) + 1
        hist = self.request_latency.get(key)
        if hist is None:
            hist = self.request_latency[key] = Histogram(LATENCY_BUCKETS_MS)
        hist.observe(elapsed_ms)

    def loop_lagged(self, lag_ms: float) -> None:
        self.loop_lag.observe(lag_ms)
        self.last_loop_lag_ms = lag_ms
