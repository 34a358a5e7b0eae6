"""The cleaner threads (log_cleaner.py): they clean while the thread owning the logs keeps
appending, hand every segment-list change to that thread, and stop promptly, even while
waiting for it."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from log_cleaning import NOW, append, compacted, read_all

from brook.log.cleaner import Throttler
from brook.log.log_cleaner import CleanerConfig, LogCleaner
from brook.log.manager import LogManager


def _wait_for(condition: Callable[[], object], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_threads_clean_while_the_owner_keeps_appending(tmp_path: Path) -> None:
    owner = ThreadPoolExecutor(1, thread_name_prefix="owner")
    manager = LogManager([str(tmp_path)], {})
    owner.submit(manager.startup).result()
    plog = owner.submit(manager.get_or_create_log, "t", 0, compacted(segment_bytes=2_000)).result()
    swapped_on: set[str] = set()
    real_replace = plog.replace_segments

    def replace(*args: Any, **kwargs: Any) -> bool:
        swapped_on.add(threading.current_thread().name)
        return real_replace(*args, **kwargs)

    plog.replace_segments = replace  # type: ignore[method-assign]
    cleaner = LogCleaner(
        manager,
        CleanerConfig(threads=2, backoff_ms=10, dedupe_buffer_size=1 << 22),
        run_on_log_thread=owner.submit,
    )
    cleaner.start()
    try:
        written = 0
        for _ in range(30):
            owner.submit(
                lambda n=written: [
                    append(plog, [(b"k%d" % (i % 5), b"v" * 50)], NOW + n + i) for i in range(20)
                ]
            ).result()
            written += 20
        _wait_for(lambda: cleaner.cleanings >= 2)
        _wait_for(lambda: owner.submit(lambda: len(read_all(plog))).result() < written / 2)
    finally:
        cleaner.stop()
    assert swapped_on and all(name.startswith("owner") for name in swapped_on)
    records = owner.submit(read_all, plog).result()
    latest = {}
    for offset, key, _, _ in records:
        latest[key] = offset
    assert sorted(latest) == [b"k%d" % i for i in range(5)]
    assert max(latest.values()) == written - 1
    owner.submit(manager.shutdown).result()
    owner.shutdown()


def test_stop_wakes_a_thread_waiting_for_the_owner(tmp_path: Path) -> None:
    manager = LogManager([str(tmp_path)], {})
    manager.startup()
    blocked = threading.Event()

    def stuck_owner(fn: Callable[[], Any]) -> Future[Any]:
        blocked.set()
        return Future()  # never run: the owner is busy

    cleaner = LogCleaner(manager, CleanerConfig(backoff_ms=60_000), run_on_log_thread=stuck_owner)
    cleaner.start()
    assert blocked.wait(10)
    started = time.monotonic()
    cleaner.stop(timeout=10)
    assert time.monotonic() - started < 5
    assert not [t for t in threading.enumerate() if t.name.startswith("log-cleaner")]
    manager.shutdown()


def test_config_from_the_server_table() -> None:
    from brook.config.server import parse_server_config

    cfg = parse_server_config(
        {
            "listeners": "PLAINTEXT://:9092",
            "log.cleaner.threads": "2",
            "log.cleaner.backoff.ms": "100",
            "brook.fault.cleaner.swap.delay.ms": "50",
        }
    )
    config = CleanerConfig.from_server_config(cfg)
    assert (config.enabled, config.threads, config.backoff_ms) == (True, 2, 100)
    assert config.dedupe_buffer_size == 134217728 and config.load_factor == 0.9
    assert config.swap_delay_ms == 50


def test_the_throttler_holds_the_threads_to_the_io_rate() -> None:
    """log.cleaner.io.max.bytes.per.second, checked as Kafka's Throttler every 300 ms of a
    simulated clock: a thread past the rate sleeps until the bytes moved fit it."""
    clock = [100.0]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    throttler = Throttler(1000.0, sleep, lambda: clock[0])
    throttler.maybe_throttle(900)
    clock[0] += 0.2
    throttler.maybe_throttle(100)  # within the check interval: nothing measured yet
    assert slept == []
    clock[0] += 0.2
    throttler.maybe_throttle(500)  # 1500 bytes in 0.4 s at 1000 B/s: 1.1 s more
    assert slept == [pytest.approx(1.1)]
    clock[0] += 0.5
    throttler.maybe_throttle(400)  # 400 bytes in 0.5 s since: within the rate
    assert len(slept) == 1
    unlimited = Throttler(float("inf"), sleep, lambda: clock[0])
    clock[0] += 10
    unlimited.maybe_throttle(1 << 40)
    assert len(slept) == 1
