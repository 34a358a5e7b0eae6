"""What the core asks its shell to do. Every call into the core returns a list of these, in the
order they must be carried out; the quorum-state file has already been written (synchronously,
through the store) before the call returns, so a response in the list never gets ahead of the
state it depends on.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .messages import OffsetAndEpoch, Request, Response


@dataclass(frozen=True, slots=True, eq=False)
class Send:
    """Send ``request`` to node ``destination``. The shell later calls ``handle_response`` with
    this same request object, or ``handle_send_failure`` if it could not be delivered; if it
    does neither, the core gives up on it after ``request_timeout_ms``."""

    destination: int
    request: Request


@dataclass(frozen=True, slots=True, eq=False)
class Respond:
    """Answer ``request`` (received from ``destination``): immediately after the call that
    handled it, or later for a Fetch that was parked waiting for data."""

    destination: int
    request: Request
    response: Response


@dataclass(frozen=True, slots=True)
class CommitTo:
    """The high watermark moved: every record below ``high_watermark`` is committed and may
    be applied to the state machine (read from the log, which holds them)."""

    high_watermark: int


@dataclass(frozen=True, slots=True)
class SnapshotInstalled:
    """This node replaced its log with the leader's snapshot ``snapshot_id``: the state machine
    must reload from that snapshot and apply the log after it."""

    snapshot_id: OffsetAndEpoch


@dataclass(frozen=True, slots=True)
class LeaderChanged:
    """The leader or epoch this node knows changed (``leader_id`` -1: none known). A new leader
    appends only after its state machine has applied every record below its epoch's start
    offset, which it knows once its high watermark has passed that offset."""

    leader_id: int
    epoch: int


@dataclass(frozen=True, slots=True)
class ShutdownComplete:
    """A graceful shutdown finished: another leader is known (or none is needed), or the
    shutdown's time ran out (``timed_out``). The shell may stop the node."""

    timed_out: bool


Action = Send | Respond | CommitTo | SnapshotInstalled | LeaderChanged | ShutdownComplete


@dataclass(frozen=True, slots=True)
class AppendResult:
    """The outcome of ``RaftCore.append``: the offsets given to the records (``error`` NONE) or
    NOT_LEADER_OR_FOLLOWER with the leader this node knows; plus the actions the append caused
    (parked fetches answered, a high watermark moved on a single voter)."""

    error: int
    base_offset: int = -1
    last_offset: int = -1
    epoch: int = -1
    leader_id: int = -1
    actions: list[Action] = field(default_factory=list)
