"""Exactly-once from Brook into a file sink across restarts: a query stopped in the middle of a
stream, and a driver process killed with SIGKILL in the middle of a stream, each restarted from
its checkpoint; the output then holds every record once (no duplicates, no gaps)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from conftest import create_topic, produce, reader, spark_env

HERE = Path(__file__).resolve().parent


def _expected(topic_rows: dict[int, int]) -> list[tuple[int, int]]:
    return sorted((p, o) for p, n in topic_rows.items() for o in range(n))


def _output(spark, path: Path) -> list[tuple[int, int]]:
    # Read through Spark: the file sink's log says which files belong to committed batches.
    return sorted((r.partition, r.offset) for r in spark.read.parquet(str(path)).collect())


def _commits(checkpoint: Path) -> int:
    commits = checkpoint / "commits"
    return len([f for f in commits.iterdir() if f.name.isdigit()]) if commits.exists() else 0


def _finish_from_checkpoint(spark, bootstrap: str, topic: str, checkpoint: Path, out: Path) -> None:
    query = (
        reader(
            spark,
            bootstrap,
            stream=True,
            subscribe=topic,
            startingOffsets="earliest",
            maxOffsetsPerTrigger="400",
        )
        .selectExpr("cast(value as string) as value", "partition", "offset")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(180)
    assert query.exception() is None


def test_stop_and_restart(spark, brook_session, unique_topic: str, tmp_path: Path) -> None:
    bootstrap = brook_session.bootstrap
    create_topic(bootstrap, unique_topic, 2)
    for p in (0, 1):
        produce(bootstrap, unique_topic, [b"%d-%d" % (p, i) for i in range(500)], partition=p)
    checkpoint, out = tmp_path / "cp", tmp_path / "out"
    query = (
        reader(
            spark,
            bootstrap,
            stream=True,
            subscribe=unique_topic,
            startingOffsets="earliest",
            maxOffsetsPerTrigger="100",
        )
        .selectExpr("cast(value as string) as value", "partition", "offset")
        .writeStream.format("parquet")
        .option("path", str(out))
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    deadline = time.monotonic() + 120
    while _commits(checkpoint) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()
    partial = _output(spark, out)
    assert 300 <= len(partial) < 1000, "the query was to be stopped in the middle of the stream"
    assert len(set(partial)) == len(partial)

    produce(bootstrap, unique_topic, [b"0-%d" % i for i in range(500, 700)], partition=0)
    _finish_from_checkpoint(spark, bootstrap, unique_topic, checkpoint, out)
    assert _output(spark, out) == _expected({0: 700, 1: 500})
    values = {r.value for r in spark.read.parquet(str(out)).collect()}
    assert values == {f"0-{i}" for i in range(700)} | {f"1-{i}" for i in range(500)}


def test_driver_killed_and_restarted(
    spark, brook_session, unique_topic: str, tmp_path: Path
) -> None:
    bootstrap = brook_session.bootstrap
    create_topic(bootstrap, unique_topic, 2)
    for p in (0, 1):
        produce(bootstrap, unique_topic, [b"%d-%d" % (p, i) for i in range(1000)], partition=p)
    checkpoint, out = tmp_path / "cp", tmp_path / "out"
    log = open(tmp_path / "job.log", "wb")  # noqa: SIM115 - handed to the child process
    job = subprocess.Popen(
        [
            sys.executable,
            str(HERE / "stream_job.py"),
            bootstrap,
            unique_topic,
            str(checkpoint),
            str(out),
            "50",
        ],
        cwd=HERE,
        env={**os.environ, **spark_env()},
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    try:
        deadline = time.monotonic() + 180
        while _commits(checkpoint) < 4 and time.monotonic() < deadline:
            assert job.poll() is None, (tmp_path / "job.log").read_text()[-3000:]
            time.sleep(0.05)
        assert _commits(checkpoint) >= 4, (tmp_path / "job.log").read_text()[-3000:]
    finally:
        # SIGKILL the whole driver (Python and its JVM) while batches keep running.
        os.killpg(job.pid, signal.SIGKILL)
        job.wait(30)
    done = _commits(checkpoint)
    assert done < 40, "the job was to be killed in the middle of the stream"

    _finish_from_checkpoint(spark, bootstrap, unique_topic, checkpoint, out)
    assert _output(spark, out) == _expected({0: 1000, 1: 1000})
