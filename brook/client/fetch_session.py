"""KIP-227 incremental fetch sessions, client side: one FetchSessionHandler per broker decides
whether the next Fetch is full or incremental, what it sends and forgets, and how the
response moves the session on. Pure state; the fetcher does the I/O."""

from __future__ import annotations

import uuid
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

from brook.protocol.errors import Errors

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_INT32 = 2**31 - 1
ZERO_UUID = uuid.UUID(int=0)

TopicPartition = tuple[str, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: a negative epoch stays final, MAX_INT wraps to 1 (never 0)."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == MAX_INT32:
        return 1
    return epoch + 1


@dataclass(frozen=True, slots=True)
class PartitionData:
    """What the client asks of one partition; any difference makes the partition "altered"."""

    topic_id: uuid.UUID
    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int


@dataclass
class FetchRequestData:
    """One Fetch request's session part, as the fetcher should put it on the wire."""

    session_id: int
    epoch: int
    is_full: bool
    to_send: dict[TopicPartition, PartitionData]
    to_forget: list[TopicPartition]
    # Same name, new topic id: re-sent in to_send, and forgotten under the old id in v13+.
    to_replace: list[TopicPartition]
    session_partitions: dict[TopicPartition, PartitionData]
    # The id each partition of to_forget / to_replace had in the session: what a v13+
    # ForgottenTopicsData entry must name, since session_partitions no longer holds it.
    forgotten_topic_ids: dict[TopicPartition, uuid.UUID] = field(default_factory=dict)
    # Every partition has a topic id, so the request may use Fetch v13+.
    can_use_topic_ids: bool = False


class FetchSessionHandler:
    """The session with one broker. ``session_id`` / ``epoch`` are the next request's."""

    def __init__(self, node_id: int) -> None:
        self.node_id = node_id
        # Start at (0, 0): always ask for a session; a broker that declines answers id 0.
        self.session_id = INVALID_SESSION_ID
        self.epoch = INITIAL_EPOCH
        self._session: dict[TopicPartition, PartitionData] = {}
        self._topic_names: dict[uuid.UUID, str] = {}

    @property
    def is_full(self) -> bool:
        return self.epoch in (INITIAL_EPOCH, FINAL_EPOCH)

    @property
    def session_partitions(self) -> Mapping[TopicPartition, PartitionData]:
        return dict(self._session)

    @property
    def session_topic_names(self) -> Mapping[uuid.UUID, str]:
        """Topic id → name for the session's topics (empty unless every partition has an id)."""
        return dict(self._topic_names)

    def build(self, wanted: Mapping[TopicPartition, PartitionData]) -> FetchRequestData:
        """The next request for ``wanted`` (its insertion order is the consumer's priority)."""
        can_use_ids = all(pd.topic_id != ZERO_UUID for pd in wanted.values())
        names: dict[uuid.UUID, str] = {}
        for tp, pd in wanted.items():
            if pd.topic_id != ZERO_UUID:
                names.setdefault(pd.topic_id, tp[0])
        if self.is_full:
            self._session = dict(wanted)
            self._topic_names = names if can_use_ids else {}
            return FetchRequestData(
                session_id=self.session_id,
                epoch=self.epoch,
                is_full=True,
                to_send=dict(wanted),
                to_forget=[],
                to_replace=[],
                session_partitions=dict(self._session),
                can_use_topic_ids=can_use_ids,
            )
        pending = dict(wanted)
        removed: list[TopicPartition] = []
        replaced: list[TopicPartition] = []
        forgotten_ids: dict[TopicPartition, uuid.UUID] = {}
        for tp, prev in list(self._session.items()):
            nxt = pending.pop(tp, None)
            if nxt is None:
                del self._session[tp]
                removed.append(tp)
                forgotten_ids[tp] = prev.topic_id
                # A forgotten partition without an id cannot be named in a v13+ request.
                if prev.topic_id == ZERO_UUID:
                    can_use_ids = False
                continue
            if ZERO_UUID not in (prev.topic_id, nxt.topic_id) and prev.topic_id != nxt.topic_id:
                replaced.append(tp)
                forgotten_ids[tp] = prev.topic_id
            elif prev == nxt:
                continue
            # Changed partitions keep their session position but go after the new ones in
            # the request, which is how the broker learns them.
            pending[tp] = nxt
            self._session[tp] = nxt
        for tp, pd in pending.items():
            if tp in self._session:
                # Everything from here on was re-queued above: already in the session.
                break
            self._session[tp] = pd
        self._topic_names = names if can_use_ids else {}
        return FetchRequestData(
            session_id=self.session_id,
            epoch=self.epoch,
            is_full=False,
            to_send=pending,
            to_forget=removed,
            to_replace=replaced,
            session_partitions=dict(self._session),
            forgotten_topic_ids=forgotten_ids,
            can_use_topic_ids=can_use_ids,
        )

    def handle_response(
        self,
        *,
        error_code: int,
        session_id: int,
        partitions: Collection[TopicPartition],
        request: FetchRequestData,
        throttle_time_ms: int = 0,
    ) -> bool:
        """Move the session on from ``request``'s response; False if it cannot be used."""
        if error_code != Errors.NONE:
            if error_code == Errors.FETCH_SESSION_ID_NOT_FOUND:
                self._set(INVALID_SESSION_ID, INITIAL_EPOCH)
            else:
                self._set(request.session_id, INITIAL_EPOCH)
            return False
        got = set(partitions)
        session = request.session_partitions
        if request.is_full:
            if not got and throttle_time_ms > 0:
                # KIP-219: an empty throttled answer to a full fetch; nothing was learnt.
                self._set(INVALID_SESSION_ID, INITIAL_EPOCH)
                return False
            if got != session.keys():
                self._set(INVALID_SESSION_ID, INITIAL_EPOCH)
                return False
            if session_id == INVALID_SESSION_ID:
                # The broker declined a session: keep asking, with full requests.
                self._set(INVALID_SESSION_ID, INITIAL_EPOCH)
            else:
                self._set(session_id, next_epoch(INITIAL_EPOCH))
            return True
        if not got <= session.keys():
            self._set(request.session_id, INITIAL_EPOCH)
            return False
        if session_id == INVALID_SESSION_ID:
            # The broker closed the session (it ended up empty, or was dropped).
            self._set(INVALID_SESSION_ID, INITIAL_EPOCH)
        else:
            self._set(request.session_id, next_epoch(request.epoch))
        return True

    def handle_error(self) -> None:
        """The request or its response was lost: close the session and start a new one."""
        self._set(self.session_id, INITIAL_EPOCH)

    def close(self) -> FetchRequestData | None:
        """The request that closes the session on the broker, or None if there is none."""
        if self.session_id == INVALID_SESSION_ID:
            return None
        self._set(self.session_id, FINAL_EPOCH)
        return self.build({})

    def _set(self, session_id: int, epoch: int) -> None:
        self.session_id = session_id
        self.epoch = epoch
