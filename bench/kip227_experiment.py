"""KIP-227's claim on one command: with fetch sessions, what a Fetch costs follows the
partitions that changed; without them, the number of partitions followed.

    python -m bench.kip227_experiment [--cells 100:10,1000:1,...] [--seconds 10]

One Brook broker; for each cell ``N:k`` a topic of N partitions of which k ("hot", spread
evenly) receive one 100-byte record each every 50 ms from a producer in this process. Brook's
consumer, in a subprocess of its own, is assigned all N partitions (from the end) and polls
without pause, once with fetch sessions (``brook.fetch.sessions.enable=true``, the default)
and once without (sessionless full fetches, as librdkafka sends). It reaches the broker
through tests/multinode_proxy.py with a single node and no delay, which counts the bytes of
every Fetch request and response on the wire and keeps the frames of the measured window,
decoded afterwards to count the partitions each one names.

CPU: the consumer process reports its own CPU time over the window; the broker's is read from
/proc over the same window, minus its CPU over a window of the same length with the producer
alone (the "baseline" run of each cell), so that what remains is the fetch work. Both are
divided by the Fetch requests counted in the window. Results go to
bench/results/kip227_experiment.json; docs/experiments.md reads them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from brook.client.admin import Admin, NewTopic
from brook.client.consumer import Consumer
from brook.client.producer import Producer
from brook.protocol.api import ApiKey, is_flexible, request_class, response_class
from brook.protocol.framing import decode_kio, parse_request_header, response_body_offset

from .common import ROOT, MultiNodeProxy, brook_process, machine, process_cpu_seconds, save

DEFAULT_CELLS = "100:10,1000:1,1000:10,1000:100,3000:10"
ROUND_S = 0.05  # one record to every hot partition per round
RECORD = b"r" * 100
WORKER_TIMEOUT_S = 300.0


# -- the consumer, in its own process ---------------------------------------------------------


def consume(
    bootstrap: str, topic: str, partitions: int, sessions: bool, warmup: float, seconds: float
) -> None:
    """Poll every partition of ``topic``; print START, then END with this process's figures."""
    config = {
        "bootstrap.servers": bootstrap,
        "auto.offset.reset": "latest",
        "enable.auto.commit": False,
        "brook.fetch.sessions.enable": sessions,
    }
    with Consumer(config) as consumer:
        consumer.assign([(topic, p) for p in range(partitions)])
        stats = consumer.async_consumer.fetcher.stats
        deadline = time.monotonic() + warmup
        while time.monotonic() < deadline:
            consumer.poll(100)
        before = (
            stats.full_requests,
            stats.incremental_requests,
            stats.sessionless_requests,
            stats.records,
        )
        print("START", flush=True)
        cpu = time.process_time()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            consumer.poll(100)
        cpu = time.process_time() - cpu
        after = (
            stats.full_requests,
            stats.incremental_requests,
            stats.sessionless_requests,
            stats.records,
        )
        full, incremental, sessionless, records = (
            b - a for a, b in zip(before, after, strict=True)
        )
        print(
            "END "
            + json.dumps(
                {
                    "cpu_s": cpu,
                    "full_requests": full,
                    "incremental_requests": incremental,
                    "sessionless_requests": sessionless,
                    "records": records,
                }
            ),
            flush=True,
        )


# -- the producer of the hot partitions -------------------------------------------------------


class HotProducer:
    """Sends one record to each hot partition every ROUND_S seconds, in a thread."""

    def __init__(self, bootstrap: str, topic: str, hot: list[int]) -> None:
        self.topic = topic
        self.hot = hot
        # linger.ms lets a round's records leave in one Produce request.
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 2, "acks": 1})
        self.rounds = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        next_round = time.monotonic()
        while not self._stop.is_set():
            for p in self.hot:
                self.producer.send(self.topic, RECORD, partition=p)
            self.rounds += 1
            next_round += ROUND_S
            self._stop.wait(max(0.0, next_round - time.monotonic()))

    def __enter__(self) -> HotProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(10)
        self.producer.close()


# -- what the proxy saw -----------------------------------------------------------------------


@dataclass
class FetchTap:
    """Keeps the Fetch exchanges that pass while ``recording`` is set."""

    recording: bool = False
    exchanges: list[tuple[int, bytes, bytes]] = field(default_factory=list)

    def __call__(
        self, node: int, api_key: int, version: int, request: bytes, response: bytes
    ) -> None:
        if self.recording and api_key == ApiKey.FETCH:
            self.exchanges.append((version, request, response))


def decode_exchange(version: int, request: bytes, response: bytes) -> dict[str, int]:
    """Partitions named in a Fetch request (sent and forgotten) and in its response."""
    header = parse_request_header(request, is_flexible(ApiKey.FETCH, version))
    req = decode_kio(request_class(ApiKey.FETCH, version), request, header.body_offset)
    resp = decode_kio(
        response_class(ApiKey.FETCH, version),
        response,
        response_body_offset(response, ApiKey.FETCH, version),
    )
    return {
        "request_partitions": sum(len(t.partitions) for t in req.topics),
        "forgotten_partitions": sum(
            len(t.partitions) for t in getattr(req, "forgotten_topics_data", ()) or ()
        ),
        "response_partitions": sum(len(t.partitions) for t in resp.responses),
        "record_bytes": sum(len(p.records or b"") for t in resp.responses for p in t.partitions),
        "session_epoch": int(getattr(req, "session_epoch", -1)),
    }


# -- one measurement --------------------------------------------------------------------------


def run_consumer(
    broker_pid: int,
    bootstrap: str,
    topic: str,
    partitions: int,
    sessions: bool,
    warmup: float,
    seconds: float,
) -> dict[str, Any]:
    tap = FetchTap()
    with MultiNodeProxy(bootstrap, 1, tap=tap) as proxy:
        worker = json.dumps(
            {
                "bootstrap": proxy.bootstrap,
                "topic": topic,
                "partitions": partitions,
                "sessions": sessions,
                "warmup": warmup,
                "seconds": seconds,
            }
        )
        cmd = [sys.executable, "-m", "bench.kip227_experiment", "--worker", worker]
        with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True, cwd=ROOT) as proc:
            assert proc.stdout is not None
            start: dict[str, Any] = {}
            end: dict[str, Any] = {}
            figures: dict[str, Any] = {}
            try:
                for line in proc.stdout:
                    if line.startswith("START"):
                        start = snapshot(proxy, broker_pid)
                        tap.recording = True
                    elif line.startswith("END "):
                        tap.recording = False
                        end = snapshot(proxy, broker_pid)
                        figures = json.loads(line[4:])
                code = proc.wait(WORKER_TIMEOUT_S)
            except BaseException:
                proc.kill()
                raise
    if code != 0 or not figures:
        raise RuntimeError(f"the consumer worker failed (exit code {code})")
    decoded = [decode_exchange(*e) for e in tap.exchanges]
    fetches = end["requests"] - start["requests"]
    return {
        "fetches": fetches,
        "window_s": end["at"] - start["at"],
        "request_bytes": end["request_bytes"] - start["request_bytes"],
        "response_bytes": end["response_bytes"] - start["response_bytes"],
        "broker_cpu_s": end["broker_cpu_s"] - start["broker_cpu_s"],
        "consumer": figures,
        "decoded": {
            key: sum(d[key] for d in decoded) / max(1, len(decoded))
            for key in (
                "request_partitions",
                "forgotten_partitions",
                "response_partitions",
                "record_bytes",
            )
        },
        "decoded_exchanges": len(decoded),
        "incremental_exchanges": sum(1 for d in decoded if d["session_epoch"] > 0),
    }


def snapshot(proxy: MultiNodeProxy, broker_pid: int) -> dict[str, Any]:
    fetch = proxy.api_traffic(ApiKey.FETCH)
    return {
        "at": time.monotonic(),
        "requests": fetch.requests,
        "request_bytes": fetch.request_bytes,
        "response_bytes": fetch.response_bytes,
        "broker_cpu_s": process_cpu_seconds(broker_pid),
    }


def run_baseline(broker_pid: int, warmup: float, seconds: float) -> dict[str, Any]:
    """Broker CPU over a window with the producer alone."""
    time.sleep(warmup)
    cpu = process_cpu_seconds(broker_pid)
    start = time.monotonic()
    time.sleep(seconds)
    return {
        "broker_cpu_s": process_cpu_seconds(broker_pid) - cpu,
        "window_s": time.monotonic() - start,
    }


def run_cell(
    broker_pid: int, bootstrap: str, partitions: int, hot_count: int, warmup: float, seconds: float
) -> dict[str, Any]:
    topic = f"kip227-{partitions}"
    hot = sorted({i * partitions // hot_count for i in range(hot_count)})
    print(f"{partitions} partitions, {len(hot)} receiving records:", flush=True)
    cell: dict[str, Any] = {"partitions": partitions, "hot": len(hot)}
    with HotProducer(bootstrap, topic, hot) as producer:
        cell["baseline"] = run_baseline(broker_pid, warmup, seconds)
        print(f"  producer alone: broker {cell['baseline']['broker_cpu_s']:.2f} s CPU", flush=True)
        for sessions in (True, False):
            run = run_consumer(broker_pid, bootstrap, topic, partitions, sessions, warmup, seconds)
            cell["sessions" if sessions else "sessionless"] = run
            print(
                f"  {'sessions' if sessions else 'sessionless'}: {summary(run, cell)}", flush=True
            )
        cell["producer_rounds"] = producer.rounds
    return cell


# -- the table --------------------------------------------------------------------------------


def per_fetch(run: dict[str, Any], cell: dict[str, Any]) -> dict[str, float]:
    fetches = max(1, run["fetches"])
    baseline = cell["baseline"]
    scale = run["window_s"] / baseline["window_s"]
    return {
        "fetches_per_s": run["fetches"] / run["window_s"],
        "request_bytes": run["request_bytes"] / fetches,
        "response_bytes": run["response_bytes"] / fetches,
        "overhead_bytes": run["response_bytes"] / fetches - run["decoded"]["record_bytes"],
        "broker_cpu_ms": 1000 * (run["broker_cpu_s"] - baseline["broker_cpu_s"] * scale) / fetches,
        "consumer_cpu_ms": 1000 * run["consumer"]["cpu_s"] / fetches,
    }


def summary(run: dict[str, Any], cell: dict[str, Any]) -> str:
    f = per_fetch(run, cell)
    return (
        f"{run['fetches']} fetches, {f['request_bytes']:,.0f} B/request, "
        f"{f['response_bytes']:,.0f} B/response, broker {f['broker_cpu_ms']:.2f} ms "
        f"and consumer {f['consumer_cpu_ms']:.2f} ms CPU per fetch"
    )


def report(cells: list[dict[str, Any]]) -> str:
    lines = [
        "| partitions | receiving | fetch sessions | fetches/s | request bytes "
        "| partitions in request | response bytes | partitions in response "
        "| response bytes besides records | broker CPU ms/fetch | consumer CPU ms/fetch |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        for mode in ("sessions", "sessionless"):
            run = cell[mode]
            f = per_fetch(run, cell)
            d = run["decoded"]
            named = f"{d['request_partitions']:.1f}"
            if d["forgotten_partitions"]:
                named += f" (+{d['forgotten_partitions']:.1f} forgotten)"
            on = "on" if mode == "sessions" else "off"
            lines.append(
                f"| {cell['partitions']:,} | {cell['hot']} | {on}"
                f" | {f['fetches_per_s']:.1f} | {f['request_bytes']:,.0f} | {named} "
                f"| {f['response_bytes']:,.0f} | {d['response_partitions']:.1f} "
                f"| {f['overhead_bytes']:,.0f} | {f['broker_cpu_ms']:.2f} "
                f"| {f['consumer_cpu_ms']:.2f} |"
            )
    return "\n".join(lines)


def parse_cells(text: str) -> list[tuple[int, int]]:
    cells = []
    for item in text.split(","):
        partitions, _, hot = item.partition(":")
        n, k = int(partitions), int(hot)
        if not 1 <= k <= n:
            raise ValueError(f"cell {item!r}: need 1 <= receiving <= partitions")
        cells.append((n, k))
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--cells", default=DEFAULT_CELLS, help="partitions:receiving pairs (default: %(default)s)"
    )
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window per run")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured lead-in per run")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        consume(**json.loads(args.worker))
        return
    try:
        cells = parse_cells(args.cells)
    except ValueError as exc:
        parser.error(str(exc))
    load_before = os.getloadavg()
    results = []
    with brook_process() as broker:
        assert broker.proc is not None
        pid = broker.proc.pid
        with Admin({"bootstrap.servers": broker.bootstrap}) as admin:
            admin.create_topics(
                [NewTopic(f"kip227-{n}", n, 1) for n in sorted({n for n, _ in cells})]
            )
        for partitions, hot in cells:
            results.append(
                run_cell(pid, broker.bootstrap, partitions, hot, args.warmup, args.seconds)
            )
    print()
    print(report(results))
    path = save(
        "kip227_experiment",
        {
            "machine": machine(),
            "args": vars(args),
            "load_average": {"before": load_before, "after": os.getloadavg()},
            "results": results,
        },
    )
    print(f"\nmachine: {machine()}\nsaved {path}")


if __name__ == "__main__":
    main()
