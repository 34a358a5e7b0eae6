"""Group consumers as real processes (group_consumer.py) for the group suites, and the checks
they share: producing rounds of records, and waiting for a Stable split of the partitions."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from group_support import group_assignment
from rawclient import RawClient, produce
from support import env_with_repo

from brook.protocol.records import build_simple_batch

HERE = Path(__file__).resolve().parent
PARTITIONS = 6
SESSION_MS = 3000


class ConsumerProcess:
    """One consumer process and the events it reported."""

    def __init__(
        self,
        lib: str,
        bootstrap: str,
        topic: str,
        group: str,
        extra: dict[str, Any] | None = None,
        session_ms: int = SESSION_MS,
    ) -> None:
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - lives as long as the process
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(HERE / "group_consumer.py"),
                lib,
                bootstrap,
                topic,
                group,
                str(session_ms),
                json.dumps(extra or {}),
            ],
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
            env=env_with_repo(),
        )
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                event = json.loads(line)
            except ValueError:
                continue
            with self._lock:
                self.events.append(event)

    def values(self) -> set[str]:
        with self._lock:
            return {e["v"] for e in self.events if e["ev"] == "rec"}

    def saw(self, event: str) -> bool:
        with self._lock:
            return any(e["ev"] == event for e in self.events)

    def terminate(self) -> int:
        self.proc.send_signal(signal.SIGTERM)
        code = self.proc.wait(30)
        self._reader.join(5)
        return code

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait(10)

    def diagnostics(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-3000:]


def produce_round(c: RawClient, topic: str, tag: str) -> set[str]:
    values = set()
    for p in range(PARTITIONS):
        batch = [f"{tag}-{p}-{i}" for i in range(10)]
        produce(c, topic, p, build_simple_batch([v.encode() for v in batch]))
        values.update(batch)
    return values


def split(c: RawClient, group: str, topic: str, members: int) -> dict[str, Any] | None:
    """The group's assignment once it is Stable with ``members`` members sharing every
    partition exactly once."""
    plan = group_assignment(c, group)
    if plan is None or len(plan) != members:
        return None
    owned = [tp for tps in plan.values() for tp in tps]
    if sorted(owned) != [(topic, p) for p in range(PARTITIONS)]:
        return None
    if any(not tps for tps in plan.values()):
        return None
    return plan
