"""The cleaner threads (log_cleaner.py): they clean while the thread owning the logs keeps
appending, hand every segment-list change to that thread, and stop promptly, even while
waiting for it."""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from log_cleaning import NOW, append, compacted, read_all

from brook.log.log_cleaner import CleanerConfig, LogCleaner
from brook.log.manager import LogManager


def _wait_for(condition, timeout: float = 30.0) -> None:  # type: ignore[no-untyped-def]
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

    def replace(*args, **kwargs):  # type: ignore[no-untyped-def]
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

    def stuck_owner(fn):  # type: ignore[no-untyped-def]
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
