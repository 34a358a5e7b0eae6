"""The Follower role (Kafka's FollowerState): fetching from a known leader, and what it does
with the answers: append the leader's batches (flushed first on a voter), move its high
watermark to min(the leader's, its own log end), truncate where the leader's log diverges
(never below its high watermark: that is fatal), and download and install the leader's
snapshot when it is behind the leader's log start.
"""

from __future__ import annotations

from .actions import Action, CommitTo, SnapshotInstalled
from .log import RaftLog, truncation_offset
from .messages import Errors, FetchResponse, FetchSnapshotResponse, OffsetAndEpoch
from .roles import Role


class RaftFatalError(RuntimeError):
    """The node cannot go on without breaking the protocol's promises (the leader asked it to
    truncate committed records away); the shell must stop the node."""


class Follower(Role):
    """Fetching from a known leader; a voter that goes ``fetch_timeout_ms`` without a good
    fetch response runs a pre-vote."""

    name = "Follower"
    __slots__ = (
        "_leader",
        "_voted",
        "epoch",
        "fetch_deadline",
        "fetching_snapshot",
        "has_fetched",
        "high_watermark",
        "snapshot_position",
    )

    def __init__(
        self,
        epoch: int,
        leader_id: int,
        voted_id: int,
        fetch_deadline: int,
        high_watermark: int | None,
    ) -> None:
        self.epoch = epoch
        self._leader = leader_id
        self._voted = voted_id
        self.fetch_deadline = fetch_deadline
        self.high_watermark = high_watermark
        self.has_fetched = False
        self.fetching_snapshot: OffsetAndEpoch | None = None
        self.snapshot_position = 0

    @property
    def leader_id(self) -> int:
        return self._leader

    @property
    def voted_id(self) -> int:
        return self._voted

    def can_grant_vote(self, candidate: int, up_to_date: bool, pre_vote: bool) -> bool:
        return pre_vote and not self.has_fetched and up_to_date

    def update_high_watermark(self, new: int) -> bool:
        """True when the high watermark moved; it never moves back."""
        old = self.high_watermark
        if old is not None:
            if new < old:
                raise AssertionError(f"high watermark would move back from {old} to {new}")
            if new == old:
                return False
        self.high_watermark = new
        return True

    def good_fetch(self, now: int, fetch_timeout_ms: int) -> None:
        """A response from the leader was handled: the fetch timer starts again."""
        self.fetch_deadline = now + fetch_timeout_ms
        self.has_fetched = True

    # ------------------------------------------------------------------ Fetch responses
    def apply_fetch(
        self, node_id: int, log: RaftLog, response: FetchResponse, is_voter: bool, out: list[Action]
    ) -> bool:
        """A successful Fetch response from the leader; False if it was malformed."""
        diverging, snapshot_id = response.diverging_epoch, response.snapshot_id
        if diverging is not None and diverging.epoch >= 0:
            offset = truncation_offset(log, diverging)
            hw = self.high_watermark
            if hw is not None and (diverging.offset < hw or offset < hw):
                raise RaftFatalError(
                    f"node {node_id}: the leader asked to truncate to {offset} "
                    f"({diverging}), below the high watermark {hw}"
                )
            log.truncate_to(offset)
        elif snapshot_id is not None:
            if snapshot_id.epoch < 0 or snapshot_id.offset < 0:
                return False
            if log.begin_snapshot_download(snapshot_id):
                self.fetching_snapshot = snapshot_id
                self.snapshot_position = 0
        else:
            if response.records:
                log.append_as_follower(response.records)
                if is_voter:
                    # the next Fetch tells the leader this node has the data: it must be durable
                    log.flush()
            if response.high_watermark >= 0:
                self._move_high_watermark(min(log.end_offset, response.high_watermark), out)
        return True

    def _move_high_watermark(self, hw: int, out: list[Action]) -> None:
        if self.update_high_watermark(hw):
            out.append(CommitTo(hw))

    # ------------------------------------------------------------------ FetchSnapshot responses
    def apply_snapshot_chunk(
        self, log: RaftLog, response: FetchSnapshotResponse, out: list[Action]
    ) -> None:
        """A FetchSnapshot response from the leader: add the chunk; when the snapshot is
        whole, install it in place of the log. An error or a snapshot the leader no longer
        has starts over with a Fetch."""
        expected = self.fetching_snapshot
        snapshot_id = response.snapshot_id
        if (
            response.error != Errors.NONE
            or snapshot_id is None
            or snapshot_id.offset < 0
            or snapshot_id.epoch < 0
        ):
            if expected is not None:
                log.abort_snapshot_download(expected)
            self.fetching_snapshot = None
            return
        if expected is None or snapshot_id != expected:
            raise AssertionError(f"snapshot {snapshot_id} arrived; the node fetches {expected}")
        if response.position != self.snapshot_position:
            raise AssertionError(
                f"snapshot chunk at {response.position}, expected {self.snapshot_position}"
            )
        self.snapshot_position = log.append_snapshot_chunk(snapshot_id, response.data)
        if self.snapshot_position < response.size:
            return
        log.finish_snapshot_download(snapshot_id)
        self.fetching_snapshot = None
        self.snapshot_position = 0
        if not log.truncate_to_latest_snapshot():
            raise AssertionError(
                f"snapshot {snapshot_id} does not move past the log end {log.end_offset}"
            )
        out.append(SnapshotInstalled(snapshot_id))
        self._move_high_watermark(log.end_offset, out)
