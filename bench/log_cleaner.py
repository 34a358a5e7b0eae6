"""The log cleaner: how fast it cleans, and what it costs produce latency while it runs.

    python -m bench.log_cleaner [--mb 64] [--keys 50000] [--rounds 3] [--rate 2000]

1. Throughput, in process: a compacted log of ``--mb`` MB of 200-byte records (``--keys``
   distinct keys, each written many times), in 16 MiB segments, uncompressed and lz4, cleaned
   once by one cleaner (what one ``log.cleaner.threads`` thread does); MB/s of log read, with
   the offset map and rewriting phases apart, and the bytes left.
2. Produce latency, on one broker, in the same run: confluent-kafka produces 1 KiB records
   at ``--rate`` a second (acks=1, linger 0) to an ordinary topic throughout, while
   ``--rounds`` compacted topics of ``--mb`` MB (4 MiB segments), held back by
   min.compaction.lag.ms, are released one at a time, 3 s apart, and cleaned. The cleaner's
   log line of each cleaning gives its MB/s and when it ran: records sent while a cleaning
   ran are "with", the others "without"; p50/p99/p99.9 of their delivery latency, and the
   ratios.
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.log.log_cleaner import CleanerConfig, LogCleaner
from brook.log.manager import LogManager
from brook.protocol.records import build_batch, encode_record

from .common import BrookProcess, brook_process, machine, save

MB = 1_000_000
RECORD = 200
SEGMENT = 16 * 1024 * 1024
# Values of hex digits from a seeded generator: lz4 halves them, as it does text-like data.
_VALUES = [random.Random(n).randbytes((RECORD - 20) // 2).hex().encode() for n in range(997)]


def _fill_log(plog: PartitionLog, megabytes: int, keys: int, codec: int) -> int:
    """``megabytes`` of batches of 50 records; returns the bytes written."""
    written = 0
    n = 0
    now = int(time.time() * 1000)
    while written < megabytes * MB:
        records = [
            encode_record(i, 0, b"key-%08d" % ((n + i) * 7919 % keys), _VALUES[(n + i) % 997], ())
            for i in range(50)
        ]
        batch = build_batch(records, base_timestamp=now, max_timestamp=now, codec=codec)
        plog.append_as_leader(batch, 0, now)
        written += len(batch)
        n += 50
    plog.roll(now)
    return written


def throughput(megabytes: int, keys: int) -> list[dict]:
    results = []
    for name, codec in (("uncompressed", 0), ("lz4", 3)):
        tmp = Path(tempfile.mkdtemp(prefix="brook-bench-cleaner-"))
        try:
            manager = LogManager([str(tmp)], {})
            manager.startup()
            config = LogConfig.from_topic_config(
                {"cleanup.policy": "compact", "segment.bytes": SEGMENT}
            )
            plog = manager.get_or_create_log("t", 0, config)
            written = _fill_log(plog, megabytes, keys, codec)
            cleaner = LogCleaner(manager, CleanerConfig())
            worker = cleaner.new_cleaner()
            started = time.perf_counter()
            assert cleaner.clean_once(worker)
            elapsed = time.perf_counter() - started
            stats = cleaner.last_stats
            assert stats is not None
            results.append(
                {
                    "records": name,
                    "log_mb": round(written / MB, 1),
                    "seconds": round(elapsed, 2),
                    "mb_per_s": round(written / MB / elapsed, 1),
                    "map_phase_s": round(stats.map_done - stats.started, 2),
                    "rewrite_phase_s": round(stats.ended - stats.map_done, 2),
                    "records_read": stats.records_read,
                    "records_kept": stats.records_kept,
                    "mb_left": round(plog.size_in_bytes() / MB, 2),
                }
            )
            manager.shutdown()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return results


# -- produce latency -----------------------------------------------------------------------


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


def _create(bootstrap: str, name: str, configs: dict[str, str]) -> None:
    from confluent_kafka.admin import NewTopic

    admin = _admin(bootstrap)  # held until the futures are done
    for future in admin.create_topics([NewTopic(name, 1, 1, config=configs)]).values():
        future.result(30)


def _fill_topic(bootstrap: str, topic: str, megabytes: int, keys: int) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {"bootstrap.servers": bootstrap, "linger.ms": 20, "batch.size": 1 << 20, "acks": 1}
    )
    for n in range(megabytes * MB // RECORD):
        while True:
            try:
                producer.produce(
                    topic, _VALUES[n % 997], key=b"key-%08d" % (n * 7919 % keys), partition=0
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(120) == 0


def _release(bootstrap: str, topic: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    resource = ConfigResource(
        "topic",
        topic,
        incremental_configs=[
            ConfigEntry("min.compaction.lag.ms", "0", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    admin = _admin(bootstrap)
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


class _Measurement:
    """confluent-kafka producing 1 KiB records at ``rate`` a second on its own thread until
    stopped; each record's wall-clock send time and delivery latency (ms)."""

    def __init__(self, bootstrap: str, topic: str, rate: int) -> None:
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(bootstrap, topic, rate))
        self._thread.start()

    def _run(self, bootstrap: str, topic: str, rate: int) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0, "acks": 1})
        samples = self.samples

        def report(err: object, _msg: object, wall: float, sent: float) -> None:
            assert err is None, err
            samples.append((wall, (time.perf_counter() - sent) * 1000))

        value = b"x" * 1024
        start = time.perf_counter()
        n = 0
        while not self._stop.is_set():
            due = start + n / rate
            while (now := time.perf_counter()) < due:
                producer.poll(min(due - now, 0.001))
            wall = time.time()
            producer.produce(
                topic,
                value,
                partition=0,
                on_delivery=lambda e, m, w=wall, t=now: report(e, m, w, t),
            )
            producer.poll(0)
            n += 1
        assert producer.flush(60) == 0

    def stop(self) -> list[tuple[float, float]]:
        self._stop.set()
        self._thread.join()
        return self.samples


def _percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(q: float) -> float:
        return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)

    return {"p50": at(0.5), "p99": at(0.99), "p99.9": at(0.999), "count": len(ordered)}


_CLEANED = re.compile(
    r"^\[(\S+ \S+)\] INFO log cleaner \d+ cleaned (\S+) \(dirty part .*?\): ([\d.]+) MB in "
    r"([\d.]+) s \(([\d.]+) MB/s\)",
    re.MULTILINE,
)


def _cleanings(broker: BrookProcess) -> list[dict]:
    """The broker's cleanings, from its log: the log line is written when one ends."""
    out = []
    for m in _CLEANED.finditer(broker.log_path.read_text(errors="replace")):
        ended = datetime.strptime(m[1], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        seconds = float(m[4])
        out.append(
            {
                "log": m[2],
                "mb": float(m[3]),
                "seconds": seconds,
                "mb_per_s": float(m[5]),
                "window": (ended - seconds, ended),
            }
        )
    return out


def latency(megabytes: int, keys: int, rounds: int, rate: int) -> dict:
    """One producer runs throughout; the held topics are released one at a time, 3 s
    apart. Records sent while a cleaning ran are "with", the others "without"."""
    overrides = {"log.cleaner.backoff.ms": "100"}
    held = {
        "cleanup.policy": "compact",
        "segment.bytes": str(SEGMENT // 4),
        "min.compaction.lag.ms": str(10**12),
    }
    with brook_process(overrides) as broker:
        bootstrap = broker.bootstrap
        _create(bootstrap, "produced", {})
        for r in range(rounds):
            _create(bootstrap, f"compacted{r}", held)
            _fill_topic(bootstrap, f"compacted{r}", megabytes, keys)
        measurement = _Measurement(bootstrap, "produced", rate)
        time.sleep(3)
        for r in range(rounds):
            _release(bootstrap, f"compacted{r}")
            deadline = time.monotonic() + 300
            while len(_cleanings(broker)) <= r and time.monotonic() < deadline:
                time.sleep(0.2)
            time.sleep(3)
        samples = measurement.stop()
        cleanings = _cleanings(broker)
    windows = [c["window"] for c in cleanings]

    def during(wall: float) -> bool:
        return any(start <= wall <= end for start, end in windows)

    with_ = [ms for wall, ms in samples if during(wall)]
    without = [ms for wall, ms in samples if not during(wall)]
    out = {"cleanings": cleanings, "without": _percentiles(without), "with": _percentiles(with_)}
    out["ratios"] = {
        key: round(out["with"][key] / out["without"][key], 2) for key in ("p50", "p99", "p99.9")
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--keys", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=int, default=2000)
    args = parser.parse_args()
    result = {
        "machine": machine(),
        "args": vars(args),
        "throughput": throughput(args.mb, args.keys),
    }
    for row in result["throughput"]:
        print(row)
    result["latency"] = latency(args.mb, args.keys, args.rounds, args.rate)
    for key in ("cleanings", "without", "with", "ratios"):
        print(key, result["latency"][key])
    print(save("log_cleaner", result))


if __name__ == "__main__":
    main()
