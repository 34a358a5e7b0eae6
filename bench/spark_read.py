"""Streaming read throughput of the Spark source: Brook -> Structured Streaming (availableNow)
into a noop sink and into parquet, for 100 B and 1 KiB values, beside the same rows read by
Spark's own parquet source in the same run (the ratio is the result).

    python -m bench.spark_read [--records-100 1000000] [--records-1k 300000] [--rounds 5]

Records/s = rows / the query's summed trigger time (from its progress reports), after one
warm-up query has started Spark's Python workers. Results go to bench/results/spark_read.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import RESULTS, brook_broker, machine

PARTITIONS = 2
TOPIC_SINKS = ("noop", "parquet")


def _session() -> Any:
    from brook.spark import local_session

    return local_session("brook-spark-read-bench", **{"spark.driver.memory": "4g"})


def _fill(bootstrap: str, topic: str, records: int, size: int) -> None:
    from brook.client.admin import Admin
    from brook.client.admin.types import NewTopic
    from brook.client.producer import Producer

    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    value = os.urandom(size)
    config = {
        "bootstrap.servers": bootstrap,
        "linger.ms": "20",
        "batch.size": "262144",
        "acks": "1",
    }
    with Producer(config) as producer:
        for i in range(records):
            producer.send(topic, value=value, partition=i % PARTITIONS)
        producer.flush()


def _run(stream: Any, sink: str, workdir: Path) -> tuple[int, float]:
    """Run one availableNow query; returns (rows, seconds of trigger execution)."""
    writer = stream.writeStream.format(sink)
    if sink == "parquet":
        writer = writer.option("path", str(workdir / "out"))
    query = (
        writer.option("checkpointLocation", str(workdir / "cp")).trigger(availableNow=True).start()
    )
    query.awaitTermination()
    if query.exception() is not None:
        raise RuntimeError(str(query.exception()))
    rows = sum(p["numInputRows"] for p in query.recentProgress)
    seconds = sum(p["durationMs"].get("triggerExecution", 0) for p in query.recentProgress) / 1000
    shutil.rmtree(workdir, ignore_errors=True)
    return rows, seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records-100", type=int, default=1_000_000)
    parser.add_argument("--records-1k", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    spark = _session()
    tmp = Path(tempfile.mkdtemp(prefix="brook-spark-bench-"))
    results: list[dict[str, Any]] = []
    try:
        with brook_broker() as bootstrap:
            for size, records in ((100, args.records_100), (1024, args.records_1k)):
                topic = f"bench-{size}"
                started = time.monotonic()
                _fill(bootstrap, topic, records, size)
                print(
                    f"filled {topic}: {records} records in {time.monotonic() - started:.1f} s",
                    flush=True,
                )

                def brook_stream(topic: str = topic) -> Any:
                    return (
                        spark.readStream.format("brook")
                        .option("kafka.bootstrap.servers", bootstrap)
                        .option("subscribe", topic)
                        .option("startingOffsets", "earliest")
                        .load()
                    )

                # The peer: the same rows as parquet files, read by Spark's parquet source.
                parquet_dir = tmp / f"rows-{size}"
                spark.read.format("brook").option("kafka.bootstrap.servers", bootstrap).option(
                    "subscribe", topic
                ).load().write.parquet(str(parquet_dir))

                def parquet_stream(path: Path = parquet_dir) -> Any:
                    schema = spark.read.parquet(str(path)).schema
                    return spark.readStream.schema(schema).parquet(str(path))

                _run(brook_stream(), "noop", tmp / "warmup")  # starts the Python workers
                for sink in TOPIC_SINKS:
                    timings: dict[str, list[float]] = {"brook": [], "parquet": []}
                    for _ in range(args.rounds):
                        for name, make in (("brook", brook_stream), ("parquet", parquet_stream)):
                            rows, seconds = _run(make(), sink, tmp / f"{name}-{sink}")
                            if rows != records:
                                raise RuntimeError(f"{name} read {rows} rows, expected {records}")
                            timings[name].append(rows / seconds)
                    brook_rate = statistics.median(timings["brook"])
                    parquet_rate = statistics.median(timings["parquet"])
                    row = {
                        "value_bytes": size,
                        "sink": sink,
                        "records": records,
                        "brook_records_per_s": round(brook_rate),
                        "parquet_records_per_s": round(parquet_rate),
                        "ratio": round(brook_rate / parquet_rate, 2),
                        "rounds": timings,
                    }
                    results.append(row)
                    print(
                        f"{size:>5} B  {sink:<8} brook {brook_rate:>12,.0f} rec/s   "
                        f"parquet source {parquet_rate:>12,.0f} rec/s   "
                        f"ratio {brook_rate / parquet_rate:.2f}",
                        flush=True,
                    )
    finally:
        spark.stop()
        shutil.rmtree(tmp, ignore_errors=True)

    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "spark_read.json"
    out.write_text(json.dumps({"machine": machine(), "results": results}, indent=2))
    print(f"machine: {machine()}")
    print(f"results: {out}")
    target = next(r for r in results if r["value_bytes"] == 100 and r["sink"] == "noop")
    met = target["brook_records_per_s"] >= 500_000
    print(
        f"target >= 500,000 records/s of 100 B into noop: "
        f"{target['brook_records_per_s']:,} -> {'met' if met else 'not met'}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
