"""The whole pipeline in one command (``make pipeline``): a single-node Brook broker on a free
loopback port (data in ./data-pipeline), the Spark job, and the clickstream generator; then the
results (events in parquet, per-page counts per window read back from Brook) are printed and
everything is stopped.

    python -m examples.clickstream.pipeline [--seconds 20] [--rate 500] [--data-dir DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from brook.client.admin import Admin
from brook.client.admin.types import NewTopic

from . import job
from .generator import PAGES, generate

CLICKS, COUNTS = "clicks", "page-counts"


def spark_session() -> Any:
    """A local Spark (2 cores) with the brook format registered."""
    from brook.spark import local_session

    return local_session("brook-clickstream")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def broker(data_dir: Path, port: int) -> Iterator[str]:
    """``brook server`` on 127.0.0.1:port; stopped with SIGTERM (a clean shutdown) at the end."""
    data_dir.mkdir(parents=True, exist_ok=True)
    log = open(data_dir / "broker.log", "wb")  # noqa: SIM115 - handed to the child process
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "brook.cli.main",
            "server",
            "--override",
            f"listeners=PLAINTEXT://127.0.0.1:{port}",
            "--override",
            f"log.dirs={data_dir / 'logs'}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    log.close()
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"the broker exited; see {data_dir / 'broker.log'}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the broker did not start within 30 s")
            time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _window_counts(spark: Any, bootstrap: str) -> list[dict[str, Any]]:
    rows = (
        spark.read.format("brook")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", COUNTS)
        .load()
        .selectExpr("cast(value as string) as v")
        .collect()
    )
    return [json.loads(r.v) for r in rows]


def _wait_until_settled(spark: Any, bootstrap: str, queries: list[Any]) -> None:
    """Until both queries have read everything and the closed windows have all been written."""
    seen = -1
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for q in queries:
            q.processAllAvailable()
        time.sleep(5)  # a no-data batch writes the windows the last watermark closed
        count = len(_window_counts(spark, bootstrap))
        if count == seen:
            return
        seen = count


def _print_windows(windows: list[dict[str, Any]]) -> None:
    table: dict[str, dict[str, int]] = defaultdict(dict)
    for w in windows:
        span = f"{w['window_start'][11:19]}-{w['window_end'][11:19]}"
        table[span][w["page"]] = w["views"]
    print(f"\nviews per page in 10-second event-time windows (read back from topic '{COUNTS}'):")
    print(f"{'window (UTC)':<20}" + "".join(f"{p:>10}" for p in PAGES))
    for span in sorted(table):
        print(f"{span:<20}" + "".join(f"{table[span].get(p, 0):>10}" for p in PAGES))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20, help="how long events are sent")
    parser.add_argument("--rate", type=int, default=500, help="events per second")
    parser.add_argument("--data-dir", type=Path, default=Path("data-pipeline"))
    parser.add_argument("--port", type=int, default=0, help="broker port (0: a free one)")
    args = parser.parse_args(argv)

    shutil.rmtree(args.data_dir, ignore_errors=True)  # each run starts from nothing
    out = args.data_dir / "out"
    with broker(args.data_dir, args.port or _free_port()) as bootstrap:
        print(f"broker on {bootstrap}, data in {args.data_dir}/")
        with Admin({"bootstrap.servers": bootstrap}) as admin:
            admin.create_topics([NewTopic(CLICKS, 3, 1), NewTopic(COUNTS, 1, 1)])
        spark = spark_session()
        queries = job.start(spark, bootstrap, clicks=CLICKS, counts=COUNTS, out=out)
        try:
            # Start sending once the job runs, so events meet the watermark as they would live.
            while any(q.lastProgress is None for q in queries):
                time.sleep(0.2)
            print(f"sending page views for {args.seconds:.0f} s at {args.rate}/s ...")
            sent = generate(bootstrap, CLICKS, seconds=args.seconds, rate=args.rate)
            print(f"sent {sent.events} events ({sent.late} of them more than 30 s late)")
            _wait_until_settled(spark, bootstrap, queries)
        finally:
            for q in queries:
                q.stop()

        stored = spark.read.parquet(str(out / "events"))
        per_page = {r.page: r["count"] for r in stored.groupBy("page").count().collect()}
        windows = _window_counts(spark, bootstrap)
        counted = sum(w["views"] for w in windows)
        _print_windows(windows)
        print(f"\nparquet ({out / 'events'}): {stored.count()} events, per page {per_page}")
        print(
            f"views in closed windows: {counted}; dropped as too late for the watermark: "
            f"{sent.events - counted}"
        )
        ok = per_page == dict(sent.per_page) and counted <= sent.events
        print(
            "every event sent is in parquet exactly once"
            if per_page == dict(sent.per_page)
            else "MISMATCH between the events sent and the parquet output"
        )
        spark.stop()
    print("broker and Spark stopped")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
