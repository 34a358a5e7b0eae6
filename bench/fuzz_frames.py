"""Hostile frames against a real broker, at length.

    python -m bench.fuzz_frames [--frames 100000] [--seed N] [--workers 4] [--health-every 1000]

Every API and version the broker serves, valid and mutated frames (``tests/frame_fuzz.py``:
bit flips, truncations, lengths and counts rewritten, records rebuilt with a fresh CRC,
unknown tags, random bytes), sent over TCP to one ``brook server`` process whose address space
is capped at 4 GiB. Every ``--health-every`` frames: the process is alive, its log holds no
traceback, and confluent-kafka produces a record and reads back every record of the health
topic, those written before the fuzzing included. Any failure stops the run with the seed
that reproduces it. Reports frames sent, connections, connections closed by the broker,
responses and health checks passed; raw results go to ``bench/results/fuzz_frames.json``.
"""

from __future__ import annotations

import argparse
import importlib
import random
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from .common import machine, save

# The frames and the driver are the test suite's (tests/frame_fuzz.py), on sys.path through
# .common, which puts the tests directory there.
frame_fuzz = importlib.import_module("frame_fuzz")


def run(frames: int, seed: int, workers: int, health_every: int) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="brook-fuzz-"))
    started = time.monotonic()

    def progress(fuzzer: Any) -> None:
        rate = fuzzer.stats.frames / (time.monotonic() - started)
        print(f"{fuzzer.describe()} ({rate:.0f} frames/s)", flush=True)

    try:
        broker = frame_fuzz.LimitedBrookProcess(tmp / "data", frame_fuzz.FUZZ_BROKER_CONFIG)
        with broker:
            fuzzer = frame_fuzz.run(
                broker,
                frames,
                seed,
                health_every=health_every,
                workers=workers,
                progress=progress,
            )
            elapsed = time.monotonic() - started
            exit_code = broker.stop()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    stats = fuzzer.stats
    return {
        "seed": seed,
        "frames": stats.frames,
        "hostile_frames": stats.hostile,
        "connections": stats.connections,
        "closed_by_broker": stats.closed_by_broker,
        "responses": stats.responses,
        "health_checks_passed": stats.health_checks,
        "seconds": round(elapsed, 1),
        "clean_shutdown": exit_code == 0,
        "frames_by_kind": dict(sorted(stats.labels.items())),
        "machine": machine(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--health-every", type=int, default=1000)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 32)
    print(f"seed {seed}", flush=True)
    out = run(args.frames, seed, args.workers, args.health_every)
    print(
        f"\nseed {out['seed']}: {out['frames']} frames sent in {out['seconds']} s "
        f"({out['hostile_frames']} of them hostile), "
        f"{out['connections']} connections, {out['closed_by_broker']} closed by the broker, "
        f"{out['responses']} responses, {out['health_checks_passed']} health checks passed, "
        f"clean shutdown: {out['clean_shutdown']}"
    )
    print("frames by kind:", out["frames_by_kind"])
    print(f"saved to {save('fuzz_frames', out)}")


if __name__ == "__main__":
    main()
