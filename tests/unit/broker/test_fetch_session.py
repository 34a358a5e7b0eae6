"""The broker's fetch session cache and contexts: every (SessionId, SessionEpoch) case, the
incremental inclusion rules, epoch wrap, sharding, and eviction under a controlled clock."""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Iterable, Sequence

import pytest

from brook.broker.fetch_session import (
    MAX_INT32,
    MIN_EVICTION_MS,
    SESSION_ID_RANGE,
    FetchContext,
    FetchPartition,
    FetchResponseData,
    FetchSessionCache,
    FullFetchContext,
    IncrementalFetchContext,
    PartitionKey,
    PartitionResult,
    SessionErrorContext,
    SessionlessFetchContext,
    next_epoch,
)
from brook.protocol.errors import Errors

ZERO = uuid.UUID(int=0)
TOPIC_IDS = {"a": uuid.UUID(int=1), "b": uuid.UUID(int=2), "c": uuid.UUID(int=3)}


class Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


def fp(topic: str, partition: int, offset: int = 0, max_bytes: int = 1024) -> FetchPartition:
    return FetchPartition(
        topic=topic,
        topic_id=TOPIC_IDS.get(topic, ZERO),
        partition=partition,
        fetch_offset=offset,
        log_start_offset=-1,
        max_bytes=max_bytes,
        current_leader_epoch=-1,
        last_fetched_epoch=-1,
    )


def res(
    hw: int = 10,
    log_start: int = 0,
    records: bytes = b"",
    *,
    error_code: int = Errors.NONE,
    lso: int | None = None,
    preferred_read_replica: int = -1,
    diverging_epoch: tuple[int, int] | None = None,
    current_leader: tuple[int, int] | None = None,
) -> PartitionResult:
    return PartitionResult(
        error_code=error_code,
        high_watermark=hw,
        last_stable_offset=hw if lso is None else lso,
        log_start_offset=log_start,
        records=records,
        preferred_read_replica=preferred_read_replica,
        diverging_epoch=diverging_epoch,
        current_leader=current_leader,
    )


def key(p: FetchPartition, ids: bool = False) -> PartitionKey:
    return (p.topic_id if ids else p.topic, p.partition)


def make_cache(slots: int = 1000, clock: Clock | None = None, seed: int = 7) -> FetchSessionCache:
    return FetchSessionCache(slots, now_ms=clock or Clock(), rng=random.Random(seed))


def ctx(
    cache: FetchSessionCache,
    session_id: int,
    epoch: int,
    parts: Sequence[FetchPartition] = (),
    forgotten: Sequence[PartitionKey] = (),
    *,
    follower: bool = False,
    ids: bool = False,
) -> FetchContext:
    return cache.new_context(
        session_id=session_id,
        epoch=epoch,
        partitions=parts,
        forgotten=forgotten,
        is_follower=follower,
        uses_topic_ids=ids,
    )


def respond(
    context: FetchContext,
    overrides: dict[PartitionKey, PartitionResult] | None = None,
    *,
    ids: bool = False,
    default: PartitionResult | None = None,
) -> FetchResponseData:
    """Answer every partition the context reads: ``overrides`` first, else ``default``."""
    overrides = overrides or {}
    results = {}
    for p in context.partitions():
        k = key(p, ids)
        results[k] = overrides.get(k, default if default is not None else res())
    return context.build_response(results)


def keys_of(data: FetchResponseData) -> list[tuple[str, int]]:
    return [(p.topic, p.partition) for p, _ in data.partitions]


def open_session(
    cache: FetchSessionCache,
    parts: Iterable[FetchPartition] = (),
    *,
    follower: bool = False,
    ids: bool = False,
    hw: int = 10,
) -> int:
    parts = list(parts) or [fp("a", 0), fp("a", 1), fp("b", 0)]
    context = ctx(cache, 0, 0, parts, follower=follower, ids=ids)
    return respond(context, ids=ids, default=res(hw)).session_id


P3 = [fp("a", 0), fp("a", 1), fp("b", 0)]


# -- (SessionId, SessionEpoch) meanings ------------------------------------------------------


def test_sessionless_full_fetch_answers_everything_without_a_session() -> None:
    cache = make_cache()
    context = ctx(cache, 0, -1, P3)
    assert isinstance(context, SessionlessFetchContext)
    assert context.error_code == 0
    assert [(p.topic, p.partition) for p in context.partitions()] == [
        ("a", 0),
        ("a", 1),
        ("b", 0),
    ]
    data = respond(context)
    assert (data.error_code, data.session_id) == (0, 0)
    assert keys_of(data) == [("a", 0), ("a", 1), ("b", 0)]
    assert cache.num_sessions == 0


def test_full_fetch_at_epoch_zero_creates_a_session_from_the_response() -> None:
    cache = make_cache()
    context = ctx(cache, 0, 0, P3)
    assert isinstance(context, FullFetchContext)
    data = respond(context, {("a", 1): res(hw=42, log_start=5)})
    assert data.session_id > 0 and data.error_code == 0
    assert keys_of(data) == [("a", 0), ("a", 1), ("b", 0)]
    session = cache.get(data.session_id)
    assert session is not None
    assert session.epoch == 1
    assert not session.privileged and not session.uses_topic_ids
    cached = session.partitions[("a", 1)]
    assert (cached.high_watermark, cached.log_start_offset) == (42, 5)
    assert cache.num_sessions == 1 and cache.num_partitions_cached == 3


def test_full_fetch_naming_a_session_closes_it_and_opens_another() -> None:
    cache = make_cache()
    old = open_session(cache)
    context = ctx(cache, old, 0, P3)
    assert isinstance(context, FullFetchContext)
    assert cache.get(old) is None
    new = respond(context).session_id
    assert new not in (0, old)
    assert cache.num_sessions == 1


def test_final_epoch_closes_the_session_and_opens_none() -> None:
    cache = make_cache()
    old = open_session(cache)
    context = ctx(cache, old, -1, P3)
    assert isinstance(context, SessionlessFetchContext)
    assert cache.get(old) is None
    data = respond(context)
    assert data.session_id == 0 and len(data.partitions) == 3
    assert cache.num_sessions == 0


def test_full_fetch_naming_an_unknown_session_is_not_an_error() -> None:
    cache = make_cache()
    for epoch in (0, -1):
        context = ctx(cache, 12345, epoch, P3)
        assert context.error_code == 0
        assert len(respond(context).partitions) == 3


@pytest.mark.parametrize("session_id", [12345, 0, -5, MAX_INT32, 8 * SESSION_ID_RANGE])
def test_incremental_fetch_in_an_unknown_session_is_error_70(session_id: int) -> None:
    cache = make_cache()
    open_session(cache)
    context = ctx(cache, session_id, 1, P3)
    assert isinstance(context, SessionErrorContext)
    assert context.error_code == Errors.FETCH_SESSION_ID_NOT_FOUND
    assert context.partitions() == []
    data = context.build_response({})
    assert (data.error_code, data.session_id, data.partitions) == (70, 0, [])


@pytest.mark.parametrize("epoch", [2, 5, -2])
def test_incremental_fetch_at_the_wrong_epoch_is_error_71(epoch: int) -> None:
    cache = make_cache()
    sid = open_session(cache)
    context = ctx(cache, sid, epoch, [fp("c", 0)])
    assert context.error_code == Errors.INVALID_FETCH_SESSION_EPOCH
    assert context.build_response({}) == FetchResponseData(71, 0, [])
    # The failed request changed nothing: the right epoch still works.
    session = cache.get(sid)
    assert session is not None and session.epoch == 1 and ("c", 0) not in session.partitions
    assert isinstance(ctx(cache, sid, 1), IncrementalFetchContext)


@pytest.mark.parametrize("session_ids, request_ids", [(True, False), (False, True)])
def test_switching_between_names_and_topic_ids_is_error_106(
    session_ids: bool, request_ids: bool
) -> None:
    cache = make_cache()
    sid = open_session(cache, ids=session_ids)
    context = ctx(cache, sid, 1, ids=request_ids)
    assert context.error_code == Errors.FETCH_SESSION_TOPIC_ID_ERROR
    assert respond(context) == FetchResponseData(106, 0, [])


def test_epoch_is_checked_before_the_topic_id_mode() -> None:
    cache = make_cache()
    sid = open_session(cache, ids=True)
    assert ctx(cache, sid, 3, ids=False).error_code == Errors.INVALID_FETCH_SESSION_EPOCH


def test_each_incremental_fetch_moves_the_expected_epoch_on() -> None:
    cache = make_cache()
    sid = open_session(cache)
    for epoch in range(1, 6):
        context = ctx(cache, sid, epoch)
        assert isinstance(context, IncrementalFetchContext)
        assert respond(context).session_id == sid
    session = cache.get(sid)
    assert session is not None and session.epoch == 6
    # A replay of an older request is refused.
    assert ctx(cache, sid, 5).error_code == Errors.INVALID_FETCH_SESSION_EPOCH


def test_epoch_wraps_from_max_int_to_one() -> None:
    assert next_epoch(MAX_INT32) == 1
    assert next_epoch(0) == 1
    assert next_epoch(-1) == -1
    assert next_epoch(-7) == -1
    cache = make_cache()
    sid = open_session(cache)
    session = cache.get(sid)
    assert session is not None
    session.epoch = MAX_INT32
    assert respond(ctx(cache, sid, MAX_INT32)).error_code == 0
    assert session.epoch == 1
    assert respond(ctx(cache, sid, 1)).session_id == sid
    assert session.epoch == 2


# -- what an incremental request changes ----------------------------------------------------


def test_incremental_reads_every_cached_partition_with_updated_parameters() -> None:
    cache = make_cache()
    sid = open_session(cache)
    context = ctx(cache, sid, 1, [fp("a", 1, offset=77, max_bytes=9), fp("c", 2)])
    read = {(p.topic, p.partition): p for p in context.partitions()}
    assert list(read) == [("a", 0), ("a", 1), ("b", 0), ("c", 2)]
    assert (read[("a", 1)].fetch_offset, read[("a", 1)].max_bytes) == (77, 9)
    assert read[("a", 0)].fetch_offset == 0
    data = respond(context)
    # The added partition is new to the session (cached HW -1), so it is sent; the updated
    # one is not, because its answer did not change.
    assert keys_of(data) == [("c", 2)]
    # Parameters stick for later requests that do not mention the partition.
    later = {(p.topic, p.partition): p for p in ctx(cache, sid, 2).partitions()}
    assert later[("a", 1)].fetch_offset == 77


def test_every_updated_parameter_is_cached() -> None:
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0)])
    update = FetchPartition("a", TOPIC_IDS["a"], 0, 5, 3, 99, 7, 6)
    (read,) = ctx(cache, sid, 1, [update]).partitions()
    assert read == update


def test_forgotten_partitions_are_removed_after_additions() -> None:
    cache = make_cache()
    sid = open_session(cache)
    context = ctx(cache, sid, 1, [fp("c", 0)], [("a", 0), ("c", 0), ("zz", 9)])
    assert [(p.topic, p.partition) for p in context.partitions()] == [("a", 1), ("b", 0)]
    respond(context)
    assert cache.num_partitions_cached == 2


def test_forgetting_every_partition_closes_the_session_and_answers_sessionless() -> None:
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0), fp("a", 1)])
    context = ctx(cache, sid, 1, [], [("a", 0), ("a", 1)])
    assert isinstance(context, SessionlessFetchContext)
    assert cache.get(sid) is None and cache.num_sessions == 0
    data = respond(context)
    assert (data.error_code, data.session_id, data.partitions) == (0, 0, [])


def test_an_empty_session_is_closed_but_listed_partitions_are_still_read() -> None:
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0)])
    context = ctx(cache, sid, 1, [fp("b", 0)], [("a", 0), ("b", 0)])
    assert isinstance(context, SessionlessFetchContext)
    assert keys_of(respond(context)) == [("b", 0)]


# -- what an incremental response includes ---------------------------------------------------


def incremental_answer(result: PartitionResult) -> tuple[FetchSessionCache, int, list[str]]:
    """Open a session on a, b (HW 10, log start 0); answer a with ``result``, b unchanged."""
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0), fp("b", 0)])
    data = respond(ctx(cache, sid, 1), {("a", 0): result})
    return cache, sid, [t for t, _ in keys_of(data)]


def test_unchanged_partitions_are_left_out() -> None:
    assert incremental_answer(res())[2] == []


@pytest.mark.parametrize(
    "result",
    [
        pytest.param(res(records=b"batch"), id="records"),
        pytest.param(res(hw=11), id="high-watermark"),
        pytest.param(res(log_start=3), id="log-start-offset"),
        pytest.param(res(preferred_read_replica=2), id="preferred-read-replica"),
        pytest.param(res(error_code=Errors.NOT_LEADER_OR_FOLLOWER), id="error"),
        pytest.param(res(diverging_epoch=(3, 40)), id="diverging-epoch"),
    ],
)
def test_each_reason_to_include_a_partition(result: PartitionResult) -> None:
    assert incremental_answer(result)[2] == ["a"]


@pytest.mark.parametrize(
    "result",
    [
        pytest.param(res(lso=4), id="last-stable-offset"),
        pytest.param(res(current_leader=(3, 9)), id="leader-hint"),
    ],
)
def test_changes_kafka_does_not_compare_are_left_out(result: PartitionResult) -> None:
    assert incremental_answer(result)[2] == []


def test_a_changed_high_watermark_is_sent_once() -> None:
    cache, sid, first = incremental_answer(res(hw=11))
    assert first == ["a"]
    data = respond(ctx(cache, sid, 2), {("a", 0): res(hw=11)})
    assert data.partitions == []


def test_a_partition_in_error_is_resent_once_the_error_clears() -> None:
    cache, sid, first = incremental_answer(res(hw=10, error_code=Errors.NOT_LEADER_OR_FOLLOWER))
    assert first == ["a"]
    session = cache.get(sid)
    assert session is not None and session.partitions[("a", 0)].high_watermark == -1
    # Same HW as before the error, but the client last saw the error: send it again.
    assert keys_of(respond(ctx(cache, sid, 2))) == [("a", 0)]
    assert respond(ctx(cache, sid, 3)).partitions == []


def test_an_error_in_the_full_response_is_resent_once_it_clears() -> None:
    cache = make_cache()
    context = ctx(cache, 0, 0, [fp("a", 0), fp("b", 0)])
    full = respond(context, {("a", 0): res(hw=10, error_code=Errors.NOT_LEADER_OR_FOLLOWER)})
    assert keys_of(respond(ctx(cache, full.session_id, 1))) == [("a", 0)]


def test_partitions_that_returned_records_move_to_the_end() -> None:
    cache = make_cache()
    parts = [fp("a", 0), fp("a", 1), fp("b", 0), fp("b", 1)]
    sid = open_session(cache, parts)
    context = ctx(cache, sid, 1)
    data = respond(
        context,
        {("a", 0): res(records=b"x"), ("a", 1): res(hw=12), ("b", 0): res(records=b"y")},
    )
    # The response keeps the order of the reads; the session order rotates.
    assert keys_of(data) == [("a", 0), ("a", 1), ("b", 0)]
    order = [(p.topic, p.partition) for p in ctx(cache, sid, 2).partitions()]
    assert order == [("a", 1), ("b", 1), ("a", 0), ("b", 0)]


def test_responses_pair_each_result_with_the_parameters_read() -> None:
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0)])
    context = ctx(cache, sid, 1, [fp("a", 0, offset=33)])
    data = respond(context, {("a", 0): res(records=b"r")})
    ((read, result),) = data.partitions
    assert read.fetch_offset == 33 and result.records == b"r"


def test_a_duplicate_request_gets_error_71_with_the_session_id() -> None:
    cache = make_cache()
    sid = open_session(cache)
    first = ctx(cache, sid, 1)
    second = ctx(cache, sid, 2)  # the session moved on before the first one answered
    assert respond(first) == FetchResponseData(Errors.INVALID_FETCH_SESSION_EPOCH, sid, [])
    assert respond(second).session_id == sid


def test_throttled_responses_are_empty_and_never_open_sessions() -> None:
    cache = make_cache()
    full = ctx(cache, 0, 0, P3)
    assert full.build_throttled_response() == FetchResponseData(0, 0, [])
    assert cache.num_sessions == 0
    sid = open_session(cache)
    incremental = ctx(cache, sid, 1)
    assert incremental.build_throttled_response() == FetchResponseData(0, sid, [])
    stale = ctx(cache, sid, 2)
    ctx(cache, sid, 3)
    assert stale.build_throttled_response() == FetchResponseData(71, sid, [])
    error = ctx(cache, sid, 99)
    assert error.build_throttled_response() == FetchResponseData(71, 0, [])


def test_build_response_runs_once_and_needs_every_result() -> None:
    cache = make_cache()
    context = ctx(cache, 0, 0, P3)
    with pytest.raises(ValueError, match="no result"):
        context.build_response({("a", 0): res()})
    context = ctx(cache, 0, 0, P3)
    with pytest.raises(ValueError, match="outside"):
        context.build_response({k: res() for k in [("a", 0), ("a", 1), ("b", 0), ("zz", 0)]})
    context = ctx(cache, 0, 0, P3)
    respond(context)
    with pytest.raises(RuntimeError):
        respond(context)
    assert cache.num_sessions == 1


def test_a_long_poll_may_read_twice_before_answering() -> None:
    cache = make_cache()
    sid = open_session(cache)
    context = ctx(cache, sid, 1)
    first = context.partitions()
    assert context.partitions() == first
    assert keys_of(respond(context, {("b", 0): res(hw=20)})) == [("b", 0)]


def test_handler_edits_to_what_it_read_do_not_reach_the_session() -> None:
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0)])
    context = ctx(cache, sid, 1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        context.partitions()[0].fetch_offset = 999  # type: ignore[misc]
    respond(context)
    assert ctx(cache, sid, 2).partitions()[0].fetch_offset == 0


def test_a_waiting_request_keeps_the_parameters_it_was_accepted_with() -> None:
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0)])
    waiting = ctx(cache, sid, 1)
    # A later request of the session moves the partition on meanwhile (a duplicate).
    ctx(cache, sid, 2, [fp("a", 0, offset=7)])
    assert waiting.partitions()[0].fetch_offset == 0


# -- topic-id sessions ------------------------------------------------------------------------


def test_topic_id_sessions_key_by_id_and_forget_by_id() -> None:
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0), fp("b", 0)], ids=True)
    session = cache.get(sid)
    assert session is not None and session.uses_topic_ids
    assert set(session.partitions) == {(TOPIC_IDS["a"], 0), (TOPIC_IDS["b"], 0)}
    context = ctx(cache, sid, 1, [], [(TOPIC_IDS["a"], 0), ("b", 0)], ids=True)
    # Forgetting by name means nothing in an id session.
    assert [p.topic for p in context.partitions()] == ["b"]


def test_a_recreated_topic_replaces_its_partitions_by_id() -> None:
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0)], ids=True)
    new_id = uuid.UUID(int=99)
    replacement = FetchPartition("a", new_id, 0, 0, -1, 1024, -1, -1)
    context = ctx(cache, sid, 1, [replacement], [(TOPIC_IDS["a"], 0)], ids=True)
    assert [p.topic_id for p in context.partitions()] == [new_id]
    # The new incarnation is new to the session, so it is sent even with an unchanged HW.
    assert keys_of(respond(context, ids=True)) == [("a", 0)]


def test_unnamed_topic_ids_are_named_once_known() -> None:
    cache = make_cache()
    unknown = FetchPartition("", uuid.UUID(int=50), 0, 0, -1, 1024, -1, -1)
    sid = open_session(cache, [fp("a", 0), unknown], ids=True)
    context = cache.new_context(
        session_id=sid,
        epoch=1,
        partitions=[],
        forgotten=[],
        is_follower=False,
        uses_topic_ids=True,
        topic_names={uuid.UUID(int=50): "late"},
    )
    assert [p.topic for p in context.partitions()] == ["a", "late"]


def test_a_by_name_session_follows_a_recreated_topic_id() -> None:
    cache = make_cache()
    sid = open_session(cache, [fp("a", 0)])
    moved = FetchPartition("a", uuid.UUID(int=77), 0, 0, -1, 1024, -1, -1)
    (read,) = ctx(cache, sid, 1, [moved]).partitions()
    assert read.topic_id == uuid.UUID(int=77)


# -- cache size and shards ---------------------------------------------------------------------


@pytest.mark.parametrize("slots, per_shard", [(1000, 125), (7, 0), (8, 1), (15, 1), (0, 0)])
def test_slots_are_split_over_eight_shards(slots: int, per_shard: int) -> None:
    assert make_cache(slots).slots_per_shard == per_shard


@pytest.mark.parametrize("slots", [0, 7])
def test_fewer_than_eight_slots_never_create_sessions(slots: int) -> None:
    cache = make_cache(slots)
    for follower in (False, True, False, True, True, True, True, True, True):
        assert open_session(cache, follower=follower) == 0
    assert cache.num_sessions == 0 and cache.evictions == 0


def test_negative_slots_are_rejected() -> None:
    with pytest.raises(ValueError):
        FetchSessionCache(-1)


def test_new_sessions_go_round_robin_with_ids_in_their_shard_range() -> None:
    cache = make_cache(1000)
    ids = [open_session(cache) for _ in range(16)]
    assert cache.shard_sizes() == [2] * 8
    for n, sid in enumerate(ids):
        shard = n % 8
        assert max(1, shard * SESSION_ID_RANGE) <= sid < (shard + 1) * SESSION_ID_RANGE
    assert len(set(ids)) == 16
    assert cache.num_sessions == 16 and cache.num_partitions_cached == 48


def test_ids_are_reproducible_for_a_seed() -> None:
    a = [open_session(make_cache(seed=3)) for _ in range(3)]
    b = [open_session(make_cache(seed=3)) for _ in range(3)]
    assert a == b


def test_ids_are_unique_within_a_shard_even_when_the_rng_repeats() -> None:
    class Repeating(random.Random):
        def __init__(self) -> None:
            super().__init__(0)
            self.values = [5, 5, 5, 6]

        def randrange(self, start: int, stop: int | None = None, step: int = 1) -> int:
            # Only shard 0's draws (its range starts at 1) repeat.
            if start == 1 and self.values:
                return self.values.pop(0)
            return super().randrange(start, stop, step)

    cache = FetchSessionCache(1000, now_ms=Clock(), rng=Repeating())
    first = open_session(cache)
    for _ in range(7):
        open_session(cache)  # the other shards
    second = open_session(cache)  # shard 0 again: 5 is taken, so 6
    assert (first, second) == (5, 6)


def test_a_failed_creation_still_advances_the_round_robin() -> None:
    clock = Clock()
    cache = make_cache(8, clock)
    ids = [open_session(cache) for _ in range(8)]
    assert open_session(cache) == 0  # shard 0 full, nothing evictable
    for sid in ids[1:3]:
        assert cache.remove(sid)
    assert open_session(cache) != 0  # shard 1, freed above
    assert open_session(cache) != 0  # shard 2
    assert open_session(cache) == 0  # shard 3 full


# -- eviction ----------------------------------------------------------------------------------


def fill_one_per_shard(
    cache: FetchSessionCache, *, follower: bool = False, size: int = 3
) -> list[int]:
    parts = [fp("a", i) for i in range(size)]
    ids = [open_session(cache, parts, follower=follower) for _ in range(8)]
    assert all(ids)
    return ids


def touch(cache: FetchSessionCache, sid: int) -> None:
    session = cache.get(sid)
    assert session is not None
    respond(ctx(cache, sid, session.epoch))


def test_a_session_unused_for_more_than_the_eviction_time_is_evicted_first() -> None:
    clock = Clock()
    cache = make_cache(8, clock)
    ids = fill_one_per_shard(cache, follower=True, size=50)
    clock.now = MIN_EVICTION_MS
    assert open_session(cache, [fp("z", 0)]) == 0  # exactly 120 s unused: not yet stale
    assert cache.evictions == 0
    # The stale rule ignores privilege and size: a one-partition consumer evicts a follower.
    clock.now = MIN_EVICTION_MS + 1
    for sid in ids[2:]:
        touch(cache, sid)
    new = open_session(cache, [fp("z", 0)])  # shard 1
    assert new != 0 and cache.get(ids[1]) is None and cache.evictions == 1


def test_the_least_recently_used_session_of_the_shard_is_the_stale_one() -> None:
    clock = Clock()
    cache = make_cache(16, clock)  # two per shard
    ids = [open_session(cache) for _ in range(16)]
    # Shard 0 holds ids[0] and ids[8]; use ids[0] later so ids[8] is the least recent.
    clock.now = 10
    touch(cache, ids[0])
    clock.now = MIN_EVICTION_MS + 5
    assert open_session(cache) != 0
    assert cache.get(ids[8]) is None and cache.get(ids[0]) is not None


def test_a_follower_evicts_a_fresh_consumer_session() -> None:
    clock = Clock()
    cache = make_cache(8, clock)
    ids = fill_one_per_shard(cache, size=100)
    clock.now = 1000
    assert open_session(cache, [fp("f", 0)], follower=True) != 0
    assert cache.get(ids[0]) is None and cache.evictions == 1


def test_a_follower_cannot_evict_a_fresh_follower_session() -> None:
    clock = Clock()
    cache = make_cache(8, clock)
    ids = fill_one_per_shard(cache, follower=True, size=1)
    clock.now = 1000
    assert open_session(cache, [fp("f", i) for i in range(50)], follower=True) == 0
    assert all(cache.get(sid) for sid in ids)


@pytest.mark.parametrize("new_size, evicted", [(4, True), (3, False), (2, False)])
def test_a_follower_evicts_an_older_follower_session_only_when_bigger(
    new_size: int, evicted: bool
) -> None:
    clock = Clock()
    cache = make_cache(8, clock)
    ids = fill_one_per_shard(cache, follower=True, size=3)
    # Used recently (not stale) but created more than 120 s ago.
    clock.now = MIN_EVICTION_MS + 10
    for sid in ids:
        touch(cache, sid)
    clock.now += 1000
    new = open_session(cache, [fp("f", i) for i in range(new_size)], follower=True)
    assert (new != 0) is evicted
    assert (cache.get(ids[0]) is None) is evicted


@pytest.mark.parametrize("new_size, evicted", [(4, True), (3, False)])
def test_a_consumer_evicts_an_older_smaller_consumer_session(new_size: int, evicted: bool) -> None:
    clock = Clock()
    cache = make_cache(8, clock)
    ids = fill_one_per_shard(cache, size=3)
    clock.now = MIN_EVICTION_MS + 10
    for sid in ids:
        touch(cache, sid)
    new = open_session(cache, [fp("c", i) for i in range(new_size)])
    assert (new != 0) is evicted
    assert cache.evictions == int(evicted)


def test_a_consumer_cannot_evict_a_recently_created_session() -> None:
    clock = Clock()
    cache = make_cache(8, clock)
    fill_one_per_shard(cache, size=1)
    clock.now = MIN_EVICTION_MS  # created exactly 120 s ago: still protected
    assert open_session(cache, [fp("c", i) for i in range(100)]) == 0


def test_a_consumer_never_evicts_a_follower_session_that_is_in_use() -> None:
    clock = Clock()
    cache = make_cache(8, clock)
    ids = fill_one_per_shard(cache, follower=True, size=1)
    clock.now = MIN_EVICTION_MS + 10
    for sid in ids:
        touch(cache, sid)
    assert open_session(cache, [fp("c", i) for i in range(100)]) == 0


def test_age_counts_as_of_the_last_use() -> None:
    clock = Clock()
    cache = make_cache(8, clock)
    ids = fill_one_per_shard(cache, size=1)
    clock.now = 100_000  # last use when 100 s old: not evictable by consumers yet
    for sid in ids:
        touch(cache, sid)
    clock.now = 130_000  # 130 s old now, but unused since its last touch
    assert open_session(cache, [fp("c", i) for i in range(100)]) == 0
    touch(cache, ids[1])  # the next creation goes to shard 1
    assert open_session(cache, [fp("c", i) for i in range(100)]) != 0
    assert cache.get(ids[1]) is None


def test_the_smallest_evictable_session_is_chosen() -> None:
    clock = Clock()
    cache = make_cache(16, clock)  # two per shard
    sizes = [5] * 8 + [2] * 8
    ids = [open_session(cache, [fp("a", i) for i in range(n)]) for n in sizes]
    clock.now = MIN_EVICTION_MS + 10
    for sid in ids:
        touch(cache, sid)
    assert open_session(cache, [fp("c", i) for i in range(3)]) != 0
    assert cache.get(ids[8]) is None and cache.get(ids[0]) is not None
    assert cache.num_sessions == 16


def test_metrics_follow_sessions_and_partitions() -> None:
    cache = make_cache()
    sid = open_session(cache)
    assert (cache.num_sessions, cache.num_partitions_cached) == (1, 3)
    respond(ctx(cache, sid, 1, [fp("c", 0), fp("c", 1)], [("a", 0)]))
    assert cache.num_partitions_cached == 4
    ctx(cache, sid, 0)  # a full request closes it
    assert (cache.num_sessions, cache.num_partitions_cached) == (0, 0)
