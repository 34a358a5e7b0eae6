"""The Raft RPCs of the metadata quorum as the core sees them: Vote (with KIP-996's PreVote),
BeginQuorumEpoch, EndQuorumEpoch, Fetch and FetchSnapshot (KIP-630), and DescribeQuorum's
result. Plain frozen values with Kafka's error codes; the shell maps them to and from the wire
messages (Vote 52, BeginQuorumEpoch 53, EndQuorumEpoch 54, DescribeQuorum 55, Fetch 1,
FetchSnapshot 59), so the core never sees bytes, versions or connections.

Fields a request version lacks are given their "not set" value: a cluster id of None is not
checked (Kafka skips the check when the field is null) and a ``voter_id`` of -1 matches any
receiver (Vote and BeginQuorumEpoch before v1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from brook.protocol.errors import ERRORS
from brook.protocol.errors import Errors as _BrokerErrors

METADATA_TOPIC = "__cluster_metadata"
METADATA_PARTITION = 0
NO_LEADER = -1
NO_VOTER = -1
UNKNOWN_HIGH_WATERMARK = -1


def _code(name: str) -> int:
    return next(code for code, info in ERRORS.items() if info.name == name)


class Errors(_BrokerErrors):
    """The broker's error table plus the codes only the quorum returns (Kafka's, from kio)."""

    BROKER_NOT_AVAILABLE = _code("BROKER_NOT_AVAILABLE")
    INVALID_VOTER_KEY = _code("INVALID_VOTER_KEY")


INVALID_VOTER_KEY = Errors.INVALID_VOTER_KEY


@dataclass(frozen=True, slots=True)
class OffsetAndEpoch:
    """A position in the log: ``offset`` is an end offset (one past the last record) or a fetch
    position, ``epoch`` the leader epoch of the record before it. Ordered as Kafka compares
    them, epoch first: a log whose last epoch is higher is newer whatever its length."""

    offset: int
    epoch: int

    def __lt__(self, other: OffsetAndEpoch) -> bool:
        return (self.epoch, self.offset) < (other.epoch, other.offset)

    def __le__(self, other: OffsetAndEpoch) -> bool:
        return (self.epoch, self.offset) <= (other.epoch, other.offset)

    def __gt__(self, other: OffsetAndEpoch) -> bool:
        return (self.epoch, self.offset) > (other.epoch, other.offset)

    def __ge__(self, other: OffsetAndEpoch) -> bool:
        return (self.epoch, self.offset) >= (other.epoch, other.offset)


# Snapshot (0, 0) is the one `kafka-storage format` may write; it is never replicated.
BOOTSTRAP_SNAPSHOT_ID = OffsetAndEpoch(0, 0)


# ---------------------------------------------------------------------- requests


@dataclass(frozen=True, slots=True)
class VoteRequest:
    """Sent by a Candidate (``pre_vote`` False, its new epoch) or a Prospective node
    (``pre_vote`` True, its current epoch) to every voter. ``last_offset`` is the sender's log
    end offset, ``last_offset_epoch`` the epoch of its last record."""

    cluster_id: str | None
    replica_id: int
    replica_epoch: int
    last_offset_epoch: int
    last_offset: int
    pre_vote: bool = False
    voter_id: int = NO_VOTER
    topic: str = METADATA_TOPIC
    partition: int = METADATA_PARTITION


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochRequest:
    """The new leader's announcement, repeated until each voter acknowledges it."""

    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    voter_id: int = NO_VOTER
    topic: str = METADATA_TOPIC
    partition: int = METADATA_PARTITION


@dataclass(frozen=True, slots=True)
class EndQuorumEpochRequest:
    """A resigning leader's notice; ``preferred_candidates`` are the other voters, most caught
    up first, and each one's place in that list sets how soon it starts an election."""

    cluster_id: str | None
    leader_id: int
    leader_epoch: int
    preferred_candidates: tuple[int, ...] = ()
    topic: str = METADATA_TOPIC
    partition: int = METADATA_PARTITION


@dataclass(frozen=True, slots=True)
class FetchRequest:
    """A follower's or observer's Fetch of ``__cluster_metadata-0``: ``fetch_offset`` is its
    log end offset and ``last_fetched_epoch`` the epoch of its last record."""

    cluster_id: str | None
    replica_id: int
    current_leader_epoch: int
    fetch_offset: int
    last_fetched_epoch: int
    max_wait_ms: int
    max_bytes: int
    topic: str = METADATA_TOPIC
    partition: int = METADATA_PARTITION


@dataclass(frozen=True, slots=True)
class FetchSnapshotRequest:
    """One chunk of the leader's snapshot ``snapshot_id`` from byte ``position`` on."""

    cluster_id: str | None
    replica_id: int
    current_leader_epoch: int
    snapshot_id: OffsetAndEpoch
    position: int
    max_bytes: int
    topic: str = METADATA_TOPIC
    partition: int = METADATA_PARTITION


Request = (
    VoteRequest
    | BeginQuorumEpochRequest
    | EndQuorumEpochRequest
    | FetchRequest
    | FetchSnapshotRequest
)


# ---------------------------------------------------------------------- responses


@dataclass(frozen=True, slots=True)
class TopLevelError:
    """A response that refuses the whole request (INCONSISTENT_CLUSTER_ID, INVALID_REQUEST for
    a partition other than ``__cluster_metadata-0``), or the shell's report of a transport error
    (then any code, e.g. NETWORK_EXCEPTION). It carries no leader or epoch."""

    error: int


@dataclass(frozen=True, slots=True)
class VoteResponse:
    error: int
    leader_id: int
    leader_epoch: int
    vote_granted: bool = False


@dataclass(frozen=True, slots=True)
class BeginQuorumEpochResponse:
    error: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class EndQuorumEpochResponse:
    error: int
    leader_id: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchResponse:
    """``records`` are the log's opaque batches from the fetch offset on (uncommitted data
    included: followers need it to commit). At most one of ``diverging_epoch`` (truncate to
    it, then fetch again) and ``snapshot_id`` (fetch that snapshot first) is set, and then
    ``records`` is empty."""

    error: int
    leader_id: int
    leader_epoch: int
    high_watermark: int = UNKNOWN_HIGH_WATERMARK
    log_start_offset: int = -1
    diverging_epoch: OffsetAndEpoch | None = None
    snapshot_id: OffsetAndEpoch | None = None
    records: Sequence[object] = ()


@dataclass(frozen=True, slots=True)
class FetchSnapshotResponse:
    """``data`` is the raw slice of the snapshot from ``position`` (not aligned to batches);
    ``size`` is the whole snapshot's size in bytes."""

    error: int
    leader_id: int
    leader_epoch: int
    snapshot_id: OffsetAndEpoch | None = None
    size: int = -1
    position: int = -1
    data: bytes = b""


Response = (
    TopLevelError
    | VoteResponse
    | BeginQuorumEpochResponse
    | EndQuorumEpochResponse
    | FetchResponse
    | FetchSnapshotResponse
)


# ---------------------------------------------------------------------- DescribeQuorum


@dataclass(frozen=True, slots=True)
class ReplicaInfo:
    """One row of DescribeQuorum: timestamps are the leader's clock, -1 when unknown."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True, slots=True)
class QuorumInfo:
    """DescribeQuorum's partition data; only the leader answers (NOT_LEADER_OR_FOLLOWER
    otherwise, with the other fields at their defaults)."""

    error: int
    leader_id: int = NO_LEADER
    leader_epoch: int = -1
    high_watermark: int = UNKNOWN_HIGH_WATERMARK
    voters: tuple[ReplicaInfo, ...] = ()
    observers: tuple[ReplicaInfo, ...] = ()


def error_name(code: int) -> str:
    """Kafka's name of an error code, for messages."""
    info = ERRORS.get(code)
    return info.name if info is not None else f"error {code}"


__all__ = [
    "BOOTSTRAP_SNAPSHOT_ID",
    "INVALID_VOTER_KEY",
    "METADATA_PARTITION",
    "METADATA_TOPIC",
    "NO_LEADER",
    "NO_VOTER",
    "UNKNOWN_HIGH_WATERMARK",
    "BeginQuorumEpochRequest",
    "BeginQuorumEpochResponse",
    "EndQuorumEpochRequest",
    "EndQuorumEpochResponse",
    "Errors",
    "FetchRequest",
    "FetchResponse",
    "FetchSnapshotRequest",
    "FetchSnapshotResponse",
    "OffsetAndEpoch",
    "QuorumInfo",
    "ReplicaInfo",
    "Request",
    "Response",
    "TopLevelError",
    "VoteRequest",
    "VoteResponse",
    "error_name",
]
