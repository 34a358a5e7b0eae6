"""A follower's fetch session reads only what changed: the partitions marked dirty since its
last fetch (appends, HW and leadership moves) plus those its request names, so the leader's
work per follower fetch follows the changes, not the session's size. Consumers' sessions
read every partition, as Kafka's do."""

from __future__ import annotations

import asyncio
import uuid

from brook.broker.delayed import wait_for_data
from brook.broker.fetch_session import (
    FetchPartition,
    FetchSessionCache,
    FullFetchContext,
    IncrementalFetchContext,
    PartitionKey,
    PartitionResult,
)

TID = uuid.UUID(int=7)


def fp(partition: int, offset: int = 0) -> FetchPartition:
    return FetchPartition("t", TID, partition, offset, 0, 1 << 20, 0, -1)


def key(partition: int) -> PartitionKey:
    return (TID, partition)


def ok(hw: int = 0) -> PartitionResult:
    return PartitionResult(0, hw, hw, 0, b"")


def open_session(cache: FetchSessionCache, follower: bool, n: int = 1000) -> int:
    full = cache.new_context(
        session_id=0,
        epoch=0,
        partitions=[fp(i) for i in range(n)],
        forgotten=[],
        is_follower=follower,
        uses_topic_ids=True,
    )
    assert isinstance(full, FullFetchContext)
    data = full.build_response({key(i): ok() for i in range(n)})
    assert data.session_id
    return data.session_id


def incremental(
    cache: FetchSessionCache, session_id: int, epoch: int, named: tuple[FetchPartition, ...] = ()
) -> IncrementalFetchContext:
    ctx = cache.new_context(
        session_id=session_id,
        epoch=epoch,
        partitions=named,
        forgotten=[],
        is_follower=True,
        uses_topic_ids=True,
    )
    assert isinstance(ctx, IncrementalFetchContext)
    return ctx


def answer(ctx: IncrementalFetchContext, hw: int = 0) -> None:
    ctx.build_response({key(f.partition): ok(hw) for f in ctx.partitions()})


def test_a_follower_fetch_reads_only_the_changed_and_the_named_partitions() -> None:
    cache = FetchSessionCache(1000)
    sid = open_session(cache, follower=True)
    session = cache.get(sid)
    assert session is not None
    first = incremental(cache, sid, 1)
    assert len(first.partitions()) == 1000  # a new session: everything is unread
    answer(first)
    assert [f.partition for f in incremental(cache, sid, 2).partitions()] == []
    session.mark_dirty(key(17))
    session.mark_dirty(key(3))
    ctx = incremental(cache, sid, 3, (fp(500, offset=9),))
    assert [f.partition for f in ctx.partitions()] == [17, 3, 500]
    assert ctx.partitions()[2].fetch_offset == 9  # the request's new offset
    answer(ctx)
    assert incremental(cache, sid, 4).partitions() == []


def test_what_stays_unfinished_is_read_again() -> None:
    cache = FetchSessionCache(1000)
    sid = open_session(cache, follower=True, n=10)
    answer(incremental(cache, sid, 1))
    session = cache.get(sid)
    assert session is not None
    session.mark_dirty(key(4))
    ctx = incremental(cache, sid, 2)
    ctx.keep_dirty(key(4))  # more to send than the response could take
    answer(ctx)
    assert [f.partition for f in incremental(cache, sid, 3).partitions()] == [4]


def test_a_change_while_a_fetch_waits_wakes_it_and_joins_its_answer() -> None:
    cache = FetchSessionCache(1000)
    sid = open_session(cache, follower=True, n=10)
    answer(incremental(cache, sid, 1))
    session = cache.get(sid)
    assert session is not None
    ctx = incremental(cache, sid, 2)
    woken: list[bool] = []
    session.waker = lambda: woken.append(True)
    session.mark_dirty(key(6))
    assert woken == [True]
    ctx.take_changes()
    assert [f.partition for f in ctx.partitions()] == [6]
    data = ctx.build_response({key(6): ok(hw=5)})  # the HW moved: it is in the response
    assert [f.partition for f, _ in data.partitions] == [6]


def test_a_consumers_session_reads_every_partition() -> None:
    cache = FetchSessionCache(1000)
    sid = open_session(cache, follower=False, n=50)
    session = cache.get(sid)
    assert session is not None and session.dirty is None
    ctx = cache.new_context(
        session_id=sid,
        epoch=1,
        partitions=[],
        forgotten=[],
        is_follower=False,
        uses_topic_ids=True,
    )
    assert isinstance(ctx, IncrementalFetchContext) and not ctx.reads_changes_only
    assert len(ctx.partitions()) == 50


def test_a_change_between_the_read_and_the_wait_ends_the_wait_at_once() -> None:
    """A fetch is read when it arrives but long-polls in a task of its own, on a later turn of
    the event loop: a partition marked dirty in between (an append from another connection)
    has no waker to call. The wait sees the session's marks moved and does not begin."""
    cache = FetchSessionCache(1000)
    sid = open_session(cache, follower=True, n=10)
    answer(incremental(cache, sid, 1))
    session = cache.get(sid)
    assert session is not None
    incremental(cache, sid, 2)  # read: nothing changed
    marks = session.marks
    session.mark_dirty(key(4))  # no fetch is waiting yet

    async def run() -> None:
        wait = wait_for_data(
            [],
            follower=True,
            max_wait_ms=60_000,
            enough=lambda: False,
            session=session,
            session_marks=marks,
        )
        await asyncio.wait_for(wait, 10)  # without the check: parked for its minute

    asyncio.run(run())
    assert session.dirty == {key(4): None}  # left for the fetch to read
