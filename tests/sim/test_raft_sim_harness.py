"""The simulation can fail: with a rule of the core deliberately broken, it reports a violation
within a few hundred schedules. (Without these, a harness that checked nothing would pass.)"""

from __future__ import annotations

import pytest
from raft_sim import run_seed

from brook.raft.leader import Leader
from brook.raft.memory_log import MemoryLog
from brook.raft.roles import Unattached
from brook.raft.state import QuorumState


def first_violation(limit: int) -> AssertionError | None:
    """The first broken property within ``limit`` seeds: an invariant of the simulation
    (Violation), or one the core asserts itself (a replica's high watermark moving back)."""
    for seed in range(limit):
        try:
            run_seed(seed)
        except AssertionError as exc:
            return exc
    return None


def test_a_second_vote_in_an_epoch_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """An Unattached voter grants any up-to-date candidate, whoever it voted for before."""

    def grant(self: Unattached, candidate: int, up_to_date: bool, pre_vote: bool) -> bool:
        return up_to_date

    monkeypatch.setattr(Unattached, "can_grant_vote", grant)
    violation = first_violation(300)
    assert violation is not None
    # the second grant contradicts the vote on disk, or a second leader is elected with it
    assert "granted its vote" in str(violation) or "two leaders in epoch" in str(violation)
    assert "python tests/sim/raft_sim.py --seed" in str(violation)


def test_a_vote_granted_before_it_is_persisted_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    def vote_in_memory(self: QuorumState, candidate: int, now: int) -> None:
        cur = self.role
        self.role = Unattached(cur.epoch, cur.leader_id, candidate, now + 1000, cur.high_watermark)

    monkeypatch.setattr(QuorumState, "unattached_add_vote", vote_in_memory)
    violation = first_violation(50)
    assert violation is not None and "granted its vote" in str(violation)


def test_a_follower_that_skips_fsync_is_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    append, flush = MemoryLog.append_as_follower, MemoryLog.flush
    skip: set[int] = set()

    def append_as_follower(self: MemoryLog, batches: object) -> None:
        append(self, batches)  # type: ignore[arg-type]
        skip.add(id(self))

    def no_fsync_after_follower_append(self: MemoryLog) -> None:
        if id(self) in skip:
            skip.discard(id(self))
            return
        flush(self)

    monkeypatch.setattr(MemoryLog, "append_as_follower", append_as_follower)
    monkeypatch.setattr(MemoryLog, "flush", no_fsync_after_follower_append)
    violation = first_violation(50)
    assert violation is not None and "voters hold it" in str(violation)


def test_a_high_watermark_without_the_current_epoch_condition_is_caught(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_epoch_start(self: Leader) -> bool:
        ends = sorted(
            (s.end_offset for s in self.voter_states.values() if s.end_offset), reverse=True
        )
        index = len(self.voter_states) // 2
        if index >= len(ends) or (
            self.high_watermark is not None and ends[index] <= self.high_watermark
        ):
            return False
        self.high_watermark = ends[index]
        return True

    monkeypatch.setattr(Leader, "_update_high_watermark", no_epoch_start)
    violation = first_violation(300)
    assert violation is not None
