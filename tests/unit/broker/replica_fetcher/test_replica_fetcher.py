"""The replica fetcher against a loopback leader that answers with crafted Fetch responses:
what a follower's Fetch carries, records appended as the leader sent them, the incremental
session (what the second fetch sends), DivergingEpoch truncation, OFFSET_OUT_OF_RANGE and
the leader's offsets, fencing, retried errors after the backoff, session errors starting a
full session again, and the injected follower fetch delay."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path

from loopback_leader import (
    LoopbackLeader,
    fetch_response,
    list_offsets_response,
    partition_data,
)

from brook.broker.partition import Partition
from brook.broker.replica_fetcher.codec import FetchSettings
from brook.broker.replica_fetcher.fetcher import FetcherConfig, ReplicaFetcher
from brook.broker.replica_fetcher.state import Phase
from brook.log.config import LogConfig
from brook.log.log import PartitionLog
from brook.metadata.image import PartitionInfo
from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors
from brook.protocol.records import build_batch, encode_record

NOW = 1_700_000_000_000
TID = uuid.UUID(int=0xABC)
LOCAL, LEADER = 2, 1
BACKOFF_MS = 300
BROKER_EPOCH = 77


def batch(base_offset: int, count: int, epoch: int) -> bytes:
    records = [encode_record(i, 0, None, b"v%d" % (base_offset + i), ()) for i in range(count)]
    return build_batch(
        records,
        base_timestamp=NOW,
        max_timestamp=NOW,
        base_offset=base_offset,
        partition_leader_epoch=epoch,
    )


class Follower:
    """Partitions this broker follows on LEADER, with their real logs."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.partitions: dict[int, Partition] = {}

    def partition(self, index: int, leader_epoch: int = 5) -> Partition:
        plog = PartitionLog.open(
            self.root / f"t-{index}", LogConfig.from_topic_config({}), now_ms=NOW
        )
        p = Partition("t", index, TID, LOCAL, plog)
        p.update(
            PartitionInfo(TID, index, (LEADER, LOCAL), (LEADER, LOCAL), LEADER, leader_epoch, 1)
        )
        self.partitions[index] = p
        return p

    def close(self) -> None:
        for p in self.partitions.values():
            p.log.close_files()


def run(
    tmp_path: Path,
    scenario: Callable[[LoopbackLeader, ReplicaFetcher, Follower], Awaitable[None]],
    *,
    delay_ms: int = 0,
) -> None:
    async def main() -> None:
        leader = await LoopbackLeader().start()
        follower = Follower(tmp_path)
        fetcher = ReplicaFetcher(
            LEADER,
            0,
            FetcherConfig(
                FetchSettings(LOCAL, max_wait_ms=500, min_bytes=1, max_bytes=10 << 20),
                backoff_ms=BACKOFF_MS,
                request_timeout_ms=5_000,
            ),
            endpoint=lambda: ("127.0.0.1", leader.port),
            broker_epoch=lambda: BROKER_EPOCH,
            delay_ms=lambda: delay_ms,
            clock=lambda: time.monotonic_ns() // 1_000_000,
        )
        try:
            await scenario(leader, fetcher, follower)
        finally:
            await fetcher.stop()
            await leader.close()
            follower.close()

    asyncio.run(asyncio.wait_for(main(), 60))


def sent(request: object) -> dict[int, tuple[int, int, int, int]]:
    """Partition -> (fetch offset, last fetched epoch, current leader epoch, log start)."""
    out = {}
    for topic in request.topics:  # type: ignore[attr-defined]
        assert topic.topic_id == TID
        for p in topic.partitions:
            out[p.partition] = (
                p.fetch_offset,
                p.last_fetched_epoch,
                p.current_leader_epoch,
                p.log_start_offset,
            )
    return out


def forgotten(request: object) -> list[int]:
    return [p for t in request.forgotten_topics_data for p in t.partitions]  # type: ignore[attr-defined]


def test_a_fetch_names_the_replica_and_appends_the_leaders_batches(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0)
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        req = got.request
        assert got.version == 17
        assert (req.replica_state.replica_id, req.replica_state.replica_epoch) == (
            LOCAL,
            BROKER_EPOCH,
        )
        assert req.max_wait.total_seconds() * 1000 == 500
        assert (req.min_bytes, req.max_bytes, req.isolation_level) == (1, 10 << 20, 0)
        assert (req.session_id, req.session_epoch) == (0, 0)
        # an empty log has no epoch: it truncates to its HW (0) and fetches without one
        assert sent(req) == {0: (0, -1, 5, 0)}
        assert req.topics[0].partitions[0].partition_max_bytes == 1 << 20
        data = batch(0, 3, 4) + batch(3, 2, 5)
        got.reply(
            fetch_response({TID: [partition_data(0, high_watermark=4, records=data)]}, session_id=9)
        )
        got = await leader.next()
        assert (got.request.session_id, got.request.session_epoch) == (9, 1)
        assert sent(got.request) == {0: (5, 5, 5, 0)}
        assert p.log.log_end_offset == 5
        assert p.log.latest_epoch() == 5
        assert p.high_watermark == 4  # min(leader HW, own LEO)
        stored = p.log.read(0, 1 << 20, None, True).records
        assert bytes(stored) == data  # byte for byte as the leader sent them

    run(tmp_path, scenario)


def test_the_second_fetch_sends_only_what_changed(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        parts = [f.partition(i) for i in range(4)]
        for p in parts:
            p.log.append_as_follower(batch(0, 2, 5))
            fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        assert sent(got.request) == {i: (2, 5, 5, 0) for i in range(4)}
        got.reply(
            fetch_response(
                {TID: [partition_data(2, high_watermark=2, records=batch(2, 3, 5))]},
                session_id=31,
            )
        )
        got = await leader.next()
        assert (got.request.session_id, got.request.session_epoch) == (31, 1)
        assert sent(got.request) == {2: (5, 5, 5, 0)}
        assert forgotten(got.request) == []
        got.reply(fetch_response({}, session_id=31))  # nothing changed on the leader
        got = await leader.next()
        assert (got.request.session_id, got.request.session_epoch) == (31, 2)
        assert sent(got.request) == {}
        fetcher.remove(("t", 1))
        got.reply(fetch_response({}, session_id=31))
        got = await leader.next()
        assert sent(got.request) == {}
        assert forgotten(got.request) == [1]
        got.reply(fetch_response({}, session_id=31))

    run(tmp_path, scenario)


def test_a_leader_that_keeps_no_session_still_has_its_records_appended(tmp_path: Path) -> None:
    # A leader whose session cache is off or full answers with session id 0: the records of
    # each such (full) fetch are the follower's all the same, and the next fetch moves on.
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0)
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        assert (got.request.session_id, got.request.session_epoch) == (0, 0)
        got.reply(
            fetch_response(
                {TID: [partition_data(0, high_watermark=3, records=batch(0, 3, 5))]}, session_id=0
            )
        )
        got = await leader.next()
        assert (got.request.session_id, got.request.session_epoch) == (0, 0)
        assert sent(got.request) == {0: (3, 5, 5, 0)}
        assert p.log.log_end_offset == 3
        got.reply(
            fetch_response(
                {TID: [partition_data(0, high_watermark=5, records=batch(3, 2, 5))]}, session_id=0
            )
        )
        got = await leader.next()
        assert sent(got.request) == {0: (5, 5, 5, 0)}
        assert (p.log.log_end_offset, p.high_watermark) == (5, 5)
        got.reply(fetch_response({}, session_id=0))

    run(tmp_path, scenario)


def test_diverging_epoch_truncates_and_fetches_from_there(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0, leader_epoch=6)
        p.log.append_as_follower(batch(0, 5, 1) + batch(5, 5, 1) + batch(10, 10, 3))
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        assert sent(got.request) == {0: (20, 3, 6, 0)}
        # the leader never had epoch 3; its epoch 2 ended at 15: this log knows only epoch 1
        # below it, which ended at 10, so it truncates there and asks again with epoch 1
        got.reply(fetch_response({TID: [partition_data(0, diverging=(2, 15))]}, session_id=4))
        got = await leader.next()
        assert p.log.log_end_offset == 10
        assert sent(got.request) == {0: (10, 1, 6, 0)}
        # the leader's epoch 1 ended at 7: min(own end 10, 7, LEO 10), inside the batch 5..9,
        # which goes whole
        got.reply(fetch_response({TID: [partition_data(0, diverging=(1, 7))]}, session_id=4))
        got = await leader.next()
        assert p.log.log_end_offset == 5
        assert sent(got.request) == {0: (5, 1, 6, 0)}
        got.reply(
            fetch_response(
                {TID: [partition_data(0, high_watermark=8, records=batch(5, 3, 6))]},
                session_id=4,
            )
        )
        got = await leader.next()
        assert sent(got.request) == {0: (8, 6, 6, 0)}
        assert p.log.epoch_cache.entries() == [(1, 0), (6, 5)]

    run(tmp_path, scenario)


def test_out_of_range_below_the_leaders_start_restarts_the_log_there(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0)
        p.log.append_as_follower(batch(0, 10, 5))
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        got.reply(
            fetch_response(
                {TID: [partition_data(0, error_code=Errors.OFFSET_OUT_OF_RANGE)]}, session_id=3
            )
        )
        earliest = await leader.next(ApiKey.LIST_OFFSETS)
        req = earliest.request
        assert req.replica_id == LOCAL
        part = req.topics[0].partitions[0]
        assert (req.topics[0].name, part.partition_index, part.timestamp) == ("t", 0, -2)
        assert part.current_leader_epoch == 5
        earliest.reply(list_offsets_response("t", 0, 500))
        latest = await leader.next(ApiKey.LIST_OFFSETS)
        assert latest.request.topics[0].partitions[0].timestamp == -1
        latest.reply(list_offsets_response("t", 0, 900))
        got = await leader.next()
        assert (p.log.log_start_offset, p.log.log_end_offset) == (500, 500)
        assert sent(got.request) == {0: (500, -1, 5, 500)}

    run(tmp_path, scenario)


def test_out_of_range_past_the_leaders_end_truncates_to_it(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0)
        p.log.append_as_follower(batch(0, 4, 5) + batch(4, 6, 5))
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        got.reply(
            fetch_response(
                {TID: [partition_data(0, error_code=Errors.OFFSET_OUT_OF_RANGE)]}, session_id=3
            )
        )
        (await leader.next(ApiKey.LIST_OFFSETS)).reply(list_offsets_response("t", 0, 0))
        (await leader.next(ApiKey.LIST_OFFSETS)).reply(list_offsets_response("t", 0, 4))
        got = await leader.next()
        assert (p.log.log_start_offset, p.log.log_end_offset) == (0, 4)
        assert sent(got.request) == {0: (4, 5, 5, 0)}

    run(tmp_path, scenario)


def test_fenced_at_its_epoch_a_partition_stops_until_new_metadata(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p0, p1 = f.partition(0), f.partition(1)
        fetcher.add(p0)
        fetcher.add(p1)
        fetcher.start()
        got = await leader.next()
        got.reply(
            fetch_response(
                {TID: [partition_data(0, error_code=Errors.FENCED_LEADER_EPOCH)]}, session_id=3
            )
        )
        got = await leader.next()
        assert forgotten(got.request) == [0]
        assert fetcher.partitions[("t", 0)].state.phase is Phase.FAILED
        got.reply(fetch_response({}, session_id=3))
        # well past the backoff, partition 0 is still not fetched
        deadline = time.monotonic() + 3 * BACKOFF_MS / 1000
        while time.monotonic() < deadline:
            got = await leader.next()
            assert 0 not in sent(got.request)
            got.reply(fetch_response({}, session_id=3))
        # new metadata (a new leader epoch) revives it
        p0.update(PartitionInfo(TID, 0, (LEADER, LOCAL), (LEADER, LOCAL), LEADER, 6, 2))
        fetcher.add(p0)
        got = await leader.next()
        assert sent(got.request) == {0: (0, -1, 6, 0)}

    run(tmp_path, scenario)


def test_retried_errors_back_off_then_fetch_again(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p0, p1 = f.partition(0), f.partition(1)
        fetcher.add(p0)
        fetcher.add(p1)
        fetcher.start()
        for code in (
            Errors.NOT_LEADER_OR_FOLLOWER,
            Errors.UNKNOWN_LEADER_EPOCH,
            Errors.UNKNOWN_TOPIC_ID,
        ):
            got = await leader.next()
            errored_at = time.monotonic()
            got.reply(fetch_response({TID: [partition_data(0, error_code=code)]}, session_id=3))
            got = await leader.next()
            assert forgotten(got.request) == [0]  # out of the session while backed off
            got.reply(fetch_response({}, session_id=3))
            while True:
                got = await leader.next()
                if 0 in sent(got.request):
                    break
                got.reply(fetch_response({}, session_id=3))
            # the fetcher's clock counts whole milliseconds
            assert time.monotonic() - errored_at >= (BACKOFF_MS - 1) / 1000
            assert sent(got.request)[0] == (0, -1, 5, 0)
            got.reply(fetch_response({}, session_id=3))

    run(tmp_path, scenario)


def test_session_errors_start_a_full_session_again(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        for i in range(3):
            fetcher.add(f.partition(i))
        fetcher.start()
        got = await leader.next()
        got.reply(fetch_response({}, session_id=11))
        got = await leader.next()
        assert (got.request.session_id, got.request.session_epoch, sent(got.request)) == (
            11,
            1,
            {},
        )
        got.reply(fetch_response({}, error_code=Errors.INVALID_FETCH_SESSION_EPOCH))
        got = await leader.next()
        # a full fetch that closes session 11 and opens another
        assert (got.request.session_id, got.request.session_epoch) == (11, 0)
        assert set(sent(got.request)) == {0, 1, 2}
        got.reply(fetch_response({}, session_id=12))
        got = await leader.next()
        assert (got.request.session_id, got.request.session_epoch) == (12, 1)
        got.reply(fetch_response({}, error_code=Errors.FETCH_SESSION_ID_NOT_FOUND))
        got = await leader.next()
        assert (got.request.session_id, got.request.session_epoch) == (0, 0)
        assert set(sent(got.request)) == {0, 1, 2}
        got.reply(fetch_response({}, session_id=13))
        got = await leader.next()
        assert (got.request.session_id, got.request.session_epoch) == (13, 1)

    run(tmp_path, scenario)


def test_a_lost_connection_backs_off_and_reconnects_with_a_full_fetch(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        fetcher.add(f.partition(0))
        fetcher.start()
        got = await leader.next()
        got.reply(fetch_response({}, session_id=21))
        got = await leader.next()
        dropped_at = time.monotonic()
        got.hang_up()
        got = await leader.next()
        assert time.monotonic() - dropped_at >= (BACKOFF_MS - 1) / 1000
        assert leader.connections == 2
        assert (got.request.session_id, got.request.session_epoch) == (21, 0)
        assert sent(got.request) == {0: (0, -1, 5, 0)}

    run(tmp_path, scenario)


def test_the_fault_delay_holds_every_fetch_back(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        fetcher.add(f.partition(0))
        fetcher.start()
        got = await leader.next()
        for _ in range(3):
            answered_at = time.monotonic()
            got.reply(fetch_response({}, session_id=5))
            got = await leader.next()
            assert time.monotonic() - answered_at >= 0.4

    run(tmp_path, scenario, delay_ms=400)


def test_a_corrupt_batch_is_not_appended_and_is_fetched_again(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0)
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        damaged = bytearray(batch(0, 3, 5))
        damaged[-1] ^= 0xFF  # the CRC no longer matches
        got.reply(fetch_response({TID: [partition_data(0, records=bytes(damaged))]}, session_id=3))
        got = await leader.next()
        assert p.log.log_end_offset == 0
        assert forgotten(got.request) == [0]  # backed off
        got.reply(fetch_response({}, session_id=3))
        while True:
            got = await leader.next()
            if 0 in sent(got.request):
                break
            got.reply(fetch_response({}, session_id=3))
        assert sent(got.request)[0] == (0, -1, 5, 0)

    run(tmp_path, scenario)


def test_records_below_the_log_end_fail_the_partition(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0)
        p.log.append_as_follower(batch(0, 5, 5))
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        got.reply(fetch_response({TID: [partition_data(0, records=batch(2, 3, 5))]}, session_id=3))
        got = await leader.next()
        assert p.log.log_end_offset == 5
        assert fetcher.partitions[("t", 0)].state.phase is Phase.FAILED
        assert forgotten(got.request) == [0]

    run(tmp_path, scenario)


def test_records_after_offsets_a_compaction_removed_are_appended(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0)
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        # The leader's log is compacted: its first batch after offset 0 begins at 7.
        got.reply(fetch_response({TID: [partition_data(0, records=batch(7, 3, 5))]}, session_id=3))
        got = await leader.next()
        assert p.log.log_end_offset == 10
        assert fetcher.partitions[("t", 0)].state.phase is Phase.FETCHING
        assert sent(got.request)[0][0] == 10

    run(tmp_path, scenario)


def test_a_response_for_a_position_left_behind_is_ignored(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0)
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        # new metadata while the fetch is in flight: a new leader epoch
        p.update(PartitionInfo(TID, 0, (LEADER, LOCAL), (LEADER, LOCAL), LEADER, 6, 2))
        fetcher.add(p)
        got.reply(fetch_response({TID: [partition_data(0, records=batch(0, 3, 5))]}, session_id=3))
        got = await leader.next()
        assert p.log.log_end_offset == 0  # the answer to epoch 5's fetch was not appended
        assert sent(got.request) == {0: (0, -1, 6, 0)}

    run(tmp_path, scenario)


def test_the_log_start_follows_the_leaders_within_the_high_watermark(tmp_path: Path) -> None:
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        p = f.partition(0)
        p.log.append_as_follower(batch(0, 4, 5) + batch(4, 4, 5))
        fetcher.add(p)
        fetcher.start()
        got = await leader.next()
        got.reply(
            fetch_response(
                {TID: [partition_data(0, high_watermark=6, log_start_offset=4)]}, session_id=3
            )
        )
        got = await leader.next()
        assert (p.log.log_start_offset, p.high_watermark) == (4, 6)
        assert sent(got.request) == {0: (8, 5, 5, 4)}  # the new log start is sent on
        got.reply(
            fetch_response(
                {TID: [partition_data(0, high_watermark=7, log_start_offset=8)]}, session_id=3
            )
        )
        got = await leader.next()
        assert (p.log.log_start_offset, p.high_watermark) == (7, 7)  # not past its own HW

    run(tmp_path, scenario)


def test_stop_ends_a_fetcher_woken_as_it_is_cancelled(tmp_path: Path) -> None:
    # Python 3.11's asyncio.wait_for returns the result of what it waits for, swallowing
    # the cancellation, when both happen in the same loop iteration: the fetcher's idle wait
    # (with a timeout while a partition is backed off) is woken by ``remove`` as the manager
    # stops the emptied fetcher. The fetcher must end all the same.
    async def scenario(leader: LoopbackLeader, fetcher: ReplicaFetcher, f: Follower) -> None:
        fetcher.add(f.partition(0))
        fetcher.start()
        got = await leader.next()
        error = partition_data(0, error_code=Errors.NOT_LEADER_OR_FOLLOWER)
        got.reply(fetch_response({TID: [error]}, session_id=3))
        got = await leader.next()
        assert forgotten(got.request) == [0]  # backed off: the fetcher now idles with a timeout
        got.reply(fetch_response({}, session_id=3))
        await asyncio.sleep(0.05)
        task = fetcher._task
        assert task is not None
        fetcher.remove(("t", 0))  # wakes the idle wait...
        stopping = asyncio.ensure_future(fetcher.stop())  # ...as it is cancelled
        await asyncio.wait({stopping}, timeout=5)  # (asyncio.wait cancels nothing)
        assert stopping.done() and task.done(), "the fetcher ran on after stop()"

    run(tmp_path, scenario)
