"""KIP-227's claim on one command: with fetch sessions, what a Fetch costs follows the
partitions that changed; without them, the number of partitions followed.

    python -m bench.kip227_experiment [--cells 100:10,1000:1,...] [--seconds 10] [--plot]

A 3-node ``brook cluster`` (LocalCluster: three ``brook server`` processes, each controller
and broker); for each cell ``N:k`` a topic of N partitions with replication factor 1, laid
out round robin (partition p on the (p mod 3)-th broker), of which k ("hot", spread evenly
over the brokers and over the partitions each leads) receive one 100-byte record each every
50 ms from a producer in this process. Brook's consumer, in a subprocess of its own, is
assigned all N partitions (from the end) and polls without pause, once with fetch sessions
(``brook.fetch.sessions.enable=true``, the default) and once without (sessionless full
fetches, as librdkafka sends): it fetches from the three brokers, each fetch naming the
partitions that broker leads. It reaches them through tests/multinode_proxy.py in its
pass-through form (one port per real broker, the cluster's own Metadata but for the
brokers' addresses, nothing delayed), which counts the bytes of every Fetch request and
response on the wire and keeps the frames of the measured window, decoded afterwards to
count the partitions each one names.

CPU: the consumer process reports its own CPU time over the window; the brokers' is read
from /proc over the same window (the three processes together), minus their CPU over a
window of the same length with the producer alone (the "baseline" run of each cell), so that
what remains is the fetch work. Both are divided by the Fetch requests counted in the window.
Results go to bench/results/kip227_experiment.json, the plot to docs/images/kip227_fetch.png
(with ``--plot``); docs/experiments.md reads them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewTopic
from brook.client.consumer import Consumer
from brook.client.producer import Producer
from brook.protocol.api import ApiKey, is_flexible, request_class, response_class
from brook.protocol.framing import decode_kio, parse_request_header, response_body_offset

from .common import (
    ROOT,
    Claim,
    MultiNodeProxy,
    add_output_arguments,
    process_cpu_seconds,
    save_results,
)

DEFAULT_CELLS = "100:10,1000:1,1000:10,1000:100,3000:10"
NODES = 3
ROUND_S = 0.05  # one record to every hot partition per round
RECORD = b"r" * 100
WORKER_TIMEOUT_S = 300.0
WAIT_S = 120.0
DEFAULT_PLOT = ROOT / "docs" / "images" / "kip227_fetch.png"


@dataclass(frozen=True)
class Brokers:
    """The cluster's brokers as the measurement sees them: addresses and processes."""

    addresses: dict[int, str]  # node id -> host:port
    pids: dict[int, int]  # node id -> pid

    @classmethod
    def of(cls, cluster: LocalCluster) -> Brokers:
        nodes = cluster.brokers
        if any(n.pid is None for n in nodes):
            raise RuntimeError("a broker of the cluster is not running")
        return cls(
            {n.node_id: n.broker_address for n in nodes},
            {n.node_id: n.pid for n in nodes if n.pid is not None},
        )

    @property
    def bootstrap(self) -> str:
        return ",".join(self.addresses[n] for n in sorted(self.addresses))

    def cpu_seconds(self) -> float:
        return sum(process_cpu_seconds(pid) for pid in self.pids.values())


def create_topics(admin: Admin, brokers: Brokers, sizes: list[int]) -> None:
    """``kip227-N`` for each N: RF 1, partition p on the (p mod 3)-th broker; returns once
    every partition has its leader."""
    ids = sorted(brokers.addresses)
    admin.create_topics(
        [
            NewTopic(f"kip227-{n}", replica_assignment={p: [ids[p % len(ids)]] for p in range(n)})
            for n in sizes
        ]
    )
    deadline = time.monotonic() + WAIT_S
    for n in sizes:
        topic = f"kip227-{n}"
        while True:
            try:
                desc = admin.describe_topics([topic])[topic]
                if len(desc.partitions) == n and all(p.leader >= 0 for p in desc.partitions):
                    break
            except Exception:  # still being created
                pass
            if time.monotonic() > deadline:
                raise TimeoutError(f"{topic}: not every partition has a leader")
            time.sleep(0.2)


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
    """Keeps the Fetch exchanges that pass while ``recording`` is set, with their node."""

    recording: bool = False
    exchanges: list[tuple[int, int, bytes, bytes]] = field(default_factory=list)

    def __call__(
        self, node: int, api_key: int, version: int, request: bytes, response: bytes
    ) -> None:
        if self.recording and api_key == ApiKey.FETCH:
            self.exchanges.append((node, version, request, response))


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


DECODED = ("request_partitions", "forgotten_partitions", "response_partitions", "record_bytes")


def averages(decoded: list[dict[str, int]]) -> dict[str, float]:
    return {key: sum(d[key] for d in decoded) / max(1, len(decoded)) for key in DECODED}


# -- one measurement --------------------------------------------------------------------------


def run_consumer(
    brokers: Brokers,
    topic: str,
    partitions: int,
    sessions: bool,
    warmup: float,
    seconds: float,
) -> dict[str, Any]:
    tap = FetchTap()
    with MultiNodeProxy.in_front_of(brokers.addresses, tap=tap) as proxy:
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
                        start = snapshot(proxy, brokers)
                        tap.recording = True
                    elif line.startswith("END "):
                        tap.recording = False
                        end = snapshot(proxy, brokers)
                        figures = json.loads(line[4:])
                code = proc.wait(WORKER_TIMEOUT_S)
            except BaseException:
                proc.kill()
                raise
    if code != 0 or not figures:
        raise RuntimeError(f"the consumer worker failed (exit code {code})")
    decoded = [(node, decode_exchange(*e)) for node, *e in tap.exchanges]
    per_node = {
        node: {
            "fetches": end["per_node"][node] - start["per_node"][node],
            **averages([d for n, d in decoded if n == node]),
        }
        for node in sorted(brokers.addresses)
    }
    return {
        "fetches": end["requests"] - start["requests"],
        "window_s": end["at"] - start["at"],
        "request_bytes": end["request_bytes"] - start["request_bytes"],
        "response_bytes": end["response_bytes"] - start["response_bytes"],
        "broker_cpu_s": end["broker_cpu_s"] - start["broker_cpu_s"],
        "consumer": figures,
        "decoded": averages([d for _, d in decoded]),
        "per_node": per_node,
        "decoded_exchanges": len(decoded),
        "incremental_exchanges": sum(1 for _, d in decoded if d["session_epoch"] > 0),
    }


def snapshot(proxy: MultiNodeProxy, brokers: Brokers) -> dict[str, Any]:
    fetch = proxy.api_traffic(ApiKey.FETCH)
    return {
        "at": time.monotonic(),
        "requests": fetch.requests,
        "request_bytes": fetch.request_bytes,
        "response_bytes": fetch.response_bytes,
        "per_node": {n: proxy.api_traffic(ApiKey.FETCH, n).requests for n in brokers.addresses},
        "broker_cpu_s": brokers.cpu_seconds(),
    }


def run_baseline(brokers: Brokers, warmup: float, seconds: float) -> dict[str, Any]:
    """The brokers' CPU over a window with the producer alone."""
    time.sleep(warmup)
    cpu = brokers.cpu_seconds()
    start = time.monotonic()
    time.sleep(seconds)
    return {
        "broker_cpu_s": brokers.cpu_seconds() - cpu,
        "window_s": time.monotonic() - start,
    }


def hot_partitions(partitions: int, hot_count: int, brokers: int = NODES) -> list[int]:
    """The partitions that receive records: as even a share as can be on each broker (the
    (p mod brokers)-th leads partition p), spread evenly among the partitions it leads."""
    hot = []
    for b in range(brokers):
        led = range(b, partitions, brokers)
        count = min(len(led), hot_count // brokers + (b < hot_count % brokers))
        hot += [led[i * len(led) // count] for i in range(count)]
    return sorted(hot)


def run_cell(
    brokers: Brokers, partitions: int, hot_count: int, warmup: float, seconds: float
) -> dict[str, Any]:
    topic = f"kip227-{partitions}"
    hot = hot_partitions(partitions, hot_count)
    print(f"{partitions} partitions, {len(hot)} receiving records:", flush=True)
    cell: dict[str, Any] = {"partitions": partitions, "hot": len(hot)}
    load_before = os.getloadavg()
    with HotProducer(brokers.bootstrap, topic, hot) as producer:
        cell["baseline"] = run_baseline(brokers, warmup, seconds)
        print(f"  producer alone: brokers {cell['baseline']['broker_cpu_s']:.2f} s CPU", flush=True)
        for sessions in (True, False):
            run = run_consumer(brokers, topic, partitions, sessions, warmup, seconds)
            cell["sessions" if sessions else "sessionless"] = run
            print(
                f"  {'sessions' if sessions else 'sessionless'}: {summary(run, cell)}", flush=True
            )
        cell["producer_rounds"] = producer.rounds
    cell["load_average"] = {"before": load_before, "after": os.getloadavg()}
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


def scaling_claims(who: str, points: dict[str, dict[int, tuple[float, float]]]) -> list[Claim]:
    """KIP-227's claim for one kind of fetcher, judged on (request bytes, response bytes
    besides records) per fetch at each partition count, with sessions and without: with
    sessions the messages follow the partitions that changed (at most 1.5x from the fewest
    partitions to the most), without them the partitions followed (at least a third of
    their growth)."""
    on, off = points.get("sessions", {}), points.get("sessionless", {})
    sizes = sorted(set(on) & set(off))
    if len(sizes) < 2:
        return []
    low, high = sizes[0], sizes[-1]
    found = []
    for i, what in ((0, "request"), (1, "response (besides records)")):
        grew_on = on[high][i] / max(on[low][i], 1.0)
        grew_off = off[high][i] / max(off[low][i], 1.0)
        found.append(
            Claim(
                "KIP-227",
                f"{who}: with sessions a fetch {what} follows the partitions that changed, "
                "without them the partitions followed",
                f"{low:,} -> {high:,} partitions: {on[low][i]:,.0f} -> {on[high][i]:,.0f} B "
                f"with sessions, {off[low][i]:,.0f} -> {off[high][i]:,.0f} B without",
                grew_on <= 1.5 and grew_off >= (high / low) / 3,
            )
        )
    return found


def claims(saved: dict[str, Any]) -> list[Claim]:
    """The consumer's case, over the cells with the most common number of receiving
    partitions."""
    cells = saved["results"]
    hot_counts = [c["hot"] for c in cells]
    hot = max(set(hot_counts), key=hot_counts.count, default=0)
    points: dict[str, dict[int, tuple[float, float]]] = {"sessions": {}, "sessionless": {}}
    for cell in cells:
        if cell["hot"] == hot:
            for mode, mine in points.items():
                f = per_fetch(cell[mode], cell)
                mine[cell["partitions"]] = (f["request_bytes"], f["overhead_bytes"])
    return scaling_claims(f"a consumer ({hot} partitions receiving)", points)


PLOTTED = (
    ("request_bytes", "request bytes per fetch", "%.0f", True),
    ("overhead_bytes", "response bytes besides records per fetch", "%.0f", True),
    ("broker_cpu_ms", "brokers' CPU ms per fetch (producer alone subtracted)", "%.1f", False),
    ("consumer_cpu_ms", "consumer CPU ms per fetch", "%.1f", False),
)


def plot(cells: list[dict[str, Any]], path: Path, setup: str) -> None:
    """Per cell, with fetch sessions and without: the bytes of a Fetch request, what its
    response carries besides records, and the CPU a fetch costs each side."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [f"{c['partitions']:,} partitions\n{c['hot']} receiving" for c in cells]
    x = list(range(len(cells)))
    width = 0.38
    fig, axes = plt.subplots(2, 2, figsize=(13, 8.5))
    for ax, (key, title, fmt, log) in zip(axes.flat, PLOTTED, strict=True):
        for mode, offset, colour, name in (
            ("sessions", -width / 2, "tab:blue", "fetch sessions on"),
            ("sessionless", width / 2, "tab:red", "fetch sessions off"),
        ):
            values = [max(per_fetch(c[mode], c)[key], 0.0) for c in cells]
            drawn = ax.bar([i + offset for i in x], values, width, color=colour, label=name)
            ax.bar_label(drawn, fmt=fmt, fontsize=7)
        if log:
            ax.set_yscale("log")
        ax.set_title(title, fontsize=10)
        ax.set_xticks(x, labels, fontsize=8)
        ax.grid(True, axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"KIP-227: the cost of a fetch\n{setup}", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def setup_text(args: dict[str, Any]) -> str:
    return (
        f"3-node brook cluster on one machine, RF 1 topics laid out round robin, one 100-B "
        f"record per receiving partition every {ROUND_S * 1000:.0f} ms, Brook's consumer "
        f"polling every partition, {args['seconds']:.0f} s measured per run"
    )


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
    add_output_arguments(parser, DEFAULT_PLOT)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        consume(**json.loads(args.worker))
        return
    if args.from_results:
        saved = json.loads(Path(args.from_results).read_text())
        print(report(saved["results"]))
        if args.plot:
            plot(saved["results"], Path(args.plot), setup_text(saved["args"]))
        return
    try:
        cells = parse_cells(args.cells)
    except ValueError as exc:
        parser.error(str(exc))
    load_before = os.getloadavg()
    results = []
    workdir = Path(tempfile.mkdtemp(prefix="kip227-"))
    try:
        with LocalCluster.create(workdir / "cluster", nodes=NODES) as cluster:
            brokers = Brokers.of(cluster)
            with Admin({"bootstrap.servers": brokers.bootstrap}) as admin:
                create_topics(admin, brokers, sorted({n for n, _ in cells}))
            for partitions, hot in cells:
                results.append(run_cell(brokers, partitions, hot, args.warmup, args.seconds))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print()
    print(report(results))
    if args.plot:
        plot(results, Path(args.plot), setup_text(vars(args)))
        print(f"\nplot: {args.plot}")
    quick = (args.cells, args.seconds, args.warmup) != (DEFAULT_CELLS, 10.0, 3.0)
    save_results("kip227_experiment", quick, args, results, load_before)


if __name__ == "__main__":
    main()
