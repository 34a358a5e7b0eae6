"""The client FetchSessionHandler: request building (added, altered, replaced, removed) and
every response reaction, then the handler run against the broker's session cache at random."""

from __future__ import annotations

import dataclasses
import random
import uuid
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from brook.broker.fetch_session import (
    FetchPartition,
    FetchResponseData,
    FetchSessionCache,
    IncrementalFetchContext,
    PartitionKey,
    PartitionResult,
)
from brook.client.fetch_session import (
    MAX_INT32,
    FetchRequestData,
    FetchSessionHandler,
    PartitionData,
    next_epoch,
)
from brook.protocol.errors import Errors

ZERO = uuid.UUID(int=0)
IDS = {"a": uuid.UUID(int=1), "b": uuid.UUID(int=2), "c": uuid.UUID(int=3)}
TP = tuple[str, int]


def pd(topic: str = "a", offset: int = 0, *, topic_id: uuid.UUID | None = None) -> PartitionData:
    return PartitionData(
        topic_id=IDS.get(topic, ZERO) if topic_id is None else topic_id,
        fetch_offset=offset,
        log_start_offset=-1,
        max_bytes=1024,
        current_leader_epoch=-1,
        last_fetched_epoch=-1,
    )


def wanted(*tps: TP, offsets: Mapping[TP, int] | None = None) -> dict[TP, PartitionData]:
    offsets = offsets or {}
    return {tp: pd(tp[0], offsets.get(tp, 0)) for tp in tps}


A0, A1, B0, C0 = ("a", 0), ("a", 1), ("b", 0), ("c", 0)


def in_session(
    tps: tuple[TP, ...] = (A0, A1, B0), session_id: int = 77
) -> tuple[FetchSessionHandler, dict[TP, PartitionData]]:
    """A handler whose full request for ``tps`` opened session ``session_id``."""
    handler = FetchSessionHandler(node_id=1)
    want = wanted(*tps)
    request = handler.build(want)
    assert handler.handle_response(
        error_code=0, session_id=session_id, partitions=list(tps), request=request
    )
    return handler, want


# -- building requests ---------------------------------------------------------------------


def test_a_new_handler_asks_for_a_session_with_a_full_request() -> None:
    handler = FetchSessionHandler(node_id=3)
    assert (handler.node_id, handler.session_id, handler.epoch) == (3, 0, 0)
    want = wanted(B0, A0, A1)
    request = handler.build(want)
    assert (request.session_id, request.epoch, request.is_full) == (0, 0, True)
    assert list(request.to_send) == [B0, A0, A1]
    assert request.to_forget == [] and request.to_replace == []
    assert request.session_partitions == want
    assert request.can_use_topic_ids


def test_an_unchanged_session_sends_an_empty_incremental_request() -> None:
    handler, want = in_session()
    request = handler.build(want)
    assert (request.session_id, request.epoch, request.is_full) == (77, 1, False)
    assert request.to_send == {} and request.to_forget == [] and request.to_replace == []
    assert list(request.session_partitions) == [A0, A1, B0]


@pytest.mark.parametrize(
    "field, value",
    [
        ("fetch_offset", 9),
        ("log_start_offset", 4),
        ("max_bytes", 10),
        ("current_leader_epoch", 2),
        ("last_fetched_epoch", 1),
        ("topic_id", ZERO),
    ],
)
def test_any_field_change_makes_a_partition_altered(field: str, value: object) -> None:
    handler, want = in_session()
    want[A1] = dataclasses.replace(want[A1], **{field: value})
    request = handler.build(want)
    assert request.to_send == {A1: want[A1]}
    assert request.to_forget == [] and request.to_replace == []
    assert handler.session_partitions[A1] == want[A1]


def test_added_partitions_come_first_then_altered_ones_in_session_order() -> None:
    handler, want = in_session((A0, A1, B0))
    nxt = {
        B0: dataclasses.replace(want[B0], fetch_offset=5),
        C0: pd("c"),
        A0: dataclasses.replace(want[A0], fetch_offset=3),
        ("c", 1): pd("c"),
        A1: want[A1],
    }
    request = handler.build(nxt)
    assert list(request.to_send) == [C0, ("c", 1), A0, B0]
    # Altered partitions keep their place in the session; added ones go to its end.
    assert list(request.session_partitions) == [A0, A1, B0, C0, ("c", 1)]


def test_unwanted_partitions_are_forgotten() -> None:
    handler, want = in_session((A0, A1, B0))
    del want[A1]
    request = handler.build(want)
    assert request.to_send == {} and request.to_forget == [A1]
    assert request.forgotten_topic_ids == {A1: IDS["a"]}
    assert list(request.session_partitions) == [A0, B0]


def test_a_new_topic_id_replaces_the_partition() -> None:
    handler, want = in_session((A0, B0))
    new_id = uuid.UUID(int=9)
    want[A0] = pd("a", topic_id=new_id)
    request = handler.build(want)
    assert request.to_send == {A0: want[A0]}
    assert request.to_replace == [A0] and request.to_forget == []
    assert request.forgotten_topic_ids == {A0: IDS["a"]}
    assert handler.session_topic_names == {new_id: "a", IDS["b"]: "b"}


def test_a_topic_id_appearing_or_vanishing_is_only_an_alteration() -> None:
    handler = FetchSessionHandler(0)
    request = handler.build({A0: pd("a", topic_id=ZERO)})
    assert not request.can_use_topic_ids
    handler.handle_response(error_code=0, session_id=5, partitions=[A0], request=request)
    request = handler.build({A0: pd("a")})
    assert request.to_replace == [] and list(request.to_send) == [A0]
    assert request.can_use_topic_ids


def test_topic_ids_are_usable_only_if_every_partition_has_one() -> None:
    handler = FetchSessionHandler(0)
    request = handler.build({A0: pd("a"), ("x", 0): pd("x")})
    assert not request.can_use_topic_ids and handler.session_topic_names == {}
    handler, want = in_session((A0, ("x", 0)))
    del want[("x", 0)]
    # The forgotten partition has no id, so a v13+ request could not name it.
    assert not handler.build(want).can_use_topic_ids


# -- reacting to responses -------------------------------------------------------------------


def test_full_response_with_a_session_id_starts_incremental_fetching() -> None:
    handler, _ = in_session(session_id=123)
    assert (handler.session_id, handler.epoch) == (123, 1)


def test_full_response_without_a_session_keeps_fetching_full() -> None:
    handler = FetchSessionHandler(0)
    want = wanted(A0, B0)
    for _ in range(3):
        request = handler.build(want)
        assert request.is_full and request.to_send == want
        assert handler.handle_response(
            error_code=0, session_id=0, partitions=[A0, B0], request=request
        )
        assert (handler.session_id, handler.epoch) == (0, 0)


@pytest.mark.parametrize(
    "answered", [pytest.param([A0], id="missing"), pytest.param([A0, B0, C0], id="extra")]
)
def test_a_full_response_with_the_wrong_partitions_is_rejected(answered: list[TP]) -> None:
    handler = FetchSessionHandler(0)
    request = handler.build(wanted(A0, B0))
    ok = handler.handle_response(error_code=0, session_id=55, partitions=answered, request=request)
    assert not ok and (handler.session_id, handler.epoch) == (0, 0)


def test_an_empty_throttled_full_response_is_not_used() -> None:
    handler = FetchSessionHandler(0)
    request = handler.build(wanted(A0))
    ok = handler.handle_response(
        error_code=0, session_id=0, partitions=[], request=request, throttle_time_ms=100
    )
    assert not ok and (handler.session_id, handler.epoch) == (0, 0)


def test_an_empty_throttled_incremental_response_is_fine() -> None:
    handler, want = in_session()
    request = handler.build(want)
    assert handler.handle_response(
        error_code=0, session_id=77, partitions=[], request=request, throttle_time_ms=100
    )
    assert (handler.session_id, handler.epoch) == (77, 2)


def test_session_not_found_starts_over_without_a_session() -> None:
    handler, want = in_session()
    request = handler.build(want)
    ok = handler.handle_response(
        error_code=Errors.FETCH_SESSION_ID_NOT_FOUND, session_id=0, partitions=[], request=request
    )
    assert not ok and (handler.session_id, handler.epoch) == (0, 0)


@pytest.mark.parametrize(
    "error",
    [
        Errors.INVALID_FETCH_SESSION_EPOCH,
        Errors.FETCH_SESSION_TOPIC_ID_ERROR,
        Errors.UNKNOWN_SERVER_ERROR,
    ],
)
def test_other_top_level_errors_close_the_session_and_ask_for_a_new_one(error: int) -> None:
    handler, want = in_session()
    request = handler.build(want)
    assert not handler.handle_response(
        error_code=error, session_id=0, partitions=[], request=request
    )
    assert (handler.session_id, handler.epoch) == (77, 0)
    request = handler.build(want)
    assert request.is_full and (request.session_id, request.epoch) == (77, 0)
    assert request.to_send == want


def test_an_incremental_response_naming_a_partition_outside_the_session_is_rejected() -> None:
    handler, want = in_session()
    request = handler.build(want)
    assert not handler.handle_response(
        error_code=0, session_id=77, partitions=[A0, C0], request=request
    )
    assert (handler.session_id, handler.epoch) == (77, 0)


def test_an_incremental_response_without_a_session_id_ends_the_session() -> None:
    handler, want = in_session()
    request = handler.build(want)
    assert handler.handle_response(error_code=0, session_id=0, partitions=[A0], request=request)
    assert (handler.session_id, handler.epoch) == (0, 0)
    assert handler.build(want).is_full


def test_incremental_responses_move_the_epoch_on_and_wrap_to_one() -> None:
    handler, want = in_session()
    for expected in (2, 3, 4):
        request = handler.build(want)
        assert handler.handle_response(error_code=0, session_id=77, partitions=[], request=request)
        assert handler.epoch == expected
    handler.epoch = MAX_INT32
    request = handler.build(want)
    assert request.epoch == MAX_INT32 and not request.is_full
    assert handler.handle_response(error_code=0, session_id=77, partitions=[A0], request=request)
    assert (handler.session_id, handler.epoch) == (77, 1)
    assert (next_epoch(MAX_INT32), next_epoch(-1), next_epoch(0)) == (1, -1, 1)


def test_a_network_error_closes_the_session_and_asks_for_a_new_one() -> None:
    handler, want = in_session()
    handler.build(want)
    handler.handle_error()
    assert (handler.session_id, handler.epoch) == (77, 0)
    assert handler.build(want).is_full


def test_close_sends_an_empty_final_request() -> None:
    handler, _ = in_session()
    request = handler.close()
    assert request is not None
    assert (request.session_id, request.epoch, request.is_full) == (77, -1, True)
    assert request.to_send == {} and request.session_partitions == {}
    assert (handler.session_id, handler.epoch) == (77, -1)
    assert handler.handle_response(error_code=0, session_id=0, partitions=[], request=request)
    assert (handler.session_id, handler.epoch) == (0, 0)
    assert handler.close() is None


def test_close_after_an_error_still_closes_the_broker_session() -> None:
    handler, _ = in_session()
    handler.handle_error()
    request = handler.close()
    assert request is not None and (request.session_id, request.epoch) == (77, -1)


# -- the handler against the broker cache ----------------------------------------------------

TOPICS = ("a", "b", "c")
PARTITIONS = [(t, p) for t in TOPICS for p in range(3)]
View = tuple[int, int, int]  # (HW, log start, error code) as last answered


def _zeros() -> dict[TP, int]:
    return dict.fromkeys(PARTITIONS, 0)


@dataclasses.dataclass
class World:
    """The truth on the broker: each partition's log end, HW, log start and health."""

    leo: dict[TP, int] = dataclasses.field(default_factory=_zeros)
    hw: dict[TP, int] = dataclasses.field(default_factory=_zeros)
    log_start: dict[TP, int] = dataclasses.field(default_factory=_zeros)
    failing: set[TP] = dataclasses.field(default_factory=set)
    ids: dict[str, uuid.UUID] = dataclasses.field(default_factory=lambda: dict(IDS))

    def read(self, fp: FetchPartition, uses_ids: bool, follower: bool) -> PartitionResult:
        """What the Fetch handler would answer; records encode the offset they end at."""
        tp = (fp.topic, fp.partition)
        if uses_ids and fp.topic_id != self.ids[fp.topic]:
            return PartitionResult(Errors.UNKNOWN_TOPIC_ID, -1, -1, -1, b"")
        if tp in self.failing:
            return PartitionResult(Errors.NOT_LEADER_OR_FOLLOWER, -1, -1, -1, b"")
        hw, start = self.hw[tp], self.log_start[tp]
        if not start <= fp.fetch_offset <= self.leo[tp]:
            # Like Brook's handler, an out-of-range read still reports the real offsets.
            return PartitionResult(Errors.OFFSET_OUT_OF_RANGE, hw, hw, start, b"")
        end = self.leo[tp] if follower else hw
        records = end.to_bytes(8, "big") if fp.fetch_offset < end else b""
        return PartitionResult(0, hw, hw, start, records)


class Simulation:
    """One fetcher's handler against one broker's cache; the fetcher remembers, for every
    partition, the HW, log start and error it was last told."""

    def __init__(self, slots: int, uses_ids: bool, follower: bool, seed: int) -> None:
        self.slots = slots
        self.uses_ids = uses_ids
        self.follower = follower
        self.seed = seed
        self.clock = 0
        self.cache = self._new_cache()
        self.handler = FetchSessionHandler(node_id=0)
        self.world = World()
        self.wanted: dict[TP, PartitionData] = {}
        self.view: dict[TP, View] = {}
        self.incremental_responses = 0
        self.omitted = 0

    def _new_cache(self) -> FetchSessionCache:
        return FetchSessionCache(
            self.slots, now_ms=lambda: self.clock, rng=random.Random(self.seed)
        )

    def key(self, tp: TP, topic_id: uuid.UUID) -> PartitionKey:
        return (topic_id if self.uses_ids else tp[0], tp[1])

    @staticmethod
    def fetch_partition(tp: TP, data: PartitionData) -> FetchPartition:
        return FetchPartition(
            topic=tp[0],
            topic_id=data.topic_id,
            partition=tp[1],
            fetch_offset=data.fetch_offset,
            log_start_offset=data.log_start_offset,
            max_bytes=data.max_bytes,
            current_leader_epoch=data.current_leader_epoch,
            last_fetched_epoch=data.last_fetched_epoch,
        )

    def send(
        self, request: FetchRequestData
    ) -> tuple[FetchResponseData, dict[TP, PartitionResult]]:
        """What the broker's Fetch handler does with the request; also returns every read."""
        partitions = [self.fetch_partition(tp, data) for tp, data in request.to_send.items()]
        gone = list(request.to_forget)
        if self.uses_ids:
            gone += request.to_replace  # v13+ forgets the old incarnation by id
        forgotten = [self.key(tp, request.forgotten_topic_ids[tp]) for tp in gone]
        context = self.cache.new_context(
            session_id=request.session_id,
            epoch=request.epoch,
            partitions=partitions,
            forgotten=forgotten,
            is_follower=self.follower,
            uses_topic_ids=self.uses_ids,
        )
        results: dict[PartitionKey, PartitionResult] = {}
        reads: dict[TP, PartitionResult] = {}
        for p in context.partitions():
            result = self.world.read(p, self.uses_ids, self.follower)
            key = self.key((p.topic, p.partition), p.topic_id)
            results[key] = result
            reads[(p.topic, p.partition)] = result
            if result.error_code and isinstance(context, IncrementalFetchContext):
                context.keep_dirty(key)  # as the Fetch handler does: read it again next time
        return context.build_response(results), reads

    def changed(self, tp: TP, *topic_ids: uuid.UUID) -> None:
        """A partition's state moved: a follower's sessions read it at their next fetch (the
        broker's partitions mark their followers' sessions so)."""
        for shard in self.cache._shards:
            for session in shard.sessions.values():
                for topic_id in topic_ids or (self.world.ids[tp[0]],):
                    session.mark_dirty(self.key(tp, topic_id))

    def fetch(self, *, lose: str | None = None) -> None:
        self.clock += 7
        before = dict(self.handler.session_partitions)
        request = self.handler.build(dict(self.wanted))
        assert request.session_partitions == self.wanted
        if lose == "request":
            self.handler.handle_error()
            return
        data, reads = self.send(request)
        if lose == "response":
            self.handler.handle_error()
            return
        answered = [((p.topic, p.partition), r) for p, r in data.partitions]
        ok = self.handler.handle_response(
            error_code=data.error_code,
            session_id=data.session_id,
            partitions=[tp for tp, _ in answered],
            request=request,
        )
        if not ok:
            # Only a broker restart (all sessions lost) makes a response unusable here.
            assert data.error_code == Errors.FETCH_SESSION_ID_NOT_FOUND
            return
        if request.is_full:
            assert [tp for tp, _ in answered] == list(request.to_send)
        elif data.session_id != 0:
            self.incremental_responses += 1
            self.omitted += len(request.session_partitions) - len(answered)
            self.check_only_changes(request, before, answered)
        for tp, r in answered:
            self.view[tp] = (r.high_watermark, r.log_start_offset, r.error_code)
            self.advance(tp, r)
        # The fetcher must know every session partition's answer, whether it was sent now
        # or earlier. A consumer's session reads them all every round; a follower's only
        # those that changed, the others answering as they did when last read.
        if self.follower:
            assert set(reads) <= set(request.session_partitions)
        else:
            assert set(reads) == set(request.session_partitions)
        for tp, data in request.session_partitions.items():
            r = reads.get(tp) or self.world.read(
                self.fetch_partition(tp, data), self.uses_ids, True
            )
            assert self.view[tp] == (r.high_watermark, r.log_start_offset, r.error_code), tp
        self.check_in_step()

    def check_only_changes(
        self,
        request: FetchRequestData,
        before: Mapping[TP, PartitionData],
        answered: list[tuple[TP, PartitionResult]],
    ) -> None:
        new = set(request.to_send).difference(before)
        if self.uses_ids:
            new.update(request.to_replace)  # a new incarnation is new to the broker
        for tp, r in answered:
            unchanged = (
                not r.records
                and r.error_code == 0
                and tp not in new
                and self.view.get(tp) == (r.high_watermark, r.log_start_offset, 0)
            )
            assert not unchanged, f"{tp} sent unchanged: {r}"

    def advance(self, tp: TP, r: PartitionResult) -> None:
        """The fetcher moves on: past the records, or to the HW when out of range (a reset to
        "latest", after which the partition often clears with nothing else changed)."""
        if r.records:
            offset = int.from_bytes(r.records, "big")
        elif r.error_code == Errors.OFFSET_OUT_OF_RANGE:
            offset = r.high_watermark
        else:
            return
        self.wanted[tp] = dataclasses.replace(self.wanted[tp], fetch_offset=offset)

    def check_in_step(self) -> None:
        """After a good response, both sides agree on the session, its epoch and parameters."""
        handler = self.handler
        if handler.session_id == 0:
            return
        session = self.cache.get(handler.session_id)
        assert session is not None
        assert session.epoch == handler.epoch
        mine = {
            self.key(tp, data.topic_id): data for tp, data in handler.session_partitions.items()
        }
        assert set(session.partitions) == set(mine)
        for k, cached in session.partitions.items():
            p = cached.params
            assert mine[k] == PartitionData(
                p.topic_id,
                p.fetch_offset,
                p.log_start_offset,
                p.max_bytes,
                p.current_leader_epoch,
                p.last_fetched_epoch,
            )

    def apply(self, op: tuple[Any, ...]) -> None:
        kind, *args = op
        world = self.world
        if kind == "want":
            tp = args[0]
            if tp not in self.wanted:
                self.wanted[tp] = dataclasses.replace(
                    pd(tp[0], world.log_start[tp]), topic_id=world.ids[tp[0]]
                )
        elif kind == "unwant":
            self.wanted.pop(args[0], None)
        elif kind == "max_bytes" and args[0] in self.wanted:
            self.wanted[args[0]] = dataclasses.replace(self.wanted[args[0]], max_bytes=args[1])
        elif kind == "produce":
            world.leo[args[0]] += args[1]
            self.changed(args[0])
        elif kind == "commit":
            tp = args[0]
            world.hw[tp] = min(world.leo[tp], world.hw[tp] + args[1])
            self.changed(tp)
        elif kind == "truncate_start":
            tp = args[0]
            world.log_start[tp] = min(world.hw[tp], world.log_start[tp] + args[1])
            self.changed(tp)
        elif kind == "fail":
            world.failing ^= {args[0]}
            self.changed(args[0])
        elif kind == "recreate":
            topic = args[0]
            old = world.ids[topic]
            world.ids[topic] = uuid.uuid5(world.ids[topic], "next")
            for tp in PARTITIONS:
                if tp[0] == topic:
                    world.leo[tp] = world.hw[tp] = world.log_start[tp] = 0
                    self.changed(tp, old, world.ids[topic])
                    if tp in self.wanted:
                        # The fetcher learns the new id but keeps its position: out of range.
                        self.wanted[tp] = dataclasses.replace(
                            self.wanted[tp], topic_id=world.ids[topic]
                        )
        elif kind == "fetch":
            self.fetch()
        elif kind == "lose":
            self.fetch(lose=args[0])
        elif kind == "restart":
            self.cache = self._new_cache()
        elif kind == "idle":
            self.clock += args[0]
        elif kind == "near_wrap":
            session = self.cache.get(self.handler.session_id)
            if session is not None and not self.handler.is_full:
                session.epoch = self.handler.epoch = MAX_INT32 - 1


partitions_st = st.sampled_from(PARTITIONS)
fetch_st = st.tuples(st.just("fetch"))
ops_st = st.one_of(
    st.tuples(st.just("want"), partitions_st),
    st.tuples(st.just("unwant"), partitions_st),
    st.tuples(st.just("max_bytes"), partitions_st, st.integers(1, 4)),
    st.tuples(st.just("produce"), partitions_st, st.integers(1, 3)),
    st.tuples(st.just("commit"), partitions_st, st.integers(1, 3)),
    st.tuples(st.just("truncate_start"), partitions_st, st.integers(1, 2)),
    st.tuples(st.just("fail"), partitions_st),
    st.tuples(st.just("recreate"), st.sampled_from(TOPICS)),
    fetch_st,
    fetch_st,
    fetch_st,
    fetch_st,
    st.tuples(st.just("lose"), st.sampled_from(["request", "response"])),
    st.tuples(st.just("restart")),
    st.tuples(st.just("idle"), st.sampled_from([1, 60_000, 200_000])),
    st.tuples(st.just("near_wrap")),
)


@settings(max_examples=300, deadline=None)
@given(
    ops=st.lists(ops_st, max_size=80),
    slots=st.sampled_from([1000, 8, 7]),
    uses_ids=st.booleans(),
    follower=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_the_client_always_knows_every_high_watermark(
    ops: list[tuple[Any, ...]], slots: int, uses_ids: bool, follower: bool, seed: int
) -> None:
    sim = Simulation(slots, uses_ids, follower, seed)
    for op in ops:
        sim.apply(op)
    sim.fetch()
    sim.fetch()
    if slots < 8:
        assert sim.cache.num_sessions == 0 and sim.incremental_responses == 0


@pytest.mark.parametrize("uses_ids", [False, True])
def test_a_long_session_sends_only_changes(uses_ids: bool) -> None:
    sim = Simulation(1000, uses_ids=uses_ids, follower=True, seed=1)
    for tp in PARTITIONS:
        sim.apply(("want", tp))
    sim.fetch()
    assert sim.handler.session_id != 0
    rng = random.Random(5)
    for _ in range(200):
        tp = rng.choice(PARTITIONS)
        sim.apply((rng.choice(["produce", "commit", "truncate_start"]), tp, rng.randint(1, 3)))
        if rng.random() < 0.05:
            sim.apply(("fail", tp))
        if rng.random() < 0.02:
            sim.apply(("recreate", tp[0]))
        sim.fetch()
    assert sim.incremental_responses == 200 and sim.handler.session_id != 0
    assert sim.omitted > 1000  # most partitions stay out of most responses
