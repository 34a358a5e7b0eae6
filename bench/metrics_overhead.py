"""Produce throughput with the Prometheus endpoint on (and scraped) against off, same broker
code, same librdkafka client, same run.

    python -m bench.metrics_overhead [--records 300000] [--size 1024] [--rounds 3]

Each round starts one ``brook server`` without ``metrics.prometheus.listener`` and one with
it (alternating which goes first) and produces ``--records`` records of ``--size`` bytes to a
3-partition topic with acks=1, with Kafka's producer defaults (linger 0, batch 16 KiB: many
small requests, where a per-request cost shows most) and with linger 5 ms / batch 256 KiB.
While the endpoint is on, a process scrapes it every 200 ms (``--scrape-interval``; 75 times
as often as Prometheus' default of 15 s, so that scrapes fall within even a short run; 0: not
scraped). Reports the median MB/s of
each, the ratio on / off, and the broker's CPU seconds per run; then the median time of a
scrape of a broker hosting a topic of 1 and of ``--scrape-partitions`` (1000) partitions,
and what counting adds to one produce request (the counters alone, in this process).
Raw results go to ``bench/results/metrics_overhead.json``.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from brook.metrics.counters import BrokerCounters

from .broker_throughput import CONFIGS, PARTITIONS, create_topic, produce
from .common import brook_process, free_port, machine, median, process_cpu_seconds, save

DEFAULT_SCRAPE_INTERVAL_S = 0.2


# Run as a process of its own, so that the producing process is the same with metrics on
# and off (a scraping thread beside librdkafka's changes how the client itself runs).
_SCRAPE_LOOP = """
import sys, time, urllib.request
url, interval = sys.argv[1], float(sys.argv[2])
scrapes = failures = 0
with urllib.request.urlopen(url, timeout=10) as resp:
    resp.read()
print("ready", flush=True)
try:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as resp:
                resp.read()
            scrapes += 1
        except OSError as exc:
            failures += 1
            print(exc, file=sys.stderr, flush=True)
        time.sleep(interval)
except KeyboardInterrupt:
    print(scrapes, failures, flush=True)
"""


class Scraper:
    """Scrapes ``url`` every ``interval_s`` from a process of its own until stopped."""

    def __init__(self, url: str, interval_s: float) -> None:
        self.url = url
        self.interval_s = interval_s
        self.scrapes = 0
        self.failures = 0
        self._proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> Scraper:
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _SCRAPE_LOOP, self.url, str(self.interval_s)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self._proc.stdout is not None
        if self._proc.stdout.readline().strip() != "ready":  # the endpoint answered once
            raise RuntimeError("the scraper could not reach the endpoint")
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._proc is not None
        self._proc.send_signal(signal.SIGINT)
        out, _ = self._proc.communicate(timeout=30)
        scrapes, failures = out.split()
        self.scrapes, self.failures = int(scrapes), int(failures)


def _measure(
    metrics: bool, records: int, size: int, interval_s: float
) -> dict[str, dict[str, float]]:
    port = free_port()
    overrides = {"metrics.prometheus.listener": f"http://127.0.0.1:{port}"} if metrics else {}
    out: dict[str, dict[str, float]] = {}
    with brook_process(overrides) as broker:
        assert broker.proc is not None
        for cfg_name, cfg in CONFIGS.items():
            topic = f"bench-{cfg_name}-{uuid.uuid4().hex[:6]}"
            create_topic(broker.bootstrap, topic)
            cpu = process_cpu_seconds(broker.proc.pid)
            scraper: Scraper | None = None
            if metrics and interval_s > 0:
                with Scraper(f"http://127.0.0.1:{port}/metrics", interval_s) as scraper:
                    mb_s = produce(broker.bootstrap, topic, records, size, cfg)
                if scraper.failures or not scraper.scrapes:
                    raise RuntimeError(
                        f"{scraper.failures} scrape(s) failed, {scraper.scrapes} succeeded"
                    )
            else:
                mb_s = produce(broker.bootstrap, topic, records, size, cfg)
            out[cfg_name] = {
                "mb_s": mb_s,
                "scrapes": scraper.scrapes if scraper is not None else 0,
                "broker_cpu_s": process_cpu_seconds(broker.proc.pid) - cpu,
            }
    return out


def _scrape_time(partitions: int, scrapes: int = 200) -> dict[str, float]:
    """Median time of a scrape (snapshot on the loop, formatting, HTTP) of a broker hosting a
    topic of ``partitions`` partitions, the broker's CPU per scrape (the idle broker's own
    background work included: 200 scrapes, so /proc's 10 ms ticks add up) and the size of
    what it returns."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/metrics"
    with brook_process({"metrics.prometheus.listener": f"http://127.0.0.1:{port}"}) as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        for fut in admin.create_topics([NewTopic("many", partitions, 1)]).values():
            fut.result(120)
        assert broker.proc is not None
        times, size = [], 0
        cpu = process_cpu_seconds(broker.proc.pid)
        for _ in range(scrapes):
            start = time.perf_counter()
            with urllib.request.urlopen(url, timeout=30) as resp:
                size = len(resp.read())
            times.append((time.perf_counter() - start) * 1000)
        cpu_ms = (process_cpu_seconds(broker.proc.pid) - cpu) / scrapes * 1000
        with urllib.request.urlopen(url, timeout=30) as resp:
            text = resp.read().decode()
        on_loop_ms = next(
            float(line.split()[-1])
            for line in text.splitlines()
            if line.startswith("brook_metrics_snapshot_ms ")
        )
    return {
        "partitions": partitions,
        "scrape_ms": round(median(times), 1),
        "broker_cpu_ms_per_scrape": round(cpu_ms, 1),
        "snapshot_on_loop_ms": round(on_loop_ms, 1),
        "bytes": size,
    }


def _counting_cost_us(calls: int = 200_000) -> float:
    """What the counters add to one single-partition produce request, in microseconds: the
    request's count and latency, the partition's produce request and its records."""
    counters = BrokerCounters()
    start = time.perf_counter()
    for _ in range(calls):
        counters.request_done(0, 9, start)
        counters.produce_request("t", failed=False)
        counters.produced("t", 16, 16384)
    return (time.perf_counter() - start) / calls * 1e6


def run(records: int, size: int, rounds: int, interval_s: float) -> dict[str, Any]:
    raw: dict[str, dict[str, list[dict[str, float]]]] = {}
    for rnd in range(rounds):
        order = [False, True] if rnd % 2 == 0 else [True, False]
        for metrics in order:
            label = "on" if metrics else "off"
            for cfg_name, figures in _measure(metrics, records, size, interval_s).items():
                raw.setdefault(cfg_name, {}).setdefault(label, []).append(figures)
                print(
                    f"round {rnd + 1} metrics {label:3} {cfg_name:18} "
                    f"produce {figures['mb_s']:7.1f} MB/s  broker CPU "
                    f"{figures['broker_cpu_s']:5.2f} s",
                    flush=True,
                )
    summary: dict[str, Any] = {}
    for cfg_name, runs in raw.items():
        on = median([r["mb_s"] for r in runs["on"]])
        off = median([r["mb_s"] for r in runs["off"]])
        summary[cfg_name] = {
            "off_mb_s": round(off, 1),
            "on_mb_s": round(on, 1),
            "ratio": round(on / off, 3),
            "off_cpu_s": round(median([r["broker_cpu_s"] for r in runs["off"]]), 2),
            "on_cpu_s": round(median([r["broker_cpu_s"] for r in runs["on"]]), 2),
        }
    return {
        "records": records,
        "record_size": size,
        "partitions": PARTITIONS,
        "acks": 1,
        "rounds": rounds,
        "scrape_interval_s": interval_s,
        "machine": machine(),
        "raw": raw,
        "summary": summary,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=300000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scrape-partitions", type=int, default=1000)
    parser.add_argument(
        "--scrape-interval",
        type=float,
        default=DEFAULT_SCRAPE_INTERVAL_S,
        help="seconds between scrapes while producing; 0: the endpoint on but not scraped",
    )
    args = parser.parse_args()
    out = run(args.records, args.size, args.rounds, args.scrape_interval)
    out["scrape"] = [_scrape_time(n) for n in (1, args.scrape_partitions)]
    out["counting_us_per_produce_request"] = round(_counting_cost_us(), 2)
    print("\n| config | off MB/s | on MB/s | on / off | broker CPU s off | on |")
    print("|---|---|---|---|---|---|")
    for cfg_name, r in out["summary"].items():
        print(
            f"| {cfg_name} | {r['off_mb_s']} | {r['on_mb_s']} | {r['ratio']} | "
            f"{r['off_cpu_s']} | {r['on_cpu_s']} |"
        )
    for row in out["scrape"]:
        print(
            f"scrape with a {row['partitions']}-partition topic: {row['scrape_ms']} ms, "
            f"{row['broker_cpu_ms_per_scrape']} ms of broker CPU "
            f"({row['snapshot_on_loop_ms']} ms on the event loop), {row['bytes']} bytes"
        )
    print(f"counting per produce request: {out['counting_us_per_produce_request']} us")
    print(f"\nsaved to {save('metrics_overhead', out)}")


if __name__ == "__main__":
    main()
