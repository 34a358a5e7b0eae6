"""Client metrics with the names and arithmetic of Kafka's metrics library.

Sensors hold stats (Avg, Max, Min, Rate, WindowedCount, CumulativeSum, CumulativeCount) over
``metrics.num.samples`` windows of ``metrics.sample.window.ms``, computed as Kafka's
``SampledStat`` / ``Rate`` compute them; gauges read a value when asked. Producer and consumer
register theirs on one :class:`Metrics` registry. Metric names print as Java's
``--print-metrics`` prints them: ``group:name:{tag=value, ...}``.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping

__all__ = [
    "Avg",
    "CumulativeCount",
    "CumulativeSum",
    "Max",
    "MetricName",
    "Metrics",
    "Min",
    "Rate",
    "Sensor",
    "WindowedCount",
    "WindowedSum",
    "format_metrics",
]


class MetricName(str):
    """``group:name:{k=v, ...}`` as a string, with ``group``, ``name`` and ``tags`` kept apart.

    Being a str, it can key a dict looked up by the printed form; tags keep their order, as
    Java's LinkedHashMap does (client-id first).
    """

    group: str
    name: str
    tags: Mapping[str, str]

    def __new__(cls, name: str, group: str, tags: Mapping[str, str] | None = None) -> MetricName:
        tags = dict(tags or {})
        text = f"{group}:{name}:{{{', '.join(f'{k}={v}' for k, v in tags.items())}}}"
        self = super().__new__(cls, text)
        self.group = group
        self.name = name
        self.tags = tags
        return self

    def __reduce__(self) -> tuple[object, ...]:
        return (MetricName, (self.name, self.group, dict(self.tags)))


def now_ms() -> float:
    return time.time() * 1000


# ---------------------------------------------------------------------------------------------
# Stats
# ---------------------------------------------------------------------------------------------


class _Sample:
    __slots__ = ("count", "start_ms", "value")

    def __init__(self, initial: float, now: float) -> None:
        self.value = initial
        self.count = 0
        self.start_ms = now

    def reset(self, initial: float, now: float) -> None:
        self.value = initial
        self.count = 0
        self.start_ms = now


class SampledStat:
    """A value kept in ``samples`` windows of ``window_ms`` each (Kafka's SampledStat)."""

    initial = 0.0

    def __init__(self, window_ms: float, samples: int) -> None:
        self.window_ms = window_ms
        self.num_samples = max(1, samples)
        self.samples: list[_Sample] = []
        self.current = 0

    def record(self, value: float, now: float) -> None:
        samples = self.samples
        if not samples:
            samples.append(_Sample(self.initial, now))
            self.current = 0
        sample = samples[self.current]
        if now - sample.start_ms >= self.window_ms:
            self.current = (self.current + 1) % self.num_samples
            if self.current >= len(samples):
                sample = _Sample(self.initial, now)
                samples.append(sample)
            else:
                sample = samples[self.current]
                sample.reset(self.initial, now)
        self.update(sample, value)
        sample.count += 1

    def update(self, sample: _Sample, value: float) -> None:
        raise NotImplementedError

    def purge(self, now: float) -> None:
        expire = self.num_samples * self.window_ms
        for sample in self.samples:
            if now - sample.start_ms >= expire:
                sample.reset(self.initial, now)

    def measure(self, now: float) -> float:
        self.purge(now)
        return self.combine(now)

    def combine(self, now: float) -> float:
        raise NotImplementedError

    def oldest(self, now: float) -> _Sample:
        if not self.samples:
            self.samples.append(_Sample(self.initial, now))
        return min(self.samples, key=lambda s: s.start_ms)


class WindowedSum(SampledStat):
    def update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def combine(self, now: float) -> float:
        return float(sum(s.value for s in self.samples))


class WindowedCount(WindowedSum):
    def update(self, sample: _Sample, value: float) -> None:
        sample.value += 1


class Avg(SampledStat):
    def update(self, sample: _Sample, value: float) -> None:
        sample.value += value

    def combine(self, now: float) -> float:
        total = sum(s.value for s in self.samples)
        count = sum(s.count for s in self.samples)
        return total / count if count else math.nan


class Max(SampledStat):
    initial = -math.inf

    def update(self, sample: _Sample, value: float) -> None:
        sample.value = max(sample.value, value)

    def combine(self, now: float) -> float:
        count = sum(s.count for s in self.samples)
        return max((s.value for s in self.samples), default=-math.inf) if count else math.nan


class Min(SampledStat):
    initial = math.inf

    def update(self, sample: _Sample, value: float) -> None:
        sample.value = min(sample.value, value)

    def combine(self, now: float) -> float:
        count = sum(s.count for s in self.samples)
        return min((s.value for s in self.samples), default=math.inf) if count else math.nan


class Rate:
    """Per second over the retained windows, as Kafka's Rate: the elapsed time is at least
    ``samples - 1`` whole windows, so a new sensor does not report a burst as a huge rate."""

    def __init__(self, stat: SampledStat, unit_ms: float = 1000.0) -> None:
        self.stat = stat
        # The rate's time unit in ms: 1000 for per second, 1e-6 to divide nanoseconds by time.
        self.unit_ms = unit_ms

    def record(self, value: float, now: float) -> None:
        self.stat.record(value, now)

    def window_size_ms(self, now: float) -> float:
        stat = self.stat
        stat.purge(now)
        elapsed = now - stat.oldest(now).start_ms
        full_windows = int(elapsed // stat.window_ms) if stat.window_ms > 0 else 0
        minimum = stat.num_samples - 1
        if full_windows < minimum:
            elapsed += (minimum - full_windows) * stat.window_ms
        return max(elapsed, 1.0)

    def measure(self, now: float) -> float:
        value = self.stat.measure(now)
        return value / (self.window_size_ms(now) / self.unit_ms)


class CumulativeSum:
    def __init__(self) -> None:
        self.total = 0.0

    def record(self, value: float, now: float) -> None:
        self.total += value

    def measure(self, now: float) -> float:
        return self.total


class CumulativeCount(CumulativeSum):
    def record(self, value: float, now: float) -> None:
        self.total += 1


Stat = SampledStat | Rate | CumulativeSum


# ---------------------------------------------------------------------------------------------
# Sensors and the registry
# ---------------------------------------------------------------------------------------------


class Sensor:
    """Records values into every stat added to it; thread-safe."""

    def __init__(self, registry: Metrics, name: str) -> None:
        self.registry = registry
        self.name = name
        self._stats: list[Stat] = []
        self._lock = threading.Lock()

    def add(self, metric: MetricName, stat: Stat) -> Sensor:
        self._stats.append(stat)
        self.registry._register(metric, stat, self._lock)
        return self

    def add_avg_max(self, group: str, prefix: str, tags: Mapping[str, str]) -> Sensor:
        r = self.registry
        self.add(MetricName(f"{prefix}-avg", group, tags), r.avg())
        return self.add(MetricName(f"{prefix}-max", group, tags), r.max())

    def add_meter(
        self, group: str, prefix: str, tags: Mapping[str, str], count: bool = False
    ) -> Sensor:
        """Kafka's Meter: ``prefix-rate`` (per second) and ``prefix-total`` (cumulative);
        ``count`` counts events instead of summing values."""
        r = self.registry
        windowed = r.windowed_count() if count else r.windowed_sum()
        self.add(MetricName(f"{prefix}-rate", group, tags), Rate(windowed))
        total = CumulativeCount() if count else CumulativeSum()
        return self.add(MetricName(f"{prefix}-total", group, tags), total)

    def record(self, value: float = 1.0, now: float | None = None) -> None:
        if now is None:
            now = self.registry.time()
        with self._lock:
            for stat in self._stats:
                stat.record(value, now)


class Metrics:
    """The registry: sensors by name, metric values by :class:`MetricName`."""

    def __init__(
        self,
        window_ms: float = 30000,
        num_samples: int = 2,
        time_ms: Callable[[], float] = now_ms,
    ) -> None:
        self.window_ms = window_ms
        self.num_samples = num_samples
        self.time = time_ms
        self._sensors: dict[str, Sensor] = {}
        self._metrics: dict[MetricName, tuple[Stat | Callable[[], float], threading.Lock | None]]
        self._metrics = {}
        self._lock = threading.Lock()

    # stat factories with the registry's windows
    def avg(self) -> Avg:
        return Avg(self.window_ms, self.num_samples)

    def max(self) -> Max:
        return Max(self.window_ms, self.num_samples)

    def windowed_sum(self) -> WindowedSum:
        return WindowedSum(self.window_ms, self.num_samples)

    def windowed_count(self) -> WindowedCount:
        return WindowedCount(self.window_ms, self.num_samples)

    def sensor(self, name: str) -> Sensor:
        """The sensor called ``name``, created on first use."""
        with self._lock:
            sensor = self._sensors.get(name)
            if sensor is None:
                sensor = self._sensors[name] = Sensor(self, name)
            return sensor

    def add_gauge(self, metric: MetricName, read: Callable[[], float]) -> None:
        with self._lock:
            self._metrics[metric] = (read, None)

    def _register(self, metric: MetricName, stat: Stat, lock: threading.Lock) -> None:
        with self._lock:
            if metric in self._metrics:
                raise ValueError(f"metric {metric} is registered twice")
            self._metrics[metric] = (stat, lock)

    def value(self, metric: str) -> float:
        """The current value of one metric (KeyError when it is not registered)."""
        entry = self._metrics[metric]  # type: ignore[index]
        return self._measure(entry, self.time())

    def snapshot(self, groups: Iterable[str] | None = None) -> dict[MetricName, float]:
        """Every metric's current value, optionally only those of ``groups``."""
        wanted = None if groups is None else set(groups)
        now = self.time()
        with self._lock:
            items = list(self._metrics.items())
        return {
            name: self._measure(entry, now)
            for name, entry in items
            if wanted is None or name.group in wanted
        }

    @staticmethod
    def _measure(
        entry: tuple[Stat | Callable[[], float], threading.Lock | None], now: float
    ) -> float:
        stat, lock = entry
        if lock is None:
            return float(stat())  # type: ignore[operator]
        with lock:
            return float(stat.measure(now))  # type: ignore[union-attr]


def format_metrics(metrics: Mapping[str, float]) -> str:
    """The table Java's ``ToolsUtils.printMetrics`` prints: sorted names, values to 3 places."""
    if not metrics:
        return ""
    width = max(len(str(name)) for name in metrics)
    lines = ["", f"{'Metric Name':<{width}}   Value"]
    for name in sorted(metrics, key=str):
        lines.append(f"{name!s:<{width}} : {_java_double(metrics[name])}")
    return "\n".join(lines)


def _java_double(value: float) -> str:
    # Java's String.format("%.3f") spells the special values NaN, Infinity, -Infinity.
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return f"{value:.3f}"
