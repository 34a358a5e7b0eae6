"""Checks the broker suites share: a partition's earliest offset, and waiting for a condition
that the broker's background work (retention, flushes, checkpoints) makes true."""

from __future__ import annotations

import time
from collections.abc import Callable

from rawclient import RawClient


def earliest_offset(c: RawClient, topic: str, partition: int = 0) -> int:
    """ListOffsets(EARLIEST): the log start offset."""
    resp = c.request(
        2,
        7,
        {
            "replica_id": -1,
            "isolation_level": 0,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": partition, "current_leader_epoch": -1, "timestamp": -2}
                    ],
                }
            ],
        },
    )
    return resp.topics[0].partitions[0].offset


def eventually(predicate: Callable[[], bool], timeout: float = 20.0) -> bool:
    """Poll ``predicate`` every 0.1 s until it holds (True) or ``timeout`` passes (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return False
