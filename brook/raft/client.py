"""``RaftClient``: the asyncio shell around ``RaftCore`` on a real node (Kafka's
KafkaRaftClient with its threads turned into one event loop).

It owns what the core leaves out: the clock and the timers (the core says when it wants to be
polled), the connections to the other voters (each ``Send`` becomes a request whose answer, or
failure, goes back to the core), the inbound RPCs from the controller listener (answered at
once or, for a parked Fetch, when the core says), and the listeners of committed records: when
the high watermark moves, the committed batches are read back from the log and handed to every
listener in order; a new leader is announced to the listeners only once they have every record
below its epoch's start offset, so an activating controller starts from the whole committed
state. It also takes snapshots of the node's image (KIP-630) as the log grows and loads them at
start-up or when the leader sends one.

It serves the interface the rest of the node expects of a quorum
(``brook.metadata.quorum.MetadataQuorum``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

from brook.metadata.quorum import (
    CommittedBatch,
    LeaderAndEpoch,
    NotLeaderError,
    QuorumListener,
    StorageError,
)
from brook.net.connection import NodeChannels, NodeUnavailable
from brook.protocol.batch import CONTROL_BIT
from brook.protocol.errors import KafkaError
from brook.protocol.records import iter_records

from .actions import (
    Action,
    CommitTo,
    LeaderChanged,
    Respond,
    Send,
    ShutdownComplete,
    SnapshotInstalled,
)
from .config import RaftConfig
from .core import RaftCore
from .follower import RaftFatalError
from .leader import Leader
from .messages import (
    NO_LEADER,
    Errors,
    OffsetAndEpoch,
    QuorumInfo,
    Request,
    Response,
    TopLevelError,
)
from .partition_log import PartitionRaftLog
from .quorum_state import QuorumStateStore
from .snapshot_file import decode_snapshot, encode_snapshot
from .wire import VERSIONS, decode_response, encode_request

log = logging.getLogger(__name__)

_READ_CHUNK = 8 * 1024 * 1024
_DELIVERY_SLICE_RECORDS = 500
_MAX_POLL_S = 0.5


@dataclass(frozen=True, slots=True)
class SnapshotPolicy:
    """When to snapshot the node's image (Kafka's metadata.log.max.record.bytes.between.
    snapshots and metadata.log.max.snapshot.interval.ms) and how much log to keep behind the
    latest snapshot (metadata.max.retention.bytes)."""

    max_bytes_between: int = 20 * 1024 * 1024
    max_interval_ms: int = 3_600_000
    retention_bytes: int = 100 * 1024 * 1024


class RaftClient:
    describes_locally = False  # a broker forwards DescribeQuorum to the active controller

    def __init__(
        self,
        node_id: int,
        voters: Mapping[int, tuple[str, int]],
        cluster_id: str,
        config: RaftConfig,
        raft_log: PartitionRaftLog,
        store: QuorumStateStore,
        clock: Callable[[], int],
        *,
        snapshot_policy: SnapshotPolicy | None = None,
        snapshot_source: Callable[[], list[bytes]] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.node_id = node_id
        self.voters = dict(voters)
        self.cluster_id = cluster_id
        self.config = config
        self.log = raft_log
        self.store = store
        self.clock = clock
        self.rng = rng or random.Random()
        self.snapshot_policy = snapshot_policy or SnapshotPolicy()
        self.snapshot_source = snapshot_source
        self.channels = NodeChannels(f"brook-raft-{node_id}")
        self.core: RaftCore | None = None
        self._listeners: list[QuorumListener] = []
        self._delivered = 0  # the next offset to hand to the listeners
        self._commit_target = 0  # everything below is committed
        self._delivering: asyncio.Task[None] | None = None
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = clock()
        self._announced: LeaderAndEpoch | None = None
        self._pending_leader: LeaderAndEpoch | None = None
        self._parked: dict[int, asyncio.Future[Response]] = {}
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._sends: set[asyncio.Task[None]] = set()
        self._shutdown_done = asyncio.Event()
        self._flushing: asyncio.Task[None] | None = None
        self._flushed = asyncio.Event()
        self.failure: BaseException | None = None

    # ------------------------------------------------------------------ the quorum interface
    @property
    def leader(self) -> LeaderAndEpoch:
        if self.core is None or self.failure is not None:
            return LeaderAndEpoch(None, 0)
        found = self.core.leader_and_epoch
        return LeaderAndEpoch(
            None if found.leader_id == NO_LEADER else found.leader_id, found.epoch
        )

    @property
    def high_watermark(self) -> int:
        hw = None if self.core is None else self.core.high_watermark
        return -1 if hw is None else hw

    @property
    def next_offset(self) -> int:
        return self.log.end_offset

    @property
    def delivered_offset(self) -> int:
        return self._delivered

    def register_listener(self, listener: QuorumListener) -> None:
        self._listeners.append(listener)

    def describe(self, now_ms: int) -> QuorumInfo:
        if self.core is None:
            return QuorumInfo(Errors.NOT_LEADER_OR_FOLLOWER)
        return self.core.describe_quorum(now_ms)

    def append(self, epoch: int, values: Sequence[bytes]) -> int:
        if self.failure is not None:
            raise StorageError(f"the metadata log failed: {self.failure}")
        core = self._require_core()
        if core.epoch != epoch or not core.is_leader:
            raise NotLeaderError(f"node {self.node_id} does not lead epoch {epoch}")
        try:
            result = core.append(values, self.clock())
        except OSError as exc:
            self._fail(exc)
            raise StorageError(f"the metadata log could not be written: {exc}") from exc
        if result.error != Errors.NONE:
            raise NotLeaderError(f"node {self.node_id} does not lead epoch {epoch}")
        self._execute(result.actions)
        self._wake.set()
        return result.last_offset

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        """Load the latest snapshot, start the core and its loop."""
        latest = self.log.latest_snapshot_id()
        if latest is not None and latest.offset >= self.log.start_offset:
            self._load_snapshot(latest)
        else:
            self._delivered = self.log.start_offset
        self.core = RaftCore(
            self.node_id,
            self.voters,
            self.cluster_id,
            self.config,
            self.log,  # type: ignore[arg-type]
            self.store,
            self.rng,
            self.clock(),
        )
        self._execute(self.core.poll(self.clock()))
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        core = self._require_core()
        while not self._shutdown_done.is_set():
            now = self.clock()
            self._execute_safely(partial(core.poll, now))
            if self.failure is not None:
                return
            delay = max(0.0, min(_MAX_POLL_S, (core.next_poll_ms - self.clock()) / 1000))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)

    async def shutdown(self, timeout_ms: int) -> None:
        """Resign gracefully (EndQuorumEpoch to the others) and stop."""
        core = self.core
        if core is not None and self.failure is None:
            with contextlib.suppress(Exception):
                self._execute(core.shutdown(self.clock(), timeout_ms))
                self._wake.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._shutdown_done.wait(), timeout_ms / 1000 + 0.5)
        await self.close()

    async def close(self) -> None:
        self._shutdown_done.set()
        self._wake.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        for task in [*self._sends, self._delivering, self._flushing]:
            if task is not None:
                task.cancel()
        self.channels.close()
        for future in self._parked.values():
            if not future.done():
                future.set_result(TopLevelError(Errors.BROKER_NOT_AVAILABLE))
        self._parked.clear()

    def _fail(self, exc: BaseException) -> None:
        if self.failure is not None:
            return
        self.failure = exc
        log.error("the metadata quorum on node %d stopped: %s", self.node_id, exc)
        self._shutdown_done.set()
        self._wake.set()
        gone = LeaderAndEpoch(None, 0)
        for listener in self._listeners:
            listener.handle_leader_change(gone)

    def _require_core(self) -> RaftCore:
        if self.core is None:
            raise NotLeaderError("the quorum has not started")
        return self.core

    # ------------------------------------------------------------------ inbound RPCs
    async def handle_request(self, sender: int, request: Request) -> Response:
        """Answer a Raft RPC that arrived on the controller listener."""
        core = self.core
        if core is None or self.failure is not None:
            return TopLevelError(Errors.BROKER_NOT_AVAILABLE)
        future: asyncio.Future[Response] = asyncio.get_running_loop().create_future()
        self._parked[id(request)] = future
        self._execute_safely(lambda: core.handle_request(sender, request, self.clock()))
        try:
            return await future
        finally:
            self._parked.pop(id(request), None)

    # ------------------------------------------------------------------ actions
    def _execute(self, actions: list[Action]) -> None:
        if self.log.deferred_flush and self.log.end_offset > self.log.flushed_offset:
            self._schedule_flush()
        for action in actions:
            if isinstance(action, Send):
                task = asyncio.get_running_loop().create_task(self._send(action))
                self._sends.add(task)
                task.add_done_callback(self._sends.discard)
            elif isinstance(action, Respond):
                future = self._parked.get(id(action.request))
                if future is not None and not future.done():
                    future.set_result(action.response)
            elif isinstance(action, CommitTo):
                self._deliver(action.high_watermark)
            elif isinstance(action, SnapshotInstalled):
                self._load_snapshot(action.snapshot_id)
            elif isinstance(action, LeaderChanged):
                self._leader_changed(action)
            elif isinstance(action, ShutdownComplete):
                self._shutdown_done.set()

    def _schedule_flush(self) -> None:
        if self._flushing is None or self._flushing.done():
            self._flushed.clear()
            self._flushing = asyncio.get_running_loop().create_task(self._flush())

    async def _flush(self) -> None:
        """fsync the log on a worker thread until nothing appended is left unflushed, then
        let the core count what became durable."""
        try:
            while self.log.end_offset > self.log.flushed_offset and self.failure is None:
                await asyncio.to_thread(self.log.flush_now)
                core = self.core
                if core is not None:
                    self._execute_safely(partial(core.on_flushed, self.clock()))
        except (OSError, KafkaError) as exc:
            self._fail(exc)
        finally:
            self._flushed.set()

    async def _durable(self, end: int) -> None:
        """Until everything below ``end`` is on disk: a request may tell another node what
        this one holds (a Fetch's offset, a Vote's log end), which must survive a crash."""
        while self.log.flushed_offset < min(end, self.log.end_offset) and self.failure is None:
            self._schedule_flush()
            await self._flushed.wait()

    def _execute_safely(self, call: Callable[[], list[Action]]) -> None:
        try:
            self._execute(call())
        except (RaftFatalError, OSError, KafkaError) as exc:
            self._fail(exc)
        except Exception as exc:
            log.exception("the metadata quorum on node %d failed", self.node_id)
            self._fail(exc)
        self._wake.set()

    async def _send(self, action: Send) -> None:
        request = action.request
        if self.log.deferred_flush:
            await self._durable(self.log.end_offset)
        api_key, version = VERSIONS[type(request)]
        address = self.voters.get(action.destination)
        response: Response | None = None
        if address is not None:
            conn = self.channels.get(action.destination, *address)
            timeout = self.config.request_timeout_ms / 1000
            try:
                entity = await conn.send(api_key, version, encode_request(request), timeout)
                response = decode_response(request, entity)
            except (NodeUnavailable, TimeoutError, OSError):
                response = None
        core = self.core
        if core is None or (self._shutdown_done.is_set() and self.failure is not None):
            return
        now = self.clock()
        if response is None:
            self._execute_safely(lambda: core.handle_send_failure(action.destination, request, now))
        else:
            self._execute_safely(
                lambda: core.handle_response(action.destination, request, response, now)
            )

    # ------------------------------------------------------------------ commits and leaders
    def _deliver(self, high_watermark: int) -> None:
        """Hand every committed batch below ``high_watermark`` to the listeners, in order, a
        slice at a time: applying records can be slow (a broker creates the logs of new
        partitions), and a node catching up on thousands of them must keep answering its
        heartbeats and Raft requests meanwhile."""
        self._commit_target = max(self._commit_target, high_watermark)
        if self._delivering is None or self._delivering.done():
            self._delivering = asyncio.get_running_loop().create_task(self._delivery())

    async def _delivery(self) -> None:
        try:
            while self._deliver_slice(_DELIVERY_SLICE_RECORDS):
                await asyncio.sleep(0)
        except Exception as exc:
            log.exception("applying committed metadata on node %d failed", self.node_id)
            self._fail(exc)

    def _deliver_slice(self, budget: int) -> bool:
        """Deliver committed batches until about ``budget`` records went out; True if more
        are waiting."""
        target = self._commit_target
        while self._delivered < target and budget > 0:
            chunk = self.log.log.read(self._delivered, _READ_CHUNK).records
            if not chunk:
                break
            moved = False
            for header, records in _batches(chunk):
                if header.base_offset < self._delivered:
                    continue
                if header.base_offset >= target or budget <= 0:
                    break
                if not header.attributes & CONTROL_BIT:
                    batch = CommittedBatch(
                        header.base_offset,
                        header.last_offset,
                        header.partition_leader_epoch,
                        records,
                    )
                    for listener in self._listeners:
                        listener.handle_commit(batch)
                    budget -= max(1, len(records))
                self._bytes_since_snapshot += header.size
                self._delivered = header.next_offset
                moved = True
            if not moved:
                break
        if self._pending_leader is not None:
            self._maybe_announce(self._pending_leader)
        self._maybe_snapshot()
        return self._delivered < self._commit_target and budget <= 0

    def _leader_changed(self, action: LeaderChanged) -> None:
        leader = LeaderAndEpoch(
            None if action.leader_id == NO_LEADER else action.leader_id, action.epoch
        )
        self._pending_leader = leader
        self._maybe_announce(leader)

    def _maybe_announce(self, leader: LeaderAndEpoch) -> None:
        """Tell the listeners who leads; this node's own leadership only once they have
        every record below its epoch's start offset."""
        if leader.is_leader(self.node_id):
            role = self.core.role if self.core is not None else None
            if not isinstance(role, Leader) or self._delivered < role.epoch_start_offset:
                return
        self._pending_leader = None
        if leader == self._announced:
            return
        self._announced = leader
        for listener in self._listeners:
            listener.handle_leader_change(leader)

    # ------------------------------------------------------------------ snapshots
    def _load_snapshot(self, snapshot_id: OffsetAndEpoch) -> None:
        path = self.log.snapshot_path(snapshot_id)
        values = decode_snapshot(self.log.read_whole_snapshot(snapshot_id), snapshot_id, str(path))
        for listener in self._listeners:
            listener.handle_load_snapshot(snapshot_id.offset, values)
        self._delivered = snapshot_id.offset
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = self.clock()

    def _maybe_snapshot(self) -> None:
        policy = self.snapshot_policy
        if self.snapshot_source is None or self.core is None or self._delivered <= 0:
            return
        now = self.clock()
        due = self._bytes_since_snapshot >= policy.max_bytes_between or (
            policy.max_interval_ms > 0
            and self._bytes_since_snapshot > 0
            and now - self._last_snapshot_ms >= policy.max_interval_ms
        )
        if not due:
            return
        latest = self.log.latest_snapshot_id()
        if latest is not None and latest.offset >= self._delivered:
            return
        end = self._delivered
        if end <= self.log.start_offset:
            return
        epoch = self.log.epoch_at(end - 1)
        content = encode_snapshot(self.snapshot_source(), OffsetAndEpoch(end, epoch), now)
        snapshot_id = self.core.create_snapshot(end, content)
        self._bytes_since_snapshot = 0
        self._last_snapshot_ms = now
        log.info("metadata snapshot %s written (%d bytes)", snapshot_id, len(content))
        if self.log.log.size_in_bytes() > policy.retention_bytes:
            self.core.delete_log_before_snapshot()


def _batches(chunk: bytes) -> list[tuple[object, list[tuple[int, bytes]]]]:
    """(header, [(offset, value)]) for each whole batch of ``chunk``."""
    out: list[tuple[object, list[tuple[int, bytes]]]] = []
    current: object | None = None
    records: list[tuple[int, bytes]] = []
    for header, record in iter_records(chunk, skip_control=False):
        if header is not current:
            if current is not None:
                out.append((current, records))
            current, records = header, []
        if record.value is not None and not header.attributes & CONTROL_BIT:
            records.append((record.offset, record.value))
    if current is not None:
        out.append((current, records))
    return out
