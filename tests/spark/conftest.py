"""The Spark suite: one local[2] SparkSession for the whole test session (startup takes about
ten seconds), a Brook broker, and helpers to produce and read back records."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from brook.client.admin import Admin
from brook.client.admin.types import NewTopic
from brook.client.producer import Producer

REPO = Path(__file__).resolve().parents[2]


def spark_env() -> dict[str, str]:
    """What Spark's Python workers need: this interpreter, a loopback address, and Brook on
    the import path (the data source class is pickled by reference)."""
    path = os.environ.get("PYTHONPATH", "")
    return {
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYTHONPATH": path
        if str(REPO) in path.split(os.pathsep)
        else os.pathsep.join(p for p in (path, str(REPO)) if p),
    }


def new_session() -> Any:
    from brook.spark import local_session

    os.environ.update(spark_env())
    return local_session("brook-spark-tests")


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    session = new_session()
    try:
        yield session
    finally:
        session.stop()


def create_topic(
    bootstrap: str, name: str, partitions: int = 1, configs: dict[str, str] | None = None
) -> None:
    with Admin({"bootstrap.servers": bootstrap}) as admin:
        admin.create_topics([NewTopic(name, partitions, 1, configs=configs or {})])


def produce(
    bootstrap: str,
    topic: str,
    values: list[bytes],
    partition: int | None = None,
    keys: list[bytes | None] | None = None,
    headers: list[list[tuple[str, bytes | None]] | None] | None = None,
    timestamps: list[int] | None = None,
) -> None:
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": "5"}) as producer:
        futures = [
            producer.send(
                topic,
                value=value,
                key=keys[i] if keys else None,
                partition=partition,
                headers=headers[i] if headers else None,
                timestamp_ms=timestamps[i] if timestamps else None,
            )
            for i, value in enumerate(values)
        ]
        producer.flush()
        for f in futures:
            f.result(30)


def reader(spark, bootstrap: str, stream: bool = False, **options: str):
    """spark.read / spark.readStream of format brook with the given options."""
    r = (spark.readStream if stream else spark.read).format("brook")
    r = r.option("kafka.bootstrap.servers", bootstrap)
    for key, value in options.items():
        r = r.option(key, value)
    return r.load()
