"""KIP-250's quorum acks, the decisions only (pure functions, no I/O).

A topic with ``quorum.required.acks`` = Q (1 < Q < replication factor; -1 turns it off)
acknowledges an acks=all produce once Q replicas, the leader included, have the batch: the
high watermark is the Q-th largest log end offset among the in-sync replicas. An in-sync
follower may then lack acknowledged records, so Kafka's election (the first live in-sync
replica) could lose them. Here a leader is chosen as Raft chooses one: every acknowledged
record is on Q replicas, so any RF - Q + 1 replicas include one holding it, and the replica
whose log is the most complete among them (largest last epoch, then largest log end) holds
every acknowledged record. Fewer reports than that and nobody is elected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

OFF = -1
CONFIG = "quorum.required.acks"


@dataclass(frozen=True, slots=True)
class LogEnd:
    """What a replica reports of its log: its last leader epoch and its log end offset."""

    last_epoch: int
    end_offset: int

    def key(self) -> tuple[int, int]:
        return (self.last_epoch, self.end_offset)


def enabled(q: int) -> bool:
    return q != OFF


def config_error(q: int, replication_factor: int) -> str | None:
    """Why ``q`` is not a valid ``quorum.required.acks`` for ``replication_factor``
    replicas (None if it is)."""
    if q == OFF:
        return None
    if q <= 1 or q >= replication_factor:
        return (
            f"{CONFIG} must be -1 (off) or greater than 1 and less than the replication factor; "
            f"got {q} with a replication factor of {replication_factor}"
        )
    return None


def high_watermark(log_ends: Iterable[int], q: int, epoch_start_offset: int = -1) -> int | None:
    """The Q-th largest of the in-sync replicas' log end offsets (the leader's included;
    unknown ones as -1); None while fewer than Q replicas are in sync, or while that offset
    is not past ``epoch_start_offset`` (the leader's log end when its epoch began).

    The second rule is Raft's: a leader commits records of earlier epochs only together with
    one of its own. Counting replicas of an older record alone is not enough: a replica with a
    later epoch but without that record could still win an election (its last epoch is
    larger) and truncate it away everywhere, after it was acknowledged (an idempotent retry
    of its produce is answered once the HW passes it)."""
    ends = sorted(log_ends, reverse=True)
    if len(ends) < q:
        return None
    candidate = ends[q - 1]
    if candidate <= epoch_start_offset:
        return None
    return candidate


def reports_needed(replication_factor: int, q: int) -> int:
    """How many replicas must report before one may be elected: RF - Q + 1."""
    return replication_factor - q + 1


def most_complete(
    replicas: Sequence[int],
    reports: Mapping[int, LogEnd],
    q: int,
    acceptable: Callable[[int], bool] = lambda _: True,
) -> int | None:
    """The replica to elect, or None while fewer than RF - Q + 1 acceptable replicas have
    reported. Among the acceptable reporting replicas: the largest (last epoch, log end),
    ties going to the earlier replica in assignment order."""
    candidates = [r for r in replicas if r in reports and acceptable(r)]
    if len(candidates) < reports_needed(len(replicas), q):
        return None
    best = candidates[0]
    for replica in candidates[1:]:
        if reports[replica].key() > reports[best].key():
            best = replica
    return best
