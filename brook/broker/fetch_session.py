"""KIP-227 incremental fetch sessions, broker side: the sharded session cache and the fetch
contexts (error, sessionless, full, incremental) that tell the Fetch handler what to read and
which partitions its response carries. Pure state: the handler owns the clock and all I/O."""

from __future__ import annotations

import dataclasses
import random
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from brook.log.span import StoredSpan
from brook.protocol.errors import Errors

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
MAX_INT32 = 2**31 - 1
NUM_SHARDS = 8
# Each shard owns a disjoint id range, so an id alone names its shard.
SESSION_ID_RANGE = MAX_INT32 // NUM_SHARDS
# A constant in Kafka too, never a config: the minimum idle time (or age) before a session
# may be evicted for a newcomer.
MIN_EVICTION_MS = 120_000
ZERO_UUID = uuid.UUID(int=0)

PartitionKey = tuple[str | uuid.UUID, int]


def next_epoch(epoch: int) -> int:
    """The epoch after ``epoch``: a negative epoch stays final, MAX_INT wraps to 1 (never 0)."""
    if epoch < 0:
        return FINAL_EPOCH
    if epoch == MAX_INT32:
        return 1
    return epoch + 1


def _monotonic_ms() -> int:
    return time.monotonic_ns() // 1_000_000


@dataclass(frozen=True, slots=True)
class FetchPartition:
    """One partition's fetch parameters, as requested or as cached in a session. Immutable:
    a session replaces a partition's parameters rather than editing them, so a request that
    is still waiting keeps the parameters it was accepted with."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    fetch_offset: int
    log_start_offset: int
    max_bytes: int
    current_leader_epoch: int
    last_fetched_epoch: int


@dataclass(slots=True)
class PartitionResult:
    """What the handler read for one partition."""

    error_code: int
    high_watermark: int
    last_stable_offset: int
    log_start_offset: int
    records: bytes | StoredSpan
    preferred_read_replica: int = -1
    diverging_epoch: tuple[int, int] | None = None
    current_leader: tuple[int, int] | None = None
    # (producer id, first offset) of the aborted transactions a read_committed fetch overlaps
    aborted_transactions: Sequence[tuple[int, int]] = ()


@dataclass(slots=True)
class FetchResponseData:
    """The response-level outcome: top-level error, session id, and partitions in order."""

    error_code: int
    session_id: int
    partitions: list[tuple[FetchPartition, PartitionResult]]


def partition_key(fp: FetchPartition, uses_topic_ids: bool) -> PartitionKey:
    """A partition's identity: by topic id in v13+ sessions, by name before."""
    return (fp.topic_id if uses_topic_ids else fp.topic, fp.partition)


@dataclass(slots=True, eq=False)
class CachedPartition:
    """A session's copy of a partition's request parameters and of what was last sent back."""

    params: FetchPartition
    high_watermark: int = -1
    log_start_offset: int = -1  # the leader's, as last sent; params holds the follower's

    def update_params(self, fp: FetchPartition) -> None:
        cached = self.params
        # The identity part of the key never changes here; the other half may be learnt later
        # (an id not yet known when added, or a recreated topic in a by-name session).
        self.params = dataclasses.replace(
            fp,
            topic=fp.topic or cached.topic,
            topic_id=fp.topic_id if fp.topic_id != ZERO_UUID else cached.topic_id,
        )

    def must_respond(self, result: PartitionResult) -> bool:
        """Whether an incremental response carries this partition; records what it sends.

        The last stable offset is deliberately not compared, as in Kafka.
        """
        respond = bool(result.records)
        if self.high_watermark != result.high_watermark:
            respond = True
            self.high_watermark = result.high_watermark
        if self.log_start_offset != result.log_start_offset:
            respond = True
            self.log_start_offset = result.log_start_offset
        if result.preferred_read_replica >= 0:
            respond = True
        if result.error_code != Errors.NONE:
            # Forget the sent HW so the partition is sent again once the error clears.
            self.high_watermark = -1
            respond = True
        if result.diverging_epoch is not None:
            respond = True
        return respond


@dataclass(eq=False)
class FetchSession:
    """One cached session. ``epoch`` is the epoch the next request must carry."""

    id: int
    privileged: bool
    uses_topic_ids: bool
    creation_ms: int
    last_used_ms: int
    epoch: int
    partitions: dict[PartitionKey, CachedPartition]
    # Eviction bookkeeping, refreshed only on touch (as Kafka's trees are): the size and the
    # evictable sets a session is in are those seen at its last use, not the current ones.
    cached_size: int = -1
    evictable_by_all: bool = False
    evictable_by_privileged: bool = False
    # A follower's session only: the partitions that changed since its last fetch (in the
    # order they changed), fed by the partitions themselves (appends, HW and leadership
    # moves); an incremental fetch reads only these and those its request names.
    dirty: dict[PartitionKey, None] | None = None
    # Called when a partition becomes dirty (a long-polling fetch of this session wakes).
    waker: Callable[[], None] | None = None
    # How many times a partition was marked dirty: a fetch read before a mark it has not
    # waited for yet (its long poll starts on a later turn of the loop) answers at once.
    marks: int = 0

    def evictable_key(self) -> tuple[bool, int, int]:
        return (self.privileged, self.cached_size, self.id)

    def mark_dirty(self, key: PartitionKey) -> None:
        if self.dirty is not None:
            self.dirty[key] = None
            self.marks += 1
            if self.waker is not None:
                self.waker()


class _Shard:
    """One eighth of the cache: its own slots, id range, LRU and eviction choice."""

    def __init__(self, index: int, max_entries: int, rng: random.Random) -> None:
        self.index = index
        self.max_entries = max_entries
        self.rng = rng
        self.sessions: dict[int, FetchSession] = {}
        self.evictions = 0

    def new_session_id(self) -> int:
        low = max(1, self.index * SESSION_ID_RANGE)
        high = (self.index + 1) * SESSION_ID_RANGE
        while True:
            session_id = self.rng.randrange(low, high)
            if session_id not in self.sessions:
                return session_id

    def maybe_create(
        self,
        now: int,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: dict[PartitionKey, CachedPartition],
    ) -> int:
        size = len(partitions)
        if len(self.sessions) >= self.max_entries and not self.try_evict(
            privileged, (privileged, size, 0), now
        ):
            return INVALID_SESSION_ID
        session = FetchSession(
            id=self.new_session_id(),
            privileged=privileged,
            uses_topic_ids=uses_topic_ids,
            creation_ms=now,
            last_used_ms=now,
            epoch=next_epoch(INITIAL_EPOCH),
            partitions=partitions,
            dirty=dict.fromkeys(partitions) if privileged else None,
        )
        self.sessions[session.id] = session
        self.touch(session, now)
        return session.id

    def try_evict(self, privileged: bool, key: tuple[bool, int, int], now: int) -> bool:
        if not self.sessions:
            return False
        stale = min(self.sessions.values(), key=lambda s: (s.last_used_ms, s.id))
        if now - stale.last_used_ms > MIN_EVICTION_MS:
            self._evict(stale)
            return True
        if privileged:
            pool = [s for s in self.sessions.values() if s.evictable_by_privileged]
        else:
            pool = [s for s in self.sessions.values() if s.evictable_by_all]
        if not pool:
            return False
        victim = min(pool, key=FetchSession.evictable_key)
        # Ties go to the newcomer: its id 0 sorts below every real id.
        if key < victim.evictable_key():
            return False
        self._evict(victim)
        return True

    def _evict(self, session: FetchSession) -> None:
        self.remove(session.id)
        self.evictions += 1

    def remove(self, session_id: int) -> FetchSession | None:
        return self.sessions.pop(session_id, None)

    def touch(self, session: FetchSession, now: int) -> None:
        session.last_used_ms = now
        session.cached_size = len(session.partitions)
        old = now - session.creation_ms > MIN_EVICTION_MS
        session.evictable_by_privileged = old or not session.privileged
        session.evictable_by_all = old


class FetchSessionCache:
    """All fetch sessions of one broker, split across 8 shards of ``max_slots // 8`` each."""

    def __init__(
        self,
        max_slots: int,
        *,
        now_ms: Callable[[], int] = _monotonic_ms,
        rng: random.Random | None = None,
    ) -> None:
        if max_slots < 0:
            raise ValueError(f"max_slots must be >= 0, got {max_slots}")
        self.max_slots = max_slots
        self._now_ms = now_ms
        # Ids are the only guard against another client hijacking a session: unpredictable
        # by default, seeded only when a test asks for it.
        rng = rng if rng is not None else random.SystemRandom()
        self._shards = [_Shard(i, max_slots // NUM_SHARDS, rng) for i in range(NUM_SHARDS)]
        self._next_shard = 0

    @property
    def slots_per_shard(self) -> int:
        return self._shards[0].max_entries

    @property
    def num_sessions(self) -> int:
        return sum(len(s.sessions) for s in self._shards)

    @property
    def num_partitions_cached(self) -> int:
        return sum(sess.cached_size for s in self._shards for sess in s.sessions.values())

    @property
    def evictions(self) -> int:
        return sum(s.evictions for s in self._shards)

    def shard_sizes(self) -> list[int]:
        return [len(s.sessions) for s in self._shards]

    def _shard_for(self, session_id: int) -> _Shard | None:
        if session_id <= INVALID_SESSION_ID:
            return None
        index = session_id // SESSION_ID_RANGE
        return self._shards[index] if index < NUM_SHARDS else None

    def get(self, session_id: int) -> FetchSession | None:
        shard = self._shard_for(session_id)
        return shard.sessions.get(session_id) if shard else None

    def remove(self, session_id: int) -> bool:
        shard = self._shard_for(session_id)
        return shard is not None and shard.remove(session_id) is not None

    def new_context(
        self,
        *,
        session_id: int,
        epoch: int,
        partitions: Sequence[FetchPartition],
        forgotten: Sequence[PartitionKey],
        is_follower: bool,
        uses_topic_ids: bool,
        topic_names: Mapping[uuid.UUID, str] | None = None,
    ) -> FetchContext:
        """Decide how a Fetch request is served, updating the session it names.

        ``topic_names`` (id → name) lets an incremental context name cached partitions whose
        topic id was unknown when they were added.
        """
        requested = {partition_key(fp, uses_topic_ids): fp for fp in partitions}
        if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
            # Any session named by a full request is closed, whatever happens next.
            if session_id != INVALID_SESSION_ID:
                self.remove(session_id)
            if epoch == FINAL_EPOCH:
                return SessionlessFetchContext(requested)
            return FullFetchContext(self, requested, is_follower, uses_topic_ids)
        shard = self._shard_for(session_id)
        session = shard.sessions.get(session_id) if shard else None
        if shard is None or session is None:
            return SessionErrorContext(Errors.FETCH_SESSION_ID_NOT_FOUND)
        if session.epoch != epoch:
            return SessionErrorContext(Errors.INVALID_FETCH_SESSION_EPOCH)
        if session.uses_topic_ids != uses_topic_ids:
            return SessionErrorContext(Errors.FETCH_SESSION_TOPIC_ID_ERROR)
        for key, fp in requested.items():
            cached = session.partitions.get(key)
            if cached is None:
                session.partitions[key] = CachedPartition(fp)
            else:
                cached.update_params(fp)
        # Removals come after additions, so a partition both listed and forgotten is gone.
        for key in forgotten:
            session.partitions.pop(key, None)
        if not session.partitions:
            shard.remove(session.id)
            return SessionlessFetchContext(requested)
        shard.touch(session, self._now_ms())
        session.epoch = next_epoch(session.epoch)
        if topic_names:
            for cached in session.partitions.values():
                if not cached.params.topic:
                    name = topic_names.get(cached.params.topic_id, "")
                    cached.params = dataclasses.replace(cached.params, topic=name)
        return IncrementalFetchContext(session, epoch, requested)

    def _create_session(
        self,
        privileged: bool,
        uses_topic_ids: bool,
        partitions: dict[PartitionKey, CachedPartition],
    ) -> int:
        shard = self._shards[self._next_shard]
        self._next_shard = (self._next_shard + 1) % NUM_SHARDS
        return shard.maybe_create(self._now_ms(), privileged, uses_topic_ids, partitions)


class FetchContext:
    """How one Fetch request is served. Call ``build_response`` once, after the last read."""

    error_code: int = Errors.NONE

    def __init__(self) -> None:
        self._responded = False

    def partitions(self) -> list[FetchPartition]:
        """The partitions to read, in the order the response should list them."""
        return []

    def build_response(self, results: Mapping[PartitionKey, PartitionResult]) -> FetchResponseData:
        """The response for ``results`` (one per partition of ``partitions()``)."""
        self._mark_responded()
        return self._respond(results)

    def build_throttled_response(self) -> FetchResponseData:
        """An empty response for a throttled request; it never creates a session."""
        self._mark_responded()
        return FetchResponseData(self.error_code, INVALID_SESSION_ID, [])

    def _respond(self, results: Mapping[PartitionKey, PartitionResult]) -> FetchResponseData:
        raise NotImplementedError

    def _mark_responded(self) -> None:
        if self._responded:
            raise RuntimeError("build_response may be called only once per fetch context")
        self._responded = True


def _check_results(
    expected: Sequence[PartitionKey], results: Mapping[PartitionKey, PartitionResult]
) -> None:
    if len(results) == len(expected) and all(k in results for k in expected):
        return
    missing = [k for k in expected if k not in results]
    if missing:
        raise ValueError(f"no result for partitions {missing}")
    extra = set(results).difference(expected)
    if extra:
        raise ValueError(f"results for partitions outside the fetch: {sorted(map(str, extra))}")


class SessionErrorContext(FetchContext):
    """The session could not be used: the whole response is the error, with no partitions."""

    def __init__(self, error_code: int) -> None:
        super().__init__()
        self.error_code = error_code

    def _respond(self, results: Mapping[PartitionKey, PartitionResult]) -> FetchResponseData:
        return FetchResponseData(self.error_code, INVALID_SESSION_ID, [])


class _ListedFetchContext(FetchContext):
    """A full fetch: reads and answers exactly the partitions the request lists."""

    def __init__(self, requested: dict[PartitionKey, FetchPartition]) -> None:
        super().__init__()
        self._requested = requested

    def partitions(self) -> list[FetchPartition]:
        return list(self._requested.values())

    def _listed(self, results: Mapping[PartitionKey, PartitionResult]) -> FetchResponseData:
        _check_results(list(self._requested), results)
        return FetchResponseData(
            Errors.NONE,
            INVALID_SESSION_ID,
            [(fp, results[key]) for key, fp in self._requested.items()],
        )


class SessionlessFetchContext(_ListedFetchContext):
    """A full fetch outside any session: every requested partition, session id 0."""

    def _respond(self, results: Mapping[PartitionKey, PartitionResult]) -> FetchResponseData:
        return self._listed(results)


class FullFetchContext(_ListedFetchContext):
    """A full fetch that opens a session from its response, if the cache has or frees a slot."""

    def __init__(
        self,
        cache: FetchSessionCache,
        requested: dict[PartitionKey, FetchPartition],
        is_follower: bool,
        uses_topic_ids: bool,
    ) -> None:
        super().__init__(requested)
        self._cache = cache
        self._is_follower = is_follower
        self._uses_topic_ids = uses_topic_ids

    def _respond(self, results: Mapping[PartitionKey, PartitionResult]) -> FetchResponseData:
        response = self._listed(results)
        cached: dict[PartitionKey, CachedPartition] = {}
        for key, fp in self._requested.items():
            result = results[key]
            # An errored partition caches HW -1 here too, so it is resent once the error
            # clears even if the handler reported a real HW alongside the error.
            hw = -1 if result.error_code != Errors.NONE else result.high_watermark
            cached[key] = CachedPartition(fp, hw, result.log_start_offset)
        response.session_id = self._cache._create_session(
            self._is_follower, self._uses_topic_ids, cached
        )
        return response


class IncrementalFetchContext(FetchContext):
    """A fetch in an existing session: reads every cached partition, answers only changes."""

    def __init__(
        self,
        session: FetchSession,
        request_epoch: int,
        requested: Mapping[PartitionKey, FetchPartition] | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self._expected_epoch = next_epoch(request_epoch)
        # Fixed at request time: the response lists partitions in the order they were read.
        cache = session.partitions
        if session.dirty is None:
            self._snapshot = [(key, c.params) for key, c in cache.items()]
        else:
            # A follower's session: only what changed since its last fetch, and what this
            # request names (new partitions, new fetch offsets); the rest is unchanged and
            # would not be in the response. The handler marks again what stays unfinished.
            keys = dict(session.dirty)
            keys.update(dict.fromkeys(requested or ()))
            session.dirty.clear()
            self._snapshot = [(key, cache[key].params) for key in keys if key in cache]

    def take_changes(self) -> None:
        """A follower's session: add the partitions that changed since this fetch was
        accepted (while it long-polled) to what it reads and answers."""
        dirty = self.session.dirty
        if not dirty:
            return
        have = {key for key, _ in self._snapshot}
        cache = self.session.partitions
        self._snapshot.extend(
            (key, cache[key].params) for key in dirty if key not in have and key in cache
        )
        dirty.clear()

    def keep_dirty(self, key: PartitionKey) -> None:
        """``key`` is not finished (more to send, an error): the next fetch reads it again."""
        if self.session.dirty is not None:
            self.session.dirty[key] = None

    @property
    def reads_changes_only(self) -> bool:
        """Whether ``partitions()`` is only what changed (a follower's session)."""
        return self.session.dirty is not None

    def partitions(self) -> list[FetchPartition]:
        return [fp for _, fp in self._snapshot]

    def _stale(self) -> bool:
        # Another request moved the session on since this one was accepted (a duplicate).
        return self.session.epoch != self._expected_epoch

    def build_throttled_response(self) -> FetchResponseData:
        self._mark_responded()
        if self._stale():
            return FetchResponseData(Errors.INVALID_FETCH_SESSION_EPOCH, self.session.id, [])
        return FetchResponseData(Errors.NONE, self.session.id, [])

    def _respond(self, results: Mapping[PartitionKey, PartitionResult]) -> FetchResponseData:
        if self._stale():
            return FetchResponseData(Errors.INVALID_FETCH_SESSION_EPOCH, self.session.id, [])
        if len(results) != len(self._snapshot):
            _check_results([key for key, _ in self._snapshot], results)
        cache = self.session.partitions
        out: list[tuple[FetchPartition, PartitionResult]] = []
        for key, fp in self._snapshot:
            result = results.get(key)
            if result is None:
                _check_results([key for key, _ in self._snapshot], results)  # raises
            cached = cache.get(key)
            if cached is None:
                continue
            if not cached.must_respond(result):
                continue
            out.append((fp, result))
            if result.records:
                # Rotate partitions that returned data to the back, so a response-size limit
                # does not starve the partitions listed after them.
                cache[key] = cache.pop(key)
        return FetchResponseData(Errors.NONE, self.session.id, out)
