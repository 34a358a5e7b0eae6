"""A streaming job run as its own driver process by the exactly-once test (which kills it):
Brook topic -> parquet files, a few records per micro-batch, until it is stopped or killed.

    python stream_job.py BOOTSTRAP TOPIC CHECKPOINT OUTPUT MAX_OFFSETS_PER_TRIGGER
"""

from __future__ import annotations

import sys

from conftest import new_session


def main() -> None:
    bootstrap, topic, checkpoint, output, max_offsets = sys.argv[1:6]
    spark = new_session()
    query = (
        spark.readStream.format("brook")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", max_offsets)
        .load()
        .selectExpr("cast(value as string) as value", "partition", "offset")
        .writeStream.format("parquet")
        .option("path", output)
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    print("started", flush=True)
    query.awaitTermination()


if __name__ == "__main__":
    main()
