"""The small roles a node can hold in an epoch (Kafka's EpochState classes): what each
remembers, its timers (absolute deadlines in the caller's milliseconds), which votes it may
grant (KIP-595's rules with KIP-996's pre-vote table) and what of it is persisted. The two
bigger ones, ``Leader`` and ``Follower``, have modules of their own; the transitions between
roles belong to ``QuorumState``.

Vote granting, by role (``up_to_date``: the requester's (last epoch, log end) is at least
ours, epoch compared first)::

    role                        standard vote                      pre-vote
    Unattached, no vote/leader  if up to date                      if up to date
    Unattached, voted           only the same candidate again      if up to date
    Unattached, leader known    no                                 if up to date
    Prospective                 as Unattached                      if up to date
    Follower                    no                                 if it has not fetched from
                                                                   its leader yet, and up to date
    Candidate                   no                                 if up to date
    Leader, Resigned            no                                 no
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from .messages import NO_LEADER
from .quorum_state import NOT_SET, ElectionState


class EpochElection:
    """The votes (or pre-votes) a Prospective or Candidate node has collected in its epoch; its
    own is granted from the start."""

    __slots__ = ("granted", "majority", "rejected", "voters")

    def __init__(self, local_id: int, voters: Iterable[int]) -> None:
        self.voters = frozenset(voters)
        self.majority = len(self.voters) // 2 + 1
        self.granted = {local_id}
        self.rejected: set[int] = set()

    def record_granted(self, voter: int) -> None:
        if voter in self.voters and voter not in self.rejected:
            self.granted.add(voter)

    def record_rejected(self, voter: int) -> None:
        if voter in self.voters and voter not in self.granted:
            self.rejected.add(voter)

    @property
    def is_granted(self) -> bool:
        return len(self.granted) >= self.majority

    @property
    def is_rejected(self) -> bool:
        """Too many refusals for a majority to be possible."""
        return len(self.rejected) > len(self.voters) - self.majority

    def unrecorded(self) -> list[int]:
        return sorted(self.voters - self.granted - self.rejected)


class Role:
    """What every role has: an epoch, the high watermark it knows (None: unknown)."""

    __slots__ = ()
    name: ClassVar[str] = "?"
    epoch: int
    high_watermark: int | None

    @property
    def leader_id(self) -> int:
        return NO_LEADER

    @property
    def voted_id(self) -> int:
        return NOT_SET

    def election(self, voters: tuple[int, ...]) -> ElectionState:
        return ElectionState(self.epoch, self.leader_id, self.voted_id, voters)

    def can_grant_vote(self, candidate: int, up_to_date: bool, pre_vote: bool) -> bool:
        return False

    def __repr__(self) -> str:
        return f"{self.name}(epoch={self.epoch}, leader={self.leader_id}, voted={self.voted_id})"


class Unattached(Role):
    """No leader known in this epoch (or a leader whose address is unknown); a voter starts a
    pre-vote when its election timer expires, an observer keeps asking the bootstrap voters."""

    name = "Unattached"
    __slots__ = ("_leader", "_voted", "election_deadline", "epoch", "high_watermark")

    def __init__(
        self,
        epoch: int,
        leader_id: int,
        voted_id: int,
        election_deadline: int,
        high_watermark: int | None,
    ) -> None:
        self.epoch = epoch
        self._leader = leader_id
        self._voted = voted_id
        self.election_deadline = election_deadline
        self.high_watermark = high_watermark

    @property
    def leader_id(self) -> int:
        return self._leader

    @property
    def voted_id(self) -> int:
        return self._voted

    def election(self, voters: tuple[int, ...]) -> ElectionState:
        if self._voted != NOT_SET:
            return ElectionState(self.epoch, NOT_SET, self._voted, voters)
        return ElectionState(self.epoch, self._leader, NOT_SET, voters)

    def can_grant_vote(self, candidate: int, up_to_date: bool, pre_vote: bool) -> bool:
        if pre_vote:
            return up_to_date
        if self._voted != NOT_SET:
            return self._voted == candidate
        if self._leader != NO_LEADER:
            return False
        return up_to_date


class Prospective(Unattached):
    """A voter asking for pre-votes in its current epoch (KIP-996) before it dares to bump the
    epoch; memory-only (unless it grants a standard vote meanwhile)."""

    name = "Prospective"
    __slots__ = ("election_round", "retries")

    def __init__(
        self,
        epoch: int,
        leader_id: int,
        voted_id: int,
        election_round: EpochElection,
        retries: int,
        election_deadline: int,
        high_watermark: int | None,
    ) -> None:
        super().__init__(epoch, leader_id, voted_id, election_deadline, high_watermark)
        self.election_round = election_round
        self.retries = retries


class Candidate(Role):
    """A voter that bumped the epoch, voted for itself (persisted) and asks for votes; after
    losing or timing out it backs off, then runs a pre-vote again."""

    name = "Candidate"
    __slots__ = (
        "backoff_until",
        "election_deadline",
        "election_round",
        "epoch",
        "high_watermark",
        "local_id",
        "retries",
    )

    def __init__(
        self,
        epoch: int,
        local_id: int,
        election_round: EpochElection,
        retries: int,
        election_deadline: int,
        high_watermark: int | None,
    ) -> None:
        self.epoch = epoch
        self.local_id = local_id
        self.election_round = election_round
        self.retries = retries
        self.election_deadline = election_deadline
        self.backoff_until: int | None = None
        self.high_watermark = high_watermark

    @property
    def voted_id(self) -> int:
        return self.local_id

    def can_grant_vote(self, candidate: int, up_to_date: bool, pre_vote: bool) -> bool:
        return pre_vote and up_to_date


class Resigned(Role):
    """A leader that stepped down (graceful shutdown, check-quorum, or restarted after being
    leader): it keeps the epoch, tells the voters (EndQuorumEpoch) until they acknowledge, and
    when its election timer expires moves to the next epoch to let an election happen."""

    name = "Resigned"
    __slots__ = (
        "election_deadline",
        "epoch",
        "high_watermark",
        "local_id",
        "preferred_successors",
        "unacked",
    )

    def __init__(
        self,
        epoch: int,
        local_id: int,
        voters: tuple[int, ...],
        election_deadline: int,
        preferred_successors: tuple[int, ...],
    ) -> None:
        self.epoch = epoch
        self.local_id = local_id
        self.election_deadline = election_deadline
        self.unacked = {v for v in voters if v != local_id}
        self.preferred_successors = preferred_successors
        self.high_watermark: int | None = None

    @property
    def leader_id(self) -> int:
        return self.local_id
