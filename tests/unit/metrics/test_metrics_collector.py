"""The scrape thread's side: a snapshot taken on the event loop and waited for from another
thread (failing, not hanging, when the loop is stuck), and families turned into
prometheus-client's text format under the names given."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from brook.metrics.collector import LoopSnapshotCollector, to_metric
from brook.metrics.counters import FETCH_CONSUMER, FETCH_FOLLOWER, Histogram
from brook.metrics.snapshot import COUNTER, GAUGE, HISTOGRAM, Family, kafka_request_name
from brook.protocol.api import ApiKey


def _text(*families: Family) -> str:
    class Fixed:
        def collect(self):  # type: ignore[no-untyped-def]
            return [to_metric(f) for f in families]

    registry = CollectorRegistry()
    registry.register(Fixed())
    return generate_latest(registry).decode()


def test_counters_get_total_and_keep_each_sample_labels() -> None:
    fam = Family("kafka_server_brokertopicmetrics_messagesin", COUNTER, "doc")
    fam.add(5).add(3, topic="t")
    text = _text(fam)
    assert "kafka_server_brokertopicmetrics_messagesin_total 5.0" in text
    assert 'kafka_server_brokertopicmetrics_messagesin_total{topic="t"} 3.0' in text
    assert "# TYPE kafka_server_brokertopicmetrics_messagesin_total counter" in text


def test_histograms_are_cumulative_with_count_and_sum() -> None:
    hist = Histogram((1.0, 10.0))
    for v in (0.5, 2.0, 20.0):
        hist.observe(v)
    fam = Family("kafka_network_requestmetrics_totaltimems", HISTOGRAM, "doc")
    fam.histograms.append(({"request": "Produce"}, hist))
    text = _text(fam)
    name = "kafka_network_requestmetrics_totaltimems"
    assert f'{name}_bucket{{le="1.0",request="Produce"}} 1.0' in text
    assert f'{name}_bucket{{le="10.0",request="Produce"}} 2.0' in text
    assert f'{name}_bucket{{le="+Inf",request="Produce"}} 3.0' in text
    assert f'{name}_count{{request="Produce"}} 3.0' in text
    assert f'{name}_sum{{request="Produce"}} 22.5' in text


def test_gauges_keep_their_name() -> None:
    text = _text(Family("kafka_log_log_size", GAUGE, "doc").add(7, topic="t", partition="0"))
    assert 'kafka_log_log_size{partition="0",topic="t"} 7.0' in text


def test_request_names_are_kafkas() -> None:
    assert kafka_request_name(ApiKey.PRODUCE) == "Produce"
    assert kafka_request_name(ApiKey.LIST_OFFSETS) == "ListOffsets"
    assert kafka_request_name(ApiKey.API_VERSIONS) == "ApiVersions"
    assert kafka_request_name(ApiKey.OFFSET_FOR_LEADER_EPOCH) == "OffsetForLeaderEpoch"
    assert kafka_request_name(FETCH_CONSUMER) == "FetchConsumer"
    assert kafka_request_name(FETCH_FOLLOWER) == "FetchFollower"


def test_the_snapshot_is_taken_on_the_loop_thread() -> None:
    async def main() -> tuple[int, int]:
        loop_thread = threading.get_ident()
        seen: list[int] = []

        def take() -> list[Family]:
            seen.append(threading.get_ident())
            return [Family("x", GAUGE, "doc").add(1)]

        collector = LoopSnapshotCollector(asyncio.get_running_loop(), take)
        families = await asyncio.to_thread(collector.snapshot)
        assert [f.name for f in families] == ["x", "brook_metrics_snapshot_ms"]
        assert families[1].samples[0][1] >= 0
        return loop_thread, seen[0]

    loop_thread, taken_on = asyncio.run(main())
    assert taken_on == loop_thread


def test_a_stuck_loop_fails_the_scrape_and_the_late_snapshot_is_not_taken() -> None:
    taken: list[bool] = []

    async def main() -> None:
        collector = LoopSnapshotCollector(
            asyncio.get_running_loop(), lambda: taken.append(True) or [], timeout_s=0.2
        )
        errors: list[BaseException] = []

        def scrape() -> None:
            try:
                collector.snapshot()
            except BaseException as exc:
                errors.append(exc)

        thread = threading.Thread(target=scrape)
        thread.start()
        time.sleep(1.0)  # the loop is blocked: the snapshot cannot run
        thread.join(5)
        assert len(errors) == 1 and isinstance(errors[0], TimeoutError)
        await asyncio.sleep(0)  # the queued snapshot runs now, and does nothing

    asyncio.run(main())
    assert taken == []


def test_a_failing_snapshot_fails_the_scrape() -> None:
    async def main() -> None:
        def take() -> list[Family]:
            raise RuntimeError("broken")

        collector = LoopSnapshotCollector(asyncio.get_running_loop(), take)
        with pytest.raises(RuntimeError, match="broken"):
            await asyncio.to_thread(collector.snapshot)

    asyncio.run(main())
