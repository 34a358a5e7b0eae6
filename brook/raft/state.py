"""The node's current role and the only ways to change it (Kafka's QuorumState, with KIP-996's
Prospective state). A durable transition writes the new election state to the store before it
takes effect, so nothing that depends on it (a granted vote, a response naming the new epoch)
can leave the node first; Prospective and Resigned are memory-only.

Allowed transitions (voters; observers only move between Unattached and Follower)::

    Unattached  -> Unattached (higher epoch, or a vote granted), Prospective (election
                   timeout), Follower (leader found)
    Prospective -> Candidate (majority of pre-votes), Follower (lost, and a leader was
                   known) or Unattached (lost without one, same epoch, vote kept),
                   Unattached/Follower (higher epoch)
    Candidate   -> Leader (majority of votes), Prospective (after backoff), Unattached /
                   Follower (higher epoch, or a leader of its epoch)
    Leader      -> Resigned (resign, shutdown, check-quorum), Unattached / Follower
                   (higher epoch)
    Follower    -> Prospective (fetch timeout), Unattached / Follower (higher epoch)
    Resigned    -> Unattached (epoch + 1 when its election timer expires, or higher epoch),
                   Follower (higher epoch)

Start-up, from what was persisted (and the log's last epoch): an epoch older than the log's
becomes Unattached at the log's epoch; "I was leader" becomes Resigned in that epoch (no second
vote in it, and no second leader who could reuse offsets lost with unflushed data); "I voted
for myself" becomes Candidate unless the epoch's leader is known (Kafka checks the vote first,
but a Candidate whose log holds its own epoch's records cannot ask for votes in it); a known
leader, Follower; anything else, Unattached.
"""

from __future__ import annotations

import random

from .config import RaftConfig
from .follower import Follower
from .leader import Leader
from .messages import NO_LEADER
from .quorum_state import NOT_SET, ElectionState, QuorumStateStore
from .request_manager import NEVER
from .roles import Candidate, EpochElection, Prospective, Resigned, Role, Unattached


class TransitionError(AssertionError):
    """A transition the protocol forbids was asked for: a bug, not bad input."""


class QuorumState:
    def __init__(
        self,
        local_id: int,
        voters: tuple[int, ...],
        store: QuorumStateStore,
        config: RaftConfig,
        rng: random.Random,
    ) -> None:
        self.local_id = local_id
        self.voters = voters
        self.is_voter = local_id in voters
        self.store = store
        self._config = config
        self._rng = rng
        self.role: Role = Unattached(0, NO_LEADER, NOT_SET, NEVER, None)

    # ------------------------------------------------------------------ helpers
    @property
    def epoch(self) -> int:
        return self.role.epoch

    @property
    def is_only_voter(self) -> bool:
        return self.voters == (self.local_id,)

    def random_election_timeout(self) -> int:
        """Uniform in [T, 2T), as Kafka draws it."""
        timeout = self._config.election_timeout_ms
        return timeout + self._rng.randrange(timeout) if timeout > 0 else 0

    def _election_deadline(self, now: int) -> int:
        return now + self.random_election_timeout() if self.is_voter else NEVER

    def _durable(self, role: Role) -> None:
        self.store.write(role.election(self.voters))
        self.role = role

    # ------------------------------------------------------------------ start-up
    def initialize(self, log_last_epoch: int, now: int) -> None:
        stored = self.store.read() or ElectionState(0, voters=self.voters)
        me = self.local_id
        hw = None
        role: Role
        if stored.epoch < log_last_epoch:
            role = Unattached(log_last_epoch, NO_LEADER, NOT_SET, self._election_deadline(now), hw)
        elif stored.leader_id == me:
            role = Resigned(stored.epoch, me, self.voters, self._election_deadline(now), ())
        elif stored.leader_id != NO_LEADER:
            # checked before "voted for myself": a Candidate that then followed the winner of
            # its epoch has that epoch's records in its log and could not ask for votes in it
            role = Follower(
                stored.epoch,
                stored.leader_id,
                stored.voted_id,
                now + self._config.follower_fetch_timeout_ms(self._rng),
                hw,
            )
        elif stored.voted_id == me and self.is_voter:
            role = Candidate(
                stored.epoch,
                me,
                EpochElection(me, self.voters),
                1,
                self._election_deadline(now),
                hw,
            )
        else:
            role = Unattached(
                stored.epoch, NO_LEADER, stored.voted_id, self._election_deadline(now), hw
            )
        self._durable(role)

    # ------------------------------------------------------------------ transitions
    def to_unattached(self, epoch: int, now: int, leader_id: int = NO_LEADER) -> None:
        """A higher epoch was seen (or a Prospective lost, or a Resigned timer expired)."""
        cur = self.role
        if epoch < cur.epoch or (epoch == cur.epoch and not isinstance(cur, Prospective)):
            raise TransitionError(f"cannot become Unattached in epoch {epoch} from {cur}")
        if not self.is_voter:
            deadline = NEVER
        elif isinstance(cur, Prospective):
            rejected = cur.election_round.is_rejected
            deadline = self._election_deadline(now) if rejected else cur.election_deadline
        elif isinstance(cur, Candidate | Unattached | Resigned):
            deadline = cur.election_deadline
        else:
            deadline = self._election_deadline(now)
        voted = cur.voted_id if epoch == cur.epoch else NOT_SET
        self._durable(Unattached(epoch, leader_id, voted, deadline, cur.high_watermark))

    def unattached_add_vote(self, candidate: int, now: int) -> None:
        """Grant a standard vote as Unattached: persisted before the response says so."""
        cur = self.role
        if type(cur) is not Unattached or cur.voted_id != NOT_SET or candidate == self.local_id:
            raise TransitionError(f"cannot vote for {candidate} from {cur}")
        self._durable(
            Unattached(
                cur.epoch,
                cur.leader_id,
                candidate,
                self._election_deadline(now),
                cur.high_watermark,
            )
        )

    def prospective_add_vote(self, candidate: int, now: int) -> None:
        """Grant a standard vote while Prospective (the pre-vote round starts over)."""
        cur = self.role
        if not isinstance(cur, Prospective) or cur.voted_id != NOT_SET:
            raise TransitionError(f"cannot vote for {candidate} from {cur}")
        if candidate == self.local_id:
            raise TransitionError(f"cannot vote for itself from {cur}")
        self._durable(
            Prospective(
                cur.epoch,
                cur.leader_id,
                candidate,
                EpochElection(self.local_id, self.voters),
                cur.retries,
                self._election_deadline(now),
                cur.high_watermark,
            )
        )

    def to_follower(self, epoch: int, leader_id: int, now: int) -> None:
        cur = self.role
        if leader_id == self.local_id:
            raise TransitionError(f"cannot follow itself in epoch {epoch} from {cur}")
        if epoch < cur.epoch or (
            epoch == cur.epoch
            and (
                isinstance(cur, Leader)
                or (isinstance(cur, Follower) and cur.leader_id != NO_LEADER)
            )
        ):
            raise TransitionError(f"cannot follow {leader_id} in epoch {epoch} from {cur}")
        # a vote given in this epoch is kept, so that it is never given twice
        voted = cur.voted_id if epoch == cur.epoch else NOT_SET
        deadline = now + self._config.follower_fetch_timeout_ms(self._rng)
        self._durable(Follower(epoch, leader_id, voted, deadline, cur.high_watermark))

    def to_prospective(self, now: int) -> None:
        cur = self.role
        if not self.is_voter or isinstance(cur, Leader | Prospective):
            raise TransitionError(f"cannot become Prospective from {cur}")
        retries = cur.retries + 1 if isinstance(cur, Candidate) else 1
        self.role = Prospective(
            cur.epoch,
            cur.leader_id if cur.leader_id != self.local_id else NO_LEADER,
            cur.voted_id,
            EpochElection(self.local_id, self.voters),
            retries,
            self._election_deadline(now),
            cur.high_watermark,
        )

    def to_candidate(self, now: int) -> None:
        cur = self.role
        if not self.is_voter or not isinstance(cur, Prospective):
            raise TransitionError(f"only a Prospective voter may become Candidate, not {cur}")
        self._durable(
            Candidate(
                cur.epoch + 1,
                self.local_id,
                EpochElection(self.local_id, self.voters),
                cur.retries,
                self._election_deadline(now),
                cur.high_watermark,
            )
        )

    def to_leader(self, epoch_start_offset: int, now: int) -> Leader:
        cur = self.role
        if not isinstance(cur, Candidate) or not cur.election_round.is_granted:
            raise TransitionError(f"cannot become Leader without a majority, from {cur}")
        leader = Leader(
            cur.epoch,
            self.local_id,
            epoch_start_offset,
            self.voters,
            cur.election_round.granted,
            self._config.check_quorum_timeout_ms,
            now,
        )
        self._durable(leader)
        return leader

    def to_resigned(self, preferred_successors: tuple[int, ...], now: int) -> None:
        cur = self.role
        if not isinstance(cur, Leader):
            raise TransitionError(f"only a Leader resigns, not {cur}")
        self.role = Resigned(
            cur.epoch,
            self.local_id,
            self.voters,
            self._election_deadline(now),
            preferred_successors,
        )
