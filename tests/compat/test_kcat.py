"""kcat (librdkafka from Debian) against Brook: metadata and auto-creation, produce with keys,
headers and every codec, acks 0/1/all, the idempotent producer, consume from the beginning, an
offset, the tail, the end and a timestamp."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
from support import BrookProcess

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = pytest.mark.skipif(KCAT is None, reason="kcat is installed by the test command")


def kcat(*args: str, stdin: str | None = None, timeout: float = 60) -> str:
    assert KCAT is not None
    result = subprocess.run(
        [KCAT, *args], input=stdin, capture_output=True, text=True, timeout=timeout
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_metadata_lists_the_broker_and_auto_created_topic(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    kcat("-b", brook_session.bootstrap, "-P", "-t", unique_topic, stdin="hello\n")
    out = kcat("-b", brook_session.bootstrap, "-L", "-t", unique_topic)
    assert f'topic "{unique_topic}" with 1 partitions' in out
    assert f"broker 1 at 127.0.0.1:{brook_session.port}" in out


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_round_trip_per_codec_with_keys_and_headers(
    brook_session: BrookProcess, unique_topic: str, codec: str
) -> None:
    b = brook_session.bootstrap
    lines = "".join(f"key{i}:value-{i}\n" for i in range(100))
    kcat(
        "-b",
        b,
        "-P",
        "-t",
        unique_topic,
        "-K:",
        "-z",
        codec,
        "-H",
        "source=kcat",
        "-X",
        "acks=all",
        stdin=lines,
    )
    out = kcat("-b", b, "-C", "-t", unique_topic, "-o", "beginning", "-e", "-f", "%k|%s|%h|%o\n")
    rows = [line.split("|") for line in out.splitlines()]
    assert [(k, v) for k, v, _, _ in rows] == [(f"key{i}", f"value-{i}") for i in range(100)]
    assert all(h == "source=kcat" for _, _, h, _ in rows)
    assert [int(o) for *_, o in rows] == list(range(100))


def test_consume_from_offset_end_and_timestamp(
    brook_session: BrookProcess, unique_topic: str
) -> None:
    b = brook_session.bootstrap
    kcat("-b", b, "-P", "-t", unique_topic, stdin="".join(f"a{i}\n" for i in range(10)))
    time.sleep(0.05)
    split_ms = int(time.time() * 1000)
    time.sleep(0.05)
    kcat("-b", b, "-P", "-t", unique_topic, stdin="".join(f"b{i}\n" for i in range(5)))
    from_offset = kcat("-b", b, "-C", "-t", unique_topic, "-o", "7", "-e").split()
    assert from_offset == ["a7", "a8", "a9", "b0", "b1", "b2", "b3", "b4"]
    from_tail = kcat("-b", b, "-C", "-t", unique_topic, "-o", "-2", "-e").split()
    assert from_tail == ["b3", "b4"]
    from_time = kcat("-b", b, "-C", "-t", unique_topic, "-o", f"s@{split_ms}", "-e").split()
    assert from_time == ["b0", "b1", "b2", "b3", "b4"]


@pytest.mark.parametrize("settings", [["acks=0"], ["acks=1"], ["enable.idempotence=true"]])
def test_acks_and_idempotence(
    brook_session: BrookProcess, unique_topic: str, settings: list[str]
) -> None:
    b = brook_session.bootstrap
    options = [arg for setting in settings for arg in ("-X", setting)]
    kcat("-b", b, "-P", "-t", unique_topic, *options, stdin="".join(f"m{i}\n" for i in range(50)))
    out = kcat("-b", b, "-C", "-t", unique_topic, "-o", "beginning", "-c", "50", "-f", "%o %s\n")
    assert out.splitlines() == [f"{i} m{i}" for i in range(50)]


def test_consume_from_the_end(brook_session: BrookProcess, unique_topic: str) -> None:
    b = brook_session.bootstrap
    kcat("-b", b, "-P", "-t", unique_topic, stdin="".join(f"old{i}\n" for i in range(5)))
    assert KCAT is not None
    consumer = subprocess.Popen(
        [KCAT, "-b", b, "-C", "-t", unique_topic, "-o", "end", "-c", "1", "-f", "%o %s\n"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        tick = 0
        while consumer.poll() is None and time.monotonic() < deadline:
            kcat("-b", b, "-P", "-t", unique_topic, stdin=f"tick{tick}\n")
            tick += 1
            time.sleep(0.2)
        out, _ = consumer.communicate(timeout=10)
    finally:
        consumer.kill()
        consumer.wait()
    offset, value = out.split()
    assert int(offset) >= 5 and value.startswith("tick")


def test_null_values_and_empty_partition(brook_session: BrookProcess, unique_topic: str) -> None:
    b = brook_session.bootstrap
    kcat("-b", b, "-P", "-t", unique_topic, "-K:", "-Z", stdin="k1:\nk2:v2\n")
    out = kcat("-b", b, "-C", "-t", unique_topic, "-o", "beginning", "-e", "-Z", "-f", "%k=%S\n")
    assert out.splitlines() == ["k1=-1", "k2=2"]
