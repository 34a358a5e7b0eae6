"""Brook's Consumer against Brook brokers it can restart and age: KIP-227 sessions driven by
real responses (incremental rounds, a session lost in a restart, sessions off), a broker
restarted mid-stream, and reading below the log start after retention deleted it."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer
from support import BrookProcess

from brook import Consumer
from brook.client.admin import Admin, NewTopic
from brook.client.cluster import TopicPartition
from brook.client.consumer import ConsumerRecord, OffsetOutOfRangeError


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int = 0) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for value in values:
        producer.produce(topic, value, partition=partition)
    assert producer.flush(30) == 0


def consume(consumer: Consumer, count: int, timeout: float = 30) -> list[ConsumerRecord]:
    out: list[ConsumerRecord] = []
    deadline = time.monotonic() + timeout
    while len(out) < count and time.monotonic() < deadline:
        out += consumer.poll(200)
    return out


def create(bootstrap: str, topic: str, partitions: int = 1, **configs: str) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, partitions, 1, configs=configs)])


def test_fetches_become_incremental_within_a_session(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    bootstrap = brook_session.bootstrap
    create(bootstrap, unique_topic, partitions=3)
    for p in range(3):
        produce(bootstrap, unique_topic, [b"%d-%d" % (p, i) for i in range(20)], partition=p)
    with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}) as c:
        c.assign([(unique_topic, p) for p in range(3)])
        assert len(consume(c, 60)) == 60
        c.poll(1200)  # idle rounds: nothing changed, the requests name no partition
        fetcher = c.async_consumer.fetcher
        stats = fetcher.stats
        assert stats.full_requests == 1
        assert stats.incremental_requests >= 1 and stats.session_errors == 0
        (node,) = c.async_consumer.network.cluster.brokers
        session = fetcher.session(node)
        assert session is not None and session.session_id != 0 and session.epoch >= 2
        assert set(session.session_partitions) == {
            TopicPartition(unique_topic, p) for p in range(3)
        }


def test_a_restart_loses_the_session_and_a_full_fetch_resumes_without_loss_or_duplicates(
    tmp_path: Path, unique_topic: str
) -> None:
    with BrookProcess(tmp_path / "data") as broker:
        bootstrap = broker.bootstrap
        create(bootstrap, unique_topic)
        produce(bootstrap, unique_topic, [b"a%d" % i for i in range(100)])
        config = {
            "bootstrap.servers": bootstrap,
            "auto.offset.reset": "earliest",
            "max.poll.records": 30,
            "reconnect.backoff.max.ms": 200,
        }
        tp = TopicPartition(unique_topic, 0)
        with Consumer(config) as c:
            c.assign([tp])
            got = consume(c, 100)
            fetcher = c.async_consumer.fetcher
            # Paused, the consumer sends nothing: the last long poll ends, none follows.
            c.pause([tp])
            c.poll(1500)
            assert fetcher.in_flight == frozenset()
            assert fetcher.stats.full_requests == 1 and fetcher.stats.session_errors == 0
            broker.restart()  # the session cache is in memory: the session is gone
            produce(bootstrap, unique_topic, [b"b%d" % i for i in range(100)])
            c.resume([tp])
            got += consume(c, 100, timeout=60)
            offsets = [r.offset for r in got]
            assert offsets == list(range(200))
            values = [r.value for r in got]
            assert values == [b"a%d" % i for i in range(100)] + [b"b%d" % i for i in range(100)]
            # The incremental fetch after the restart got FETCH_SESSION_ID_NOT_FOUND (70);
            # the next one was full and opened a new session.
            assert fetcher.stats.session_errors == 1
            assert fetcher.stats.full_requests == 2
            (node,) = c.async_consumer.network.cluster.brokers
            assert fetcher.session(node).session_id != 0


def test_sessions_off_sends_only_sessionless_fetches(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    bootstrap = brook_session.bootstrap
    create(bootstrap, unique_topic)
    produce(bootstrap, unique_topic, [b"x%d" % i for i in range(50)])
    config = {
        "bootstrap.servers": bootstrap,
        "auto.offset.reset": "earliest",
        "brook.fetch.sessions.enable": False,
    }
    with Consumer(config) as c:
        c.assign([(unique_topic, 0)])
        assert len(consume(c, 50)) == 50
        stats = c.async_consumer.fetcher.stats
        assert stats.sessionless_requests >= 1
        assert stats.full_requests == stats.incremental_requests == 0


def test_a_broker_restarted_mid_stream(tmp_path: Path, unique_topic: str) -> None:
    with BrookProcess(tmp_path / "data") as broker:
        bootstrap = broker.bootstrap
        create(bootstrap, unique_topic, partitions=2)
        for p in range(2):
            produce(bootstrap, unique_topic, [b"%d" % i for i in range(200)], partition=p)
        config = {
            "bootstrap.servers": bootstrap,
            "auto.offset.reset": "earliest",
            "max.poll.records": 50,
            "reconnect.backoff.max.ms": 200,
        }
        with Consumer(config) as c:
            c.assign([(unique_topic, 0), (unique_topic, 1)])
            got = consume(c, 100)
            broker.restart(clean=False)  # kill -9, then start on the same data
            got += consume(c, 300, timeout=60)
            for p in range(2):
                offsets = [r.offset for r in got if r.partition == p]
                assert offsets == list(range(200)), p


def test_reading_below_the_log_start_after_retention(tmp_path: Path, unique_topic: str) -> None:
    overrides = {"log.retention.check.interval.ms": "200"}
    with BrookProcess(tmp_path / "data", overrides) as broker:
        bootstrap = broker.bootstrap
        create(bootstrap, unique_topic, **{"segment.bytes": "2000", "retention.bytes": "4000"})
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
        for i in range(40):
            producer.produce(unique_topic, b"%03d" % i + b"x" * 300, partition=0)
            producer.flush(10)
        tp = TopicPartition(unique_topic, 0)
        with Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "none"}) as c:
            deadline = time.monotonic() + 20
            while c.beginning_offsets([tp])[tp] == 0 and time.monotonic() < deadline:
                time.sleep(0.2)
            start = c.beginning_offsets([tp])[tp]
            assert 0 < start < 40
            c.assign([tp])
            c.seek(tp, 0)
            with pytest.raises(OffsetOutOfRangeError) as info:
                consume(c, 1, timeout=10)
            assert info.value.offsets == {tp: 0}
            # The bulk range reader names the lost range and where the log now starts.
            with pytest.raises(OffsetOutOfRangeError, match=r"\[0, \d+\)") as info:
                list(c.read_range(tp, 0, 40))
            assert info.value.log_start_offsets == {tp: start}
            chunks = list(c.read_range(tp, start, 40))
            assert [r.offset for chunk in chunks for r in chunk] == list(range(start, 40))
        config = {"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"}
        with Consumer(config) as c:
            c.assign([tp])
            c.seek(tp, 0)  # below the log start: reset to it
            assert consume(c, 1)[0].offset == start


def test_poll_keeps_its_timeout_while_committed_offsets_cannot_be_fetched(
    tmp_path: Path, unique_topic: str
) -> None:
    with BrookProcess(tmp_path / "data") as broker:
        bootstrap = broker.bootstrap
        create(bootstrap, unique_topic)
        produce(bootstrap, unique_topic, [b"v"])
        config = {
            "bootstrap.servers": bootstrap,
            "group.id": f"{unique_topic}-g",
            "auto.offset.reset": "earliest",
            "default.api.timeout.ms": 20000,
            "request.timeout.ms": 10000,
        }
        with Consumer(config) as c:
            c.assign([(unique_topic, 0)])
            assert broker.proc is not None
            os.kill(broker.proc.pid, signal.SIGSTOP)  # the broker answers nothing
            try:
                start = time.monotonic()
                # As Java: poll() returns empty-handed at its timeout, not after
                # default.api.timeout.ms, when the starting offset cannot be looked up.
                assert c.poll(500) == []
                assert time.monotonic() - start < 5
            finally:
                os.kill(broker.proc.pid, signal.SIGCONT)
            assert [r.value for r in consume(c, 1)] == [b"v"]
