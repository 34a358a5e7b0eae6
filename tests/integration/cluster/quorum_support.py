"""What the cluster tests share: short broker sessions, waiting for a condition with a
deadline, and the quorum's log end offsets by node."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from brook.client.admin import QuorumInfo

T = TypeVar("T")
# Short sessions so that a killed broker is fenced, and its restart registered, in seconds.
FAST = {
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
}


def wait_for(what: str, check: Callable[[], T | None], timeout: float = 60.0) -> T:
    """Poll ``check`` until it returns something other than None (or False)."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            value = check()
        except Exception as exc:  # a node in the middle of a restart, say
            last = exc
        else:
            if value is not None and value is not False:
                return value
        time.sleep(0.1)
    raise TimeoutError(f"{what} did not happen in {timeout} s (last error: {last!r})")


def log_ends(quorum: QuorumInfo) -> dict[int, int]:
    """Each voter's and observer's metadata log end offset, as the leader knows it."""
    return {r.replica_id: r.log_end_offset for r in (*quorum.voters, *quorum.observers)}
