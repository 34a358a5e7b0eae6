"""The metadata quorum as the rest of the node sees it.

A quorum replicates ``__cluster_metadata`` and tells its listeners what was committed, in
order, and who leads (``QuorumListener``, Kafka's ``RaftClient.Listener``). Only the leader
appends; an append returns the offset of its last record at once, and that record is
committed when a listener's ``handle_commit`` has passed it. Every node has one listener that
builds its image (``loader.py``); the controller is another.

``LocalQuorum`` is the quorum of one: this node is the only voter, an append is committed as
soon as it is on disk. The Raft quorum (``brook.raft``) serves the same interface.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from brook.log.log import PartitionLog
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import build_batch, encode_record, iter_records

_READ_CHUNK = 8 * 1024 * 1024
_FLUSH_RETRY_S = 0.1
log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LeaderAndEpoch:
    leader_id: int | None  # None while no leader is known
    epoch: int

    def is_leader(self, node_id: int) -> bool:
        return self.leader_id == node_id


@dataclass(frozen=True, slots=True)
class CommittedBatch:
    """Committed records in log order; ``last_offset`` is the batch's last offset (control
    records included, so it can be past the last entry of ``records``)."""

    base_offset: int
    last_offset: int
    epoch: int
    records: Sequence[tuple[int, bytes]]  # (offset, encoded metadata record)


class QuorumListener(Protocol):
    def handle_commit(self, batch: CommittedBatch) -> None: ...

    def handle_load_snapshot(self, end_offset: int, records: Sequence[bytes]) -> None: ...

    def handle_leader_change(self, leader: LeaderAndEpoch) -> None: ...


@dataclass(frozen=True, slots=True)
class ReplicaDescription:
    """One DescribeQuorum row; timestamps are the leader's clock, -1 when unknown."""

    replica_id: int
    log_end_offset: int
    last_fetch_timestamp: int
    last_caught_up_timestamp: int


@dataclass(frozen=True, slots=True)
class QuorumDescription:
    """DescribeQuorum's partition data as the leader sees it (``error`` NOT_LEADER_OR_FOLLOWER
    on any other node)."""

    error: int
    leader_id: int
    leader_epoch: int
    high_watermark: int
    voters: tuple[ReplicaDescription, ...]
    observers: tuple[ReplicaDescription, ...]


class NotLeaderError(Exception):
    """This node does not lead the quorum (any more) in the epoch the caller named."""


class StorageError(Exception):
    """The metadata log could not be written: nothing after it may be acknowledged."""


class MetadataQuorum(Protocol):
    node_id: int

    @property
    def leader(self) -> LeaderAndEpoch: ...

    @property
    def high_watermark(self) -> int: ...

    @property
    def next_offset(self) -> int:
        """The offset the next appended record will get (a broker epoch is one)."""
        ...

    def register_listener(self, listener: QuorumListener) -> None: ...

    def append(self, epoch: int, values: Sequence[bytes]) -> int:
        """Append ``values`` as the leader of ``epoch``; returns the last offset. Raises
        NotLeaderError when this node no longer leads that epoch."""
        ...


Clock = Callable[[], int]


def wall_clock_ms() -> int:
    return int(time.time() * 1000)


class LocalQuorum:
    """The metadata partition with this node as its only voter and leader: appends are
    flushed by a background task (several appends share one fsync), and everything flushed
    is committed and published to the listeners at once.

    If the metadata log cannot be written or flushed, the quorum fails: it resigns (no
    leader), every later append raises StorageError, and nothing after the failure is
    published, so nothing after it is acknowledged.
    """

    def __init__(self, log: PartitionLog, node_id: int, clock: Clock = wall_clock_ms) -> None:
        self.log = log
        self.node_id = node_id
        self.clock = clock
        self.epoch = max(1, log.latest_epoch() or 1)
        self._listeners: list[QuorumListener] = []
        self._published = log.log_start_offset  # next offset to publish
        self._flush_task: asyncio.Task[None] | None = None
        self._flush_again = False
        self.failure: BaseException | None = None

    @property
    def leader(self) -> LeaderAndEpoch:
        if self.failure is not None:
            return LeaderAndEpoch(None, self.epoch + 1)
        return LeaderAndEpoch(self.node_id, self.epoch)

    @property
    def high_watermark(self) -> int:
        return self._published

    @property
    def next_offset(self) -> int:
        return self.log.log_end_offset

    describes_locally = True  # the leader answers DescribeQuorum itself

    def describe(self, now_ms: int) -> QuorumDescription:
        me = ReplicaDescription(self.node_id, self.log.log_end_offset, -1, now_ms)
        leader = self.leader
        return QuorumDescription(
            0,
            leader.leader_id if leader.leader_id is not None else -1,
            leader.epoch,
            self.high_watermark,
            (me,),
            (),
        )

    def register_listener(self, listener: QuorumListener) -> None:
        self._listeners.append(listener)

    def start(self) -> None:
        """Replay the log to the listeners (it is all committed: a quorum of one wrote it),
        then tell them this node leads."""
        self._publish_up_to(self.log.log_end_offset)
        for listener in self._listeners:
            listener.handle_leader_change(self.leader)

    def append(self, epoch: int, values: Sequence[bytes]) -> int:
        if self.failure is not None:
            raise StorageError(f"the metadata log failed: {self.failure}")
        if epoch != self.epoch:
            raise NotLeaderError(f"epoch {epoch} is not the current epoch {self.epoch}")
        now = self.clock()
        batch = build_batch(
            [encode_record(i, 0, None, v) for i, v in enumerate(values)],
            base_timestamp=now,
            max_timestamp=now,
        )
        try:
            result = self.log.append_as_leader(batch, self.epoch, now)
        except (OSError, KafkaError) as exc:
            if isinstance(exc, KafkaError) and exc.code != Errors.KAFKA_STORAGE_ERROR:
                raise
            self._fail(exc)
            raise StorageError(f"the metadata log could not be written: {exc}") from exc
        if self._flush_task is not None and not self._flush_task.done():
            self._flush_again = True
        else:
            try:
                self._flush_task = asyncio.get_running_loop().create_task(self._flush())
            except RuntimeError:  # no loop: a tool writing to a stopped node's log flushes itself
                pass
        return result.last_offset

    async def _flush(self) -> None:
        while True:
            self._flush_again = False
            end = self.log.log_end_offset
            try:
                await asyncio.to_thread(self.log.flush)
            except (OSError, KafkaError) as exc:
                if self._directory_online():
                    # A passing shortage (no file descriptor for the fsync): the records are
                    # written, only not yet durable; nothing is committed until a flush works.
                    log.warning("flushing the metadata log failed, retrying: %s", exc)
                    await asyncio.sleep(_FLUSH_RETRY_S)
                    self._flush_again = True
                    continue
                self._fail(exc)
                return
            self._publish_up_to(end)
            if not self._flush_again:
                return

    def _directory_online(self) -> bool:
        failures = getattr(self.log, "failures", None)
        return failures is not None and not failures.is_offline(self.log.log_dir)

    async def drain(self) -> None:
        """Wait until every append so far is flushed and published (or has failed)."""
        while self._flush_task is not None and not self._flush_task.done():
            await asyncio.shield(self._flush_task)

    def _fail(self, exc: BaseException) -> None:
        if self.failure is None:
            self.failure = exc
            for listener in self._listeners:
                listener.handle_leader_change(self.leader)

    def _publish_up_to(self, end: int) -> None:
        if end <= self._published:
            return
        records = list(self._read(self._published, end))
        batch = CommittedBatch(self._published, end - 1, self.epoch, records)
        self._published = end
        for listener in self._listeners:
            listener.handle_commit(batch)

    def _read(self, start: int, end: int) -> Iterator[tuple[int, bytes]]:
        offset = max(start, self.log.log_start_offset)
        while offset < end:
            chunk = self.log.read(offset, _READ_CHUNK).records
            if not chunk:
                break
            first = offset
            for header, record in iter_records(chunk):
                if first <= record.offset < end and record.value is not None:
                    yield record.offset, record.value
                offset = max(offset, header.next_offset)
