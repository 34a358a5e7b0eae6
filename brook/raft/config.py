"""The timings one Raft node runs with. Each field is the value of a Kafka setting (named
beside it) or one of the constants Kafka hard-codes in its Raft client; the shell fills them
from the server's configuration."""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

MAX_FETCH_WAIT_MS = 500
MAX_FETCH_BYTES = 8 * 1024 * 1024
ELECTION_BACKOFF_BASE_MS = 100
CHECK_QUORUM_TIMEOUT_FACTOR = 1.5
OBSERVER_SESSION_TIMEOUT_MS = 300_000


@dataclass(frozen=True, slots=True)
class RaftConfig:
    # controller.quorum.election.timeout.ms: the real timeout is random in [T, 2T)
    election_timeout_ms: int = 1000
    # controller.quorum.fetch.timeout.ms: a follower without a good fetch for this long runs
    # a pre-vote; a leader without fetches from a majority for 1.5 times this long resigns
    fetch_timeout_ms: int = 2000
    # controller.quorum.election.backoff.max.ms
    election_backoff_max_ms: int = 1000
    # controller.quorum.request.timeout.ms: an unanswered request frees its destination
    request_timeout_ms: int = 2000
    # controller.quorum.retry.backoff.ms: the pause after a failed request
    retry_backoff_ms: int = 20
    # Kafka's fixed MaxWaitMs and MaxBytes of a Raft Fetch (and of a FetchSnapshot's MaxBytes)
    fetch_max_wait_ms: int = MAX_FETCH_WAIT_MS
    fetch_max_bytes: int = MAX_FETCH_BYTES

    def __post_init__(self) -> None:
        for name in (
            "election_timeout_ms",
            "fetch_timeout_ms",
            "election_backoff_max_ms",
            "request_timeout_ms",
            "retry_backoff_ms",
            "fetch_max_wait_ms",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        if self.fetch_max_bytes <= 0:
            raise ValueError("fetch_max_bytes must be positive")

    @classmethod
    def from_server_config(cls, config: Mapping[str, Any]) -> RaftConfig:
        """The timings of a node's ``server.properties``."""
        return cls(
            election_timeout_ms=int(config["controller.quorum.election.timeout.ms"]),
            fetch_timeout_ms=int(config["controller.quorum.fetch.timeout.ms"]),
            election_backoff_max_ms=int(config["controller.quorum.election.backoff.max.ms"]),
            request_timeout_ms=int(config["controller.quorum.request.timeout.ms"]),
            retry_backoff_ms=int(config["controller.quorum.retry.backoff.ms"]),
        )

    def follower_fetch_timeout_ms(self, rng: random.Random) -> int:
        """A follower's wait for a good fetch before it runs for leader: the fetch timeout
        plus a random part of half the election timeout. Kafka's is the bare fetch timeout;
        followers that last heard from their leader at the same moment (its answers to their
        fetches go out together) then start their elections at once and split the vote,
        which costs an election timeout. Raft randomizes for the same reason."""
        return self.fetch_timeout_ms + rng.randrange(max(1, self.election_timeout_ms // 2))

    @property
    def check_quorum_timeout_ms(self) -> int:
        return int(self.fetch_timeout_ms * CHECK_QUORUM_TIMEOUT_FACTOR)

    @property
    def begin_quorum_epoch_interval_ms(self) -> int:
        return self.fetch_timeout_ms // 2
