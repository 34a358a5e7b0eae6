"""The streaming job: clicks from Brook, parsed from JSON, then
1. every event appended to parquet files (partitioned by page), and
2. views per page in 10-second event-time windows, with a 5-second watermark, written back to
   a Brook topic as JSON (one record per window and page, once the window has closed; events
   later than the watermark are dropped from the counts, as Spark drops them).

  python -m examples.clickstream.job --bootstrap 127.0.0.1:9092 --out ./data-pipeline/out
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .generator import HEARTBEAT_PAGE

EVENT_SCHEMA = "user string, page string, ts long"
WINDOW = "10 seconds"
WATERMARK = "5 seconds"


def start(
    spark: Any,
    bootstrap: str,
    *,
    clicks: str,
    counts: str,
    out: Path,
    trigger: str = "2 seconds",
) -> list[Any]:
    """Start both queries; returns them (parquet writer, counts writer)."""
    from pyspark.sql import functions as F

    events = (
        spark.readStream.format("brook")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", clicks)
        .option("startingOffsets", "earliest")
        .load()
        .select(
            F.from_json(F.col("value").cast("string"), EVENT_SCHEMA).alias("e"),
            "partition",
            "offset",
        )
        .select("e.*", "partition", "offset")
        .withColumn("event_time", F.timestamp_millis("ts"))
    )
    raw = (
        events.where(F.col("page") != HEARTBEAT_PAGE)
        .writeStream.format("parquet")
        .option("path", str(out / "events"))
        .option("checkpointLocation", str(out / "checkpoints" / "events"))
        .partitionBy("page")
        .trigger(processingTime=trigger)
        .start()
    )
    # Heartbeats are counted too: they move the watermark on (a filter here would be pushed
    # below the watermark), and their own window, later than every other, never closes.
    windowed = (
        events.withWatermark("event_time", WATERMARK)
        .groupBy(F.window("event_time", WINDOW), "page")
        .agg(F.count("*").alias("views"), F.approx_count_distinct("user").alias("users"))
        .select(
            F.col("page").cast("binary").alias("key"),
            F.to_json(
                F.struct(
                    F.col("window.start").alias("window_start"),
                    F.col("window.end").alias("window_end"),
                    "page",
                    "views",
                    "users",
                )
            ).alias("value"),
        )
        .writeStream.format("brook")
        .outputMode("append")  # a window is written once, when the watermark passes its end
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", counts)
        .option("checkpointLocation", str(out / "checkpoints" / "counts"))
        .trigger(processingTime=trigger)
        .start()
    )
    return [raw, windowed]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Run the clickstream job until stopped.")
    parser.add_argument("--bootstrap", default="127.0.0.1:9092")
    parser.add_argument("--clicks", default="clicks")
    parser.add_argument("--counts", default="page-counts")
    parser.add_argument("--out", type=Path, default=Path("data-pipeline/out"))
    args = parser.parse_args(argv)
    from .pipeline import spark_session

    spark = spark_session()
    queries = start(spark, args.bootstrap, clicks=args.clicks, counts=args.counts, out=args.out)
    try:
        spark.streams.awaitAnyTermination()
    finally:
        for q in queries:
            q.stop()


if __name__ == "__main__":
    main()
