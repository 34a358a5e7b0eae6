"""The bridge between the scrape thread and the event loop: prometheus-client calls
``collect`` on its HTTP server's thread; the snapshot is taken on the broker's loop (the only
thread that may read the broker's state) and handed back as plain values, then turned into
prometheus-client metric families on the scrape thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import Callable, Iterator

from prometheus_client.metrics_core import Metric
from prometheus_client.utils import floatToGoString

from .snapshot import COUNTER, GAUGE, HISTOGRAM, Family

# A scrape waits this long for the loop; a loop stuck for longer fails the scrape (HTTP 500)
# rather than answering with figures that are not the node's.
SNAPSHOT_TIMEOUT_S = 10.0


class LoopSnapshotCollector:
    """A prometheus-client collector whose figures come from ``take`` run on ``loop``."""

    def __init__(
        self,
        loop: asyncio.AbstractEventLoop,
        take: Callable[[], list[Family]],
        timeout_s: float = SNAPSHOT_TIMEOUT_S,
    ) -> None:
        self._loop = loop
        self._take = take
        self._timeout_s = timeout_s

    def snapshot(self) -> list[Family]:
        """The families, taken on the loop; called from any other thread."""
        future: concurrent.futures.Future[list[Family]] = concurrent.futures.Future()

        def run() -> None:
            if not future.set_running_or_notify_cancel():
                return  # the scrape gave up waiting
            started = time.perf_counter()
            try:
                families = self._take()
            except BaseException as exc:
                future.set_exception(exc)
                return
            took = Family(
                "brook_metrics_snapshot_ms",
                GAUGE,
                "How long this scrape's snapshot held the event loop, in ms (Brook's own)",
            )
            families.append(took.add((time.perf_counter() - started) * 1000))
            future.set_result(families)

        self._loop.call_soon_threadsafe(run)
        try:
            return future.result(self._timeout_s)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(
                f"the event loop did not take a metrics snapshot within {self._timeout_s} s"
            ) from None

    def collect(self) -> Iterator[Metric]:
        for family in self.snapshot():
            yield to_metric(family)


def to_metric(family: Family) -> Metric:
    """A prometheus-client ``Metric`` with the family's samples, label sets as they are (an
    all-topics sample without a ``topic`` label beside per-topic ones, as Kafka's exporter
    shows them)."""
    metric = Metric(family.name, family.doc, family.kind)
    if family.kind == COUNTER:
        for labels, value in family.samples:
            metric.add_sample(family.name + "_total", labels, value)
    elif family.kind == HISTOGRAM:
        for labels, hist in family.histograms:
            cumulative = 0
            for bound, count in zip((*hist.bounds, float("inf")), hist.counts, strict=True):
                cumulative += count
                metric.add_sample(
                    family.name + "_bucket", {**labels, "le": floatToGoString(bound)}, cumulative
                )
            metric.add_sample(family.name + "_count", labels, cumulative)
            metric.add_sample(family.name + "_sum", labels, hist.total)
    else:
        for labels, value in family.samples:
            metric.add_sample(family.name, labels, value)
    return metric
