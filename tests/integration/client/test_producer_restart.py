"""A Brook broker killed and restarted while the producer streams: with delivery.timeout.ms
long enough, every acknowledged record is stored exactly once (idempotence at work)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from readback import consume, create_topic
from support import BrookProcess

from brook import Producer

TOTAL = 6000


@pytest.mark.parametrize("clean", [True, False], ids=["stop", "kill"])
def test_restart_mid_stream_keeps_every_acknowledged_record_once(
    tmp_path: Path, unique_topic: str, clean: bool
) -> None:
    # Flushing every message makes a kill -9 lose nothing that was acknowledged.
    broker = BrookProcess(tmp_path / "data", {"log.flush.interval.messages": "1"})
    with broker:
        create_topic(broker.bootstrap, unique_topic, 2)
        config = {
            "bootstrap.servers": broker.bootstrap,
            "delivery.timeout.ms": 60000,
            "request.timeout.ms": 5000,
            "linger.ms": 2,
            "batch.size": 4096,
        }
        futures = []
        half = threading.Event()
        with Producer(config) as producer:

            def stream() -> None:
                for i in range(TOTAL):
                    futures.append(producer.send(unique_topic, f"{i:06d}".encode()))
                    if i == TOTAL // 3:
                        half.set()
                    if i % 200 == 0:
                        time.sleep(0.02)

            thread = threading.Thread(target=stream)
            thread.start()
            assert half.wait(30)
            sent_before_restart = len(futures)
            broker.restart(clean=clean)
            thread.join(60)
            producer.flush(60)
            errors = [f.exception(0) for f in futures if f.exception(0) is not None]
            assert not errors, errors[:3]
            # The broker went away while records were still being sent.
            assert sent_before_restart < TOTAL
        acknowledged = {f"{i:06d}".encode() for i in range(TOTAL)}
        stored = consume(broker.bootstrap, unique_topic, 2, TOTAL, timeout=60)
        values = [m.value() for m in stored]
        assert len(values) == len(set(values)), "a record was stored twice"
        assert set(values) == acknowledged
