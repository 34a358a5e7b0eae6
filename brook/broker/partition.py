"""One partition as this broker sees it: leadership, ISR, the high watermark, and waiters.

The high watermark is kept apart from the log end offset: it is the smallest log end offset
among the in-sync replicas (the leader included). With one replica it follows the log end
offset.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

from brook.log.log import AppendResult, PartitionLog, ReadResult
from brook.metadata.image import PartitionInfo
from brook.protocol.errors import Errors, KafkaError


@dataclass
class ReplicaState:
    """What the leader knows of a follower, learned from its fetches."""

    log_end_offset: int = -1
    last_caught_up_ms: int = 0
    last_fetch_ms: int = 0


@dataclass
class _AckWaiter:
    required_offset: int
    future: asyncio.Future[None]


@dataclass
class Partition:
    topic: str
    partition: int
    topic_id: uuid.UUID
    local_id: int
    log: PartitionLog
    leader_id: int = -1
    leader_epoch: int = -1
    partition_epoch: int = -1
    replicas: tuple[int, ...] = ()
    isr: tuple[int, ...] = ()
    high_watermark: int = 0
    followers: dict[int, ReplicaState] = field(default_factory=dict)
    appended_bytes: int = 0  # monotonic; fetch long-polls measure progress with it
    _ack_waiters: list[_AckWaiter] = field(default_factory=list)
    # Long-polling fetches waiting for data here; each removes itself when it stops waiting.
    _data_waiters: set[asyncio.Future[None]] = field(default_factory=set)

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    def update(self, info: PartitionInfo) -> None:
        """Apply the metadata image's view of this partition (leader, epoch, replicas, ISR)."""
        became_leader = info.leader == self.local_id and (
            not self.is_leader or info.leader_epoch != self.leader_epoch
        )
        self.leader_id = info.leader
        self.leader_epoch = info.leader_epoch
        self.partition_epoch = info.partition_epoch
        self.replicas = info.replicas
        self.isr = info.isr
        for replica in info.replicas:
            if replica != self.local_id:
                self.followers.setdefault(replica, ReplicaState())
        for gone in [r for r in self.followers if r not in info.replicas]:
            del self.followers[gone]
        if became_leader:
            self.high_watermark = min(
                max(self.high_watermark, self.log.log_start_offset), self.log.log_end_offset
            )
        if self.is_leader:
            self.maybe_increment_high_watermark()
        else:
            self._fail_ack_waiters(Errors.NOT_LEADER_OR_FOLLOWER)
        self._wake_fetchers()

    # ------------------------------------------------------------------ leader epoch fencing
    def check_leader_epoch(self, requested: int) -> int:
        """Kafka's checkCurrentLeaderEpoch: -1 skips the check."""
        if requested == -1 or requested == self.leader_epoch:
            return Errors.NONE
        if requested < self.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        return Errors.UNKNOWN_LEADER_EPOCH

    # ------------------------------------------------------------------ produce
    def append_as_leader(self, records: bytes, required_acks: int, now_ms: int) -> AppendResult:
        if not self.is_leader:
            raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER)
        min_isr = self.log.config.min_insync_replicas
        if required_acks == -1 and len(self.isr) < min_isr:
            raise KafkaError(
                Errors.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {set(self.isr)} is insufficient to satisfy the "
                f"min.isr requirement of {min_isr} for partition {self.topic}-{self.partition}",
            )
        result = self.log.append_as_leader(records, self.leader_epoch, now_ms)
        if not result.duplicate:
            self.appended_bytes += len(records)
            self.maybe_increment_high_watermark()
        return result

    def wait_for_acks(self, required_offset: int) -> asyncio.Future[None] | None:
        """Resolved once the high watermark reaches ``required_offset``; None if it has."""
        if self.high_watermark >= required_offset:
            return None
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._ack_waiters.append(_AckWaiter(required_offset, fut))
        return fut

    def maybe_increment_high_watermark(self) -> bool:
        if not self.is_leader:
            return False
        candidate = self.log.log_end_offset
        for replica in self.isr:
            if replica != self.local_id:
                state = self.followers.get(replica)
                candidate = min(candidate, state.log_end_offset if state else -1)
        if candidate <= self.high_watermark:
            return False
        self.high_watermark = candidate
        if self._ack_waiters:
            still = []
            for waiter in self._ack_waiters:
                if waiter.required_offset <= candidate:
                    if not waiter.future.done():
                        waiter.future.set_result(None)
                else:
                    still.append(waiter)
            self._ack_waiters = still
        self._wake_fetchers()
        return True

    def _fail_ack_waiters(self, code: int) -> None:
        for waiter in self._ack_waiters:
            if not waiter.future.done():
                waiter.future.set_exception(KafkaError(code))
        self._ack_waiters = []

    # ------------------------------------------------------------------ fetch
    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        for_follower: bool,
        min_one_batch: bool,
        spans: bool = False,
    ) -> ReadResult:
        upper = None if for_follower else self.high_watermark
        return self.log.read(offset, max_bytes, upper, min_one_batch, spans)

    def add_data_waiter(self, fut: asyncio.Future[None]) -> None:
        """Complete ``fut`` when data is appended (or leadership ends); one future may wait on
        many partitions. The waiter must call :meth:`remove_data_waiter` when it stops."""
        self._data_waiters.add(fut)

    def remove_data_waiter(self, fut: asyncio.Future[None]) -> None:
        self._data_waiters.discard(fut)

    def _wake_fetchers(self) -> None:
        if self._data_waiters:
            for fut in self._data_waiters:
                if not fut.done():
                    fut.set_result(None)
            self._data_waiters.clear()

    def notify_appended(self) -> None:
        """New data past the HW matters to followers; wake long-polling fetchers."""
        self._wake_fetchers()

    def mark_offline(self) -> None:
        """The log's directory failed: this replica leads nothing any more, and produces
        still waiting for acks=all fail with KAFKA_STORAGE_ERROR instead of being acked."""
        self.leader_id = -1
        self.close(Errors.KAFKA_STORAGE_ERROR)

    def close(self, code: int = Errors.NOT_LEADER_OR_FOLLOWER) -> None:
        self._fail_ack_waiters(code)
        self._wake_fetchers()
