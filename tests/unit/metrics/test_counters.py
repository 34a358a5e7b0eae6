"""The broker's counters: per topic and all topics, requests per (API, version), histograms
whose buckets hold what they were given."""

from __future__ import annotations

import time

from brook.metrics.counters import FETCH_CONSUMER, FETCH_FOLLOWER, BrokerCounters, Histogram
from brook.protocol.api import ApiKey


def test_histogram_puts_each_value_in_the_first_bucket_at_or_above_it() -> None:
    hist = Histogram((1.0, 10.0))
    for v in (0.5, 1.0, 1.5, 10.0, 11.0, 1e9):
        hist.observe(v)
    assert hist.counts == [2, 2, 2]
    assert hist.total == 0.5 + 1.0 + 1.5 + 10.0 + 11.0 + 1e9


def test_histogram_copy_does_not_follow_later_observations() -> None:
    hist = Histogram((1.0,))
    hist.observe(0.1)
    copy = hist.copy()
    hist.observe(5.0)
    assert copy.counts == [1, 0] and hist.counts == [1, 1]


def test_topic_counters_feed_the_topic_and_all_topics() -> None:
    c = BrokerCounters()
    c.produced("a", 3, 100)
    c.produced("b", 1, 10)
    c.fetched("a", 50, follower=False)
    c.fetched("a", 70, follower=True)
    c.produce_request("a", failed=False)
    c.produce_request("a", failed=True)
    c.replicated("a", 30)
    assert (c.topics["a"].messages_in, c.topics["a"].bytes_in) == (3, 100)
    assert (c.all_topics.messages_in, c.all_topics.bytes_in) == (4, 110)
    assert c.topics["a"].bytes_out == 50 and c.topics["a"].replication_bytes_out == 70
    assert c.topics["a"].replication_bytes_in == 30 == c.all_topics.replication_bytes_in
    assert c.all_topics.produce_requests == 2 and c.all_topics.failed_produce_requests == 1
    c.forget_topic("a")
    assert "a" not in c.topics and c.all_topics.messages_in == 4


def test_requests_are_counted_per_api_and_version_with_their_latency() -> None:
    c = BrokerCounters()
    started = time.perf_counter() - 0.02  # dispatched 20 ms ago
    c.request_done(ApiKey.PRODUCE, 9, started)
    c.request_done(ApiKey.PRODUCE, 9, time.perf_counter())
    c.request_done(ApiKey.PRODUCE, 7, time.perf_counter())
    assert c.requests == {(ApiKey.PRODUCE, 9): 2, (ApiKey.PRODUCE, 7): 1}
    hist = c.request_latency[ApiKey.PRODUCE]
    assert sum(hist.counts) == 3 and hist.total >= 20


def test_a_fetch_is_also_counted_as_a_consumers_or_a_followers() -> None:
    c = BrokerCounters()
    c.request_done(ApiKey.FETCH, 12, time.perf_counter(), from_follower=False)
    c.request_done(ApiKey.FETCH, 17, time.perf_counter(), from_follower=True)
    assert c.requests == {
        (ApiKey.FETCH, 12): 1,
        (FETCH_CONSUMER, 12): 1,
        (ApiKey.FETCH, 17): 1,
        (FETCH_FOLLOWER, 17): 1,
    }
    assert sum(c.request_latency[ApiKey.FETCH].counts) == 2
    assert sum(c.request_latency[FETCH_FOLLOWER].counts) == 1


def test_fetches_count_per_partition_and_unknown_topics_only_in_all_topics() -> None:
    c = BrokerCounters()
    c.fetched("a", 10, follower=False)
    c.fetched("a", 0, follower=True, failed=True)
    c.fetched(None, 0, follower=False, failed=True)
    assert (c.topics["a"].fetch_requests, c.topics["a"].failed_fetch_requests) == (2, 1)
    assert (c.all_topics.fetch_requests, c.all_topics.failed_fetch_requests) == (3, 2)
    assert list(c.topics) == ["a"]
