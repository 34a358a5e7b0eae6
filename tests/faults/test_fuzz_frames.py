"""Thousands of hostile frames against a real broker process: it never dies, logs no
traceback, loses nothing, and keeps serving a real client (confluent-kafka) throughout.

The frames are those of ``tests/frame_fuzz.py``: every API and version the broker serves,
valid and mutated (bit flips, truncations, lengths and counts rewritten, records rebuilt with
a fresh CRC, unknown tags, random bytes). The seed is printed with any failure; set
``BROOK_FUZZ_SEED`` to replay it and ``BROOK_FUZZ_FRAMES`` for a longer run
(``python -m bench.fuzz_frames`` runs 100,000 and more).
"""

from __future__ import annotations

import os
import random
from pathlib import Path

import frame_fuzz

FRAMES = int(os.environ.get("BROOK_FUZZ_FRAMES", "10000"))


def test_hostile_frames_never_hurt_the_broker(tmp_path: Path) -> None:
    seed = int(os.environ.get("BROOK_FUZZ_SEED", random.randrange(1 << 32)))
    broker = frame_fuzz.LimitedBrookProcess(tmp_path / "data", frame_fuzz.FUZZ_BROKER_CONFIG)
    with broker:
        try:
            fuzzer = frame_fuzz.run(broker, FRAMES, seed, health_every=500)
        except frame_fuzz.FuzzFailure as exc:
            raise AssertionError(f"BROOK_FUZZ_SEED={seed}: {exc}") from None
        stats = fuzzer.stats
        print(fuzzer.describe())
        assert stats.frames == FRAMES
        assert stats.health_checks == -(-FRAMES // 500)
        # the frames did reach the broker: some answered, some connections closed by it
        assert stats.hostile > FRAMES // 4, fuzzer.describe()
        assert stats.responses > FRAMES // 10, fuzzer.describe()
        assert stats.closed_by_broker > FRAMES // 20, fuzzer.describe()
        assert broker.stop() == 0, broker.log()
