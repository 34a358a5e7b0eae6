"""KIP-227, the follower's half: one incremental fetch session with one leader (Kafka's
FetchSessionHandler as a follower drives it). Pure state; the fetcher does the I/O.

The cost rule: after the first full fetch, building a request costs what changed, not what
the session holds. The fetcher says which partitions changed (``put`` / ``drop``); an
incremental request sends those whose fetch position differs from what the leader's session
holds and forgets those that left, and never looks at the others. A full request (the first,
and the first after any session error) sends every partition.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from brook.protocol.errors import Errors

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_INT32 = 2**31 - 1

TopicPartition = tuple[str, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: MAX_INT wraps to 1 (never 0, which opens a session)."""
    if epoch < 0:
        return FINAL_EPOCH
    return 1 if epoch == MAX_INT32 else epoch + 1


@dataclass(frozen=True, slots=True)
class FetchPosition:
    """What a Fetch asks of one partition; any difference makes it "altered" (sent again)."""

    topic_id: uuid.UUID
    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int


@dataclass(frozen=True, slots=True)
class SessionRequest:
    """One Fetch's session part."""

    session_id: int
    epoch: int
    is_full: bool
    to_send: Mapping[TopicPartition, FetchPosition]
    # Forgotten partitions with the topic id the leader's session knows them by.
    to_forget: Mapping[TopicPartition, uuid.UUID] = field(default_factory=dict)


class FollowerSession:
    """The session with one leader. ``session_id`` / ``epoch`` are the next request's."""

    def __init__(self) -> None:
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        # What the next request would hold in full: the partitions ready to fetch.
        self._wanted: dict[TopicPartition, FetchPosition] = {}
        # What the leader's session holds once the request in flight is answered.
        self._held: dict[TopicPartition, FetchPosition] = {}
        self._changed: set[TopicPartition] = set()

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    @property
    def wanted(self) -> Mapping[TopicPartition, FetchPosition]:
        return self._wanted

    def put(self, tp: TopicPartition, position: FetchPosition) -> None:
        """``tp`` goes into the next fetch at ``position``."""
        if self._wanted.get(tp) != position:
            self._wanted[tp] = position
            self._changed.add(tp)

    def drop(self, tp: TopicPartition) -> None:
        """``tp`` is not fetched until put again (backed off, truncating, failed, gone)."""
        if self._wanted.pop(tp, None) is not None or tp in self._held:
            self._changed.add(tp)

    def held_position(self, tp: TopicPartition) -> FetchPosition | None:
        """The position the leader's session holds for ``tp``: what the last request
        fetched it at."""
        return self._held.get(tp)

    def has_work(self) -> bool:
        """Whether a fetch is worth sending: something to fetch, or to forget."""
        return bool(self._wanted) or bool(self._changed)

    def build(self) -> SessionRequest:
        """The next request, counted as sent (its partitions are what the leader's session
        will hold)."""
        if self.is_full:
            request = SessionRequest(self.session_id, self.epoch, True, dict(self._wanted))
            self._held = dict(self._wanted)
            self._changed.clear()
            return request
        to_send: dict[TopicPartition, FetchPosition] = {}
        to_forget: dict[TopicPartition, uuid.UUID] = {}
        for tp in self._changed:
            want = self._wanted.get(tp)
            held = self._held.get(tp)
            if want is None:
                if held is not None:
                    to_forget[tp] = held.topic_id
                    del self._held[tp]
            elif want != held:
                if held is not None and held.topic_id != want.topic_id:
                    to_forget[tp] = held.topic_id  # a recreated topic: the old id goes
                to_send[tp] = want
                self._held[tp] = want
        self._changed.clear()
        return SessionRequest(self.session_id, self.epoch, False, to_send, to_forget)

    def on_response(self, request: SessionRequest, error_code: int, session_id: int) -> bool:
        """Move the session on after a response; False when it carried a top-level error
        (its partitions are then not processed; the next request is full)."""
        if error_code != Errors.NONE:
            if error_code == Errors.FETCH_SESSION_ID_NOT_FOUND:
                self._reset(INVALID_SESSION_ID)
            else:  # INVALID_FETCH_SESSION_EPOCH and others: close it and open a new one
                self._reset(self.session_id)
            return False
        if session_id == INVALID_SESSION_ID:
            # The leader keeps no session (its cache is off or full): every fetch is full.
            # What this one asked stays held, so that its answer is still processed.
            self.session_id, self.epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        elif request.is_full:
            self.session_id, self.epoch = session_id, next_epoch(INITIAL_EPOCH)
        else:
            self.epoch = next_epoch(self.epoch)
        return True

    def on_send_failure(self) -> None:
        """The request got no answer: the next one is full, closing this session."""
        self._reset(self.session_id)

    def _reset(self, session_id: int) -> None:
        self.session_id = session_id
        self.epoch = INITIAL_EPOCH
        self._held.clear()
        self._changed.clear()
