"""KIP-227's follower case on one command: what a follower's Fetch costs, on the wire, as the
partitions it follows grow, with incremental fetch sessions and without.

    python -m bench.kip227_followers [--partitions 100,300,1000,3000] [--hot 10] [--plot]

Two 3-node ``brook cluster``s (LocalCluster: three ``brook server`` processes, each controller
and broker), one with fetch sessions (the default) and one whose brokers keep none
(``max.incremental.fetch.session.cache.slots=0``, Kafka's way to turn them off: a leader
then answers every fetch with session id 0 and its followers send every fetch in full). Each
broker advertises a port of tests/multinode_proxy.py in its pass-through form instead of its
own, so the followers' fetches to their leaders pass the proxy, which counts the bytes of
every Fetch request and response (size prefix included) and keeps the frames of the measured
window, decoded afterwards to count the partitions each names. One topic of replication
factor 3, partition p led by the (p mod 3)-th broker, grown step by step (CreatePartitions)
through the ``--partitions`` counts; ``--hot`` partitions (spread evenly over the leaders)
receive one 100-byte record each every 50 ms from a producer in this process, the others
stay idle. At each step: a lead-in, then the measured window. Results go to
bench/results/kip227_followers.json, the plot to docs/images/kip227_followers.png (with
``--plot``); docs/experiments.md reads them.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from brook.cli.local_cluster import LocalCluster
from brook.client.admin import Admin, NewPartitions, NewTopic
from brook.protocol.api import ApiKey

from .common import ROOT, Claim, MultiNodeProxy, add_output_arguments, save_results
from .kip227_experiment import (
    NODES,
    WAIT_S,
    Brokers,
    FetchTap,
    HotProducer,
    averages,
    decode_exchange,
    hot_partitions,
    scaling_claims,
)

TOPIC = "kip227-followers"
DEFAULT_PARTITIONS = "100,300,1000,3000"
DEFAULT_PLOT = ROOT / "docs" / "images" / "kip227_followers.png"
MODES = ("sessions", "sessionless")


def advertise_through(cluster: LocalCluster, proxy: MultiNodeProxy) -> None:
    """Make each broker advertise its proxy port (before the cluster starts): the followers,
    which reach a leader at the address it registered, then fetch through the proxy."""
    for node in cluster.brokers:
        port = proxy.ports[node.node_id]
        with open(node.config_path, "a") as config:
            config.write(f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}\n")


def replicas(partition: int, ids: list[int]) -> list[int]:
    """Partition p: led by the (p mod 3)-th broker, followed by the two others."""
    return [ids[(partition + i) % len(ids)] for i in range(len(ids))]


def grow(admin: Admin, ids: list[int], current: int, wanted: int) -> None:
    """Create the topic with ``wanted`` partitions (current 0) or grow it to that many, then
    wait until every partition has a leader and its full ISR."""
    if current == 0:
        assignment = {p: replicas(p, ids) for p in range(wanted)}
        admin.create_topics([NewTopic(TOPIC, replica_assignment=assignment)])
    else:
        added = [replicas(p, ids) for p in range(current, wanted)]
        admin.create_partitions({TOPIC: NewPartitions(wanted, added)})
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            parts = admin.describe_topics([TOPIC])[TOPIC].partitions
            if len(parts) == wanted and all(
                p.leader >= 0 and len(p.isr) == len(ids) for p in parts
            ):
                return
        except Exception:  # still being created
            pass
        if time.monotonic() > deadline:
            raise TimeoutError(f"{TOPIC}: {wanted} partitions not all led with a full ISR")
        time.sleep(0.2)


def measure(proxy: MultiNodeProxy, tap: FetchTap, brokers: Brokers, seconds: float) -> dict:
    """One window: the Fetch traffic through the proxy (all of it followers') and the
    brokers' CPU."""

    def counts() -> tuple[int, int, int, float]:
        f = proxy.api_traffic(ApiKey.FETCH)
        return f.requests, f.request_bytes, f.response_bytes, brokers.cpu_seconds()

    tap.exchanges.clear()
    tap.recording = True
    start, before = time.monotonic(), counts()
    time.sleep(seconds)
    after, window = counts(), time.monotonic() - start
    tap.recording = False
    decoded = [decode_exchange(v, req, resp) for _, v, req, resp in tap.exchanges]
    return {
        "window_s": window,
        "fetches": after[0] - before[0],
        "request_bytes": after[1] - before[1],
        "response_bytes": after[2] - before[2],
        "broker_cpu_s": after[3] - before[3],
        "decoded": averages(decoded),
        "decoded_exchanges": len(decoded),
        "incremental_exchanges": sum(1 for d in decoded if d["session_epoch"] > 0),
    }


def run_mode(
    sessions: bool, sizes: list[int], hot_count: int, warmup: float, seconds: float, work: Path
) -> list[dict[str, Any]]:
    overrides = {} if sessions else {"max.incremental.fetch.session.cache.slots": "0"}
    mode = MODES[0] if sessions else MODES[1]
    cluster = LocalCluster.create(work / mode, nodes=NODES, overrides=overrides)
    real = {n.node_id: n.broker_address for n in cluster.brokers}
    tap = FetchTap()
    rows = []
    with MultiNodeProxy.in_front_of(real, tap=tap) as proxy:
        advertise_through(cluster, proxy)
        with cluster:
            brokers = Brokers.of(cluster)
            ids = sorted(real)
            hot = hot_partitions(sizes[0], hot_count)
            with Admin({"bootstrap.servers": brokers.bootstrap}) as admin:
                grow(admin, ids, 0, sizes[0])
                with HotProducer(brokers.bootstrap, TOPIC, hot):
                    current = sizes[0]
                    for size in sizes:
                        if size > current:
                            grow(admin, ids, current, size)
                            current = size
                        time.sleep(warmup)
                        load = os.getloadavg()[0]
                        run = measure(proxy, tap, brokers, seconds)
                        run.update(partitions=size, hot=len(hot), mode=mode, load_average=load)
                        rows.append(run)
                        print(f"{mode}, {size:,} partitions: {summary(run)}", flush=True)
    return rows


def per_fetch(run: dict[str, Any]) -> dict[str, float]:
    fetches = max(1, run["fetches"])
    return {
        "fetches_per_s": run["fetches"] / run["window_s"],
        "request_bytes": run["request_bytes"] / fetches,
        "response_bytes": run["response_bytes"] / fetches,
        "overhead_bytes": run["response_bytes"] / fetches - run["decoded"]["record_bytes"],
        "broker_cpu_pct": 100 * run["broker_cpu_s"] / run["window_s"],
    }


def summary(run: dict[str, Any]) -> str:
    f = per_fetch(run)
    return (
        f"{run['fetches']} fetches, {f['request_bytes']:,.0f} B/request, "
        f"{f['response_bytes']:,.0f} B/response, brokers {f['broker_cpu_pct']:.0f}% CPU"
    )


def report(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| partitions | receiving | fetch sessions | follower fetches/s | request bytes "
        "| partitions in request | response bytes | partitions in response "
        "| response bytes besides records | brokers' CPU (% of a core, 3 together) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in sorted(rows, key=lambda r: (r["partitions"], r["mode"])):
        f, d = per_fetch(run), run["decoded"]
        lines.append(
            f"| {run['partitions']:,} | {run['hot']} | "
            f"{'on' if run['mode'] == MODES[0] else 'off'} | {f['fetches_per_s']:.1f} "
            f"| {f['request_bytes']:,.0f} | {d['request_partitions']:.1f} "
            f"| {f['response_bytes']:,.0f} | {d['response_partitions']:.1f} "
            f"| {f['overhead_bytes']:,.0f} | {f['broker_cpu_pct']:.0f} |"
        )
    return "\n".join(lines)


def claims(saved: dict[str, Any]) -> list[Claim]:
    points: dict[str, dict[int, tuple[float, float]]] = {m: {} for m in MODES}
    for run in saved["results"]:
        f = per_fetch(run)
        points[run["mode"]][run["partitions"]] = (f["request_bytes"], f["overhead_bytes"])
    return scaling_claims("followers", points)


def plot(rows: list[dict[str, Any]], path: Path, setup: str) -> None:
    """Bytes per follower fetch against the partitions followed, with sessions and without."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 5.5))
    for mode, colour, name in (
        (MODES[0], "tab:blue", "fetch sessions on"),
        (MODES[1], "tab:red", "fetch sessions off"),
    ):
        runs = sorted((r for r in rows if r["mode"] == mode), key=lambda r: r["partitions"])
        xs = [r["partitions"] for r in runs]
        for key, style, what in (
            ("request_bytes", "-o", "request"),
            ("overhead_bytes", "--s", "response besides records"),
        ):
            ax.plot(
                xs,
                [max(per_fetch(r)[key], 1.0) for r in runs],
                style,
                color=colour,
                label=f"{what}, {name}",
            )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("partitions in the topic (RF 3; each follower fetch names a leader's third)")
    ax.set_ylabel("bytes per follower fetch")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(f"KIP-227, followers: bytes per fetch\n{setup}", fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)


def setup_text(args: dict[str, Any]) -> str:
    return (
        f"3-node brook cluster on one machine, one RF 3 topic, {args['hot']} partitions "
        f"receiving a 100-B record every 50 ms, {args['seconds']:.0f} s measured per step"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--partitions", default=DEFAULT_PARTITIONS, help="topic sizes, in growing order"
    )
    parser.add_argument("--hot", type=int, default=10, help="partitions receiving records")
    parser.add_argument("--seconds", type=float, default=10.0, help="measured window per step")
    parser.add_argument("--warmup", type=float, default=3.0, help="unmeasured lead-in per step")
    add_output_arguments(parser, DEFAULT_PLOT)
    args = parser.parse_args()
    if args.from_results:
        saved = json.loads(Path(args.from_results).read_text())
        print(report(saved["results"]))
        if args.plot:
            plot(saved["results"], Path(args.plot), setup_text(saved["args"]))
        return
    sizes = [int(s) for s in args.partitions.split(",")]
    if sizes != sorted(set(sizes)) or sizes[0] < NODES or not 1 <= args.hot <= sizes[0]:
        parser.error(
            f"--partitions must grow, from at least {NODES}; --hot between 1 and the first size"
        )
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="kip227f-"))
    rows: list[dict[str, Any]] = []
    try:
        for sessions in (True, False):
            rows += run_mode(sessions, sizes, args.hot, args.warmup, args.seconds, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(report(rows))
    if args.plot:
        plot(rows, Path(args.plot), setup_text(vars(args)))
        print(f"\nplot: {args.plot}")
    defaults = (DEFAULT_PARTITIONS, 10, 10.0, 3.0)
    quick = (args.partitions, args.hot, args.seconds, args.warmup) != defaults
    save_results("kip227_followers", quick, args, rows, load_before)


if __name__ == "__main__":
    main()
