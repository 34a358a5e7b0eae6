"""One partition as this broker sees it: leadership, the ISR, the high watermark, and the
requests waiting on it.

The leader's decisions (follower positions, the HW rule, ISR expansion and shrink, the
AlterPartition in flight) are ``leader_state.LeaderState``'s; this class is the shell around
it: it holds the log, reads the clock, asks the metadata image whether a broker may be in the
ISR, hands ISR updates to the AlterPartition manager, and completes what waits here:

- produces waiting for acks=all, resolved once the HW reaches their last offset + 1
  (NOT_ENOUGH_REPLICAS_AFTER_APPEND when the maximal ISR is then below the effective min ISR);
- long-polling fetches: a follower's wakes on an append (it reads up to the log end), a
  consumer's when the HW moves (it reads up to the HW). Both wake when leadership ends.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

from brook.log.config import LogConfig
from brook.log.log import AppendResult, PartitionLog, ReadResult
from brook.log.txn_verification import VerificationGuard
from brook.metadata import quorum_acks
from brook.metadata.image import BrokerInfo, PartitionInfo
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import leader_change_batch
from brook.protocol.txn_marker import MARKER_BATCH_SIZE, TxnMarker

from .fetch_session import FetchSession, PartitionKey
from .leader_state import FollowerState, IsrUpdate, LeaderState, Reaction

__all__ = ["FollowerState", "Partition"]

DEFAULT_LAG_TIME_MAX_MS = 30_000


def _wall_ms() -> int:
    return int(time.time() * 1000)


log = logging.getLogger(__name__)


def _no_brokers(_: int) -> BrokerInfo | None:
    return None


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
    lag_time_max_ms: int = DEFAULT_LAG_TIME_MAX_MS
    clock: Callable[[], int] = _wall_ms
    # The image's registration of a broker (None: not registered), for ISR eligibility.
    broker: Callable[[int], BrokerInfo | None] = _no_brokers
    # Where ISR updates go (the AlterPartition manager); None leaves them pending.
    submit_isr_update: Callable[[Partition, IsrUpdate], None] | None = None
    # Told of each ISR update of this leader once committed, by the controller's answer or
    # by the image (whichever comes first): Kafka's IsrShrinksPerSec / IsrExpandsPerSec.
    isr_committed: Callable[[IsrUpdate], None] | None = None
    leader_state: LeaderState | None = None
    appended_bytes: int = 0  # monotonic; fetch long-polls measure progress with it
    _ack_waiters: list[_AckWaiter] = field(default_factory=list)
    # Long-polling fetches waiting here; each removes itself when it stops waiting.
    _follower_waiters: set[asyncio.Future[None]] = field(default_factory=set)
    _consumer_waiters: set[asyncio.Future[None]] = field(default_factory=set)
    # Followers' fetch sessions holding this partition (under that key): told when it
    # changes, so that their fetches read only what changed. Weak: an evicted or closed
    # session is forgotten with it.
    _sessions: weakref.WeakKeyDictionary[FetchSession, PartitionKey] = field(
        default_factory=weakref.WeakKeyDictionary
    )

    @property
    def is_leader(self) -> bool:
        return self.leader_id == self.local_id

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        return self.leader_state.maximal_isr if self.leader_state is not None else self.isr

    @property
    def epoch_start_offset(self) -> int:
        """The log end offset when this leader epoch began (-1 when not leading)."""
        return self.leader_state.epoch_start_offset if self.leader_state is not None else -1

    def follower(self, replica: int) -> FollowerState | None:
        return None if self.leader_state is None else self.leader_state.followers.get(replica)

    # ------------------------------------------------------------------ metadata
    def update(self, info: PartitionInfo) -> None:
        """Apply the metadata image's view of this partition (leader, epochs, replicas, ISR)."""
        now = self.clock()
        leads = info.leader == self.local_id
        new_epoch = leads and (not self.is_leader or info.leader_epoch != self.leader_epoch)
        self.leader_id = info.leader
        self.leader_epoch = info.leader_epoch
        self.replicas = info.replicas
        if new_epoch:
            self.high_watermark = min(
                max(self.high_watermark, self.log.log_start_offset), self.log.log_end_offset
            )
            self.partition_epoch = info.partition_epoch
            self.isr = info.isr
            self.leader_state = LeaderState.become_leader(
                local_id=self.local_id,
                leader_epoch=info.leader_epoch,
                partition_epoch=info.partition_epoch,
                replicas=info.replicas,
                isr=info.isr,
                leader_leo=self.log.log_end_offset,
                high_watermark=self.high_watermark,
                min_insync_replicas=self.log.config.min_insync_replicas,
                lag_time_max_ms=self.lag_time_max_ms,
                now_ms=now,
                previous=self.leader_state,
                quorum_required_acks=self.log.config.quorum_required_acks,
            )
            if quorum_acks.enabled(self.log.config.quorum_required_acks):
                self._mark_epoch_start(now)
        elif leads and self.leader_state is not None:
            pending = self.leader_state.pending
            if self.leader_state.update_assignment(
                info.partition_epoch, info.replicas, info.isr, now
            ):
                self.partition_epoch = info.partition_epoch
                self.isr = info.isr
                if pending is not None and tuple(info.isr) == pending.new_isr:
                    self._isr_committed(pending)  # the image told before the answer came
        else:
            self.leader_state = None
            self.partition_epoch = info.partition_epoch
            self.isr = info.isr
        if self.is_leader:
            self.maybe_increment_high_watermark()
        else:
            self._fail_ack_waiters(Errors.NOT_LEADER_OR_FOLLOWER)
        self._wake_all()

    def _mark_epoch_start(self, now_ms: int) -> None:
        """KIP-250: a new leader of a quorum-acks partition writes a LEADER_CHANGE control
        batch at the start of its epoch. Its high watermark commits records of earlier epochs
        only together with one of its own (``quorum_acks.high_watermark``), so without this
        the records it inherited, acknowledged ones included, would stay invisible to
        consumers until a client wrote again."""
        batch = leader_change_batch(
            self.local_id,
            base_offset=self.log.log_end_offset,
            leader_epoch=self.leader_epoch,
            timestamp=now_ms,
        )
        try:
            self.log.append_as_follower(batch)  # built here whole: offsets and epoch are set
        except (KafkaError, OSError) as exc:
            log.warning(
                "%s-%d: the leader epoch marker was not written: %s",
                self.topic,
                self.partition,
                exc,
            )
            return
        self.appended_bytes += len(batch)
        self.notify_appended()

    def update_config(self, config: LogConfig) -> None:
        """The topic's config changed: the log's, and the leader's acks rules
        (``min.insync.replicas``, ``quorum.required.acks``) from now on, as Kafka reads them."""
        self.log.update_config(config)
        state = self.leader_state
        if state is not None:
            state.min_insync_replicas = config.min_insync_replicas
            state.quorum_required_acks = config.quorum_required_acks
            self.maybe_increment_high_watermark()

    # ------------------------------------------------------------------ leader epoch fencing
    def check_leader_epoch(self, requested: int) -> int:
        """Kafka's checkCurrentLeaderEpoch: -1 skips the check."""
        if requested == -1 or requested == self.leader_epoch:
            return Errors.NONE
        if requested < self.leader_epoch:
            return Errors.FENCED_LEADER_EPOCH
        return Errors.UNKNOWN_LEADER_EPOCH

    # ------------------------------------------------------------------ produce
    def append_as_leader(
        self,
        records: bytes,
        required_acks: int,
        now_ms: int,
        verify: bool = False,
        guard: VerificationGuard | None = None,
    ) -> AppendResult:
        """Append as leader. acks=all with the committed ISR below the effective min ISR is
        refused before anything is written (NOT_ENOUGH_REPLICAS); ``verify`` / ``guard``:
        KIP-890's check of a transaction's first batch (``PartitionLog.append_as_leader``)."""
        state = self.leader_state
        if not self.is_leader or state is None:
            raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER)
        if required_acks == -1 and state.under_min_isr:
            raise KafkaError(
                Errors.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {set(state.isr)} is insufficient to satisfy the "
                f"min.isr requirement of {state.effective_min_isr} for partition "
                f"{self.topic}-{self.partition}",
            )
        result = self.log.append_as_leader(records, self.leader_epoch, now_ms, verify, guard)
        if not result.duplicate:
            self.appended_bytes += len(records)
            self.notify_appended()
            self.maybe_increment_high_watermark()
        return result

    def append_marker(self, marker: TxnMarker, now_ms: int) -> AppendResult:
        """Write a transaction marker as leader (WriteTxnMarkers, acks=all as Kafka's
        coordinator asks): refused like an acks=all produce when the ISR is below the
        effective min ISR, then the log's epoch checks."""
        state = self.leader_state
        if not self.is_leader or state is None:
            raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER)
        if state.under_min_isr:
            raise KafkaError(
                Errors.NOT_ENOUGH_REPLICAS,
                f"The size of the current ISR {set(state.isr)} is insufficient to satisfy the "
                f"min.isr requirement of {state.effective_min_isr} for partition "
                f"{self.topic}-{self.partition}",
            )
        result, _ = self.log.append_marker(marker, self.leader_epoch, now_ms)
        self.appended_bytes += MARKER_BATCH_SIZE
        self.notify_appended()
        self.maybe_increment_high_watermark()
        return result

    def wait_for_acks(self, required_offset: int) -> asyncio.Future[None] | None:
        """Resolved once the HW reaches ``required_offset`` (failed with
        NOT_ENOUGH_REPLICAS_AFTER_APPEND if the maximal ISR is then below the effective min
        ISR, NOT_LEADER_OR_FOLLOWER if leadership moves); None if it is done already."""
        if self.high_watermark >= required_offset:
            error = self._acks_error()
            if error == Errors.NONE:
                return None
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            fut.set_exception(KafkaError(error))
            return fut
        fut = asyncio.get_running_loop().create_future()
        self._ack_waiters.append(_AckWaiter(required_offset, fut))
        return fut

    def _acks_error(self) -> int:
        state = self.leader_state
        if not self.is_leader or state is None:
            return Errors.NOT_LEADER_OR_FOLLOWER
        if len(state.maximal_isr) < state.effective_min_isr:
            return Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND
        return Errors.NONE

    # ------------------------------------------------------------------ the leader's rules
    def _eligible(self, replica: int, fetch_epoch: int) -> bool:
        """KIP-841 / KIP-903: registered, unfenced, not shutting down, and the incarnation
        that fetched (when the fetch named one)."""
        broker = self.broker(replica)
        return (
            broker is not None
            and not broker.fenced
            and not broker.in_controlled_shutdown
            and (fetch_epoch == -1 or fetch_epoch == broker.broker_epoch)
        )

    def _local_epoch(self) -> int:
        me = self.broker(self.local_id)
        return -1 if me is None else me.broker_epoch

    def maybe_increment_high_watermark(self) -> bool:
        state = self.leader_state
        if not self.is_leader or state is None:
            return False
        state.high_watermark = max(state.high_watermark, self.high_watermark)
        if not state.maybe_increment_high_watermark(
            self.log.log_end_offset, self.clock(), self._eligible
        ):
            return False
        self.high_watermark = state.high_watermark
        if self._ack_waiters:
            error = self._acks_error()
            still = []
            for waiter in self._ack_waiters:
                if waiter.required_offset <= self.high_watermark:
                    if not waiter.future.done():
                        if error == Errors.NONE:
                            waiter.future.set_result(None)
                        else:
                            waiter.future.set_exception(KafkaError(error))
                else:
                    still.append(waiter)
            self._ack_waiters = still
        self._wake(self._consumer_waiters)
        self._mark_dirty()
        return True

    def record_follower_fetch(
        self, replica: int, fetch_offset: int, log_start_offset: int, broker_epoch: int
    ) -> None:
        """A follower fetched from ``fetch_offset`` (after its read): record its position,
        try to add it to the ISR, move the HW. Raises NOT_LEADER_OR_FOLLOWER for a fetch
        from an incarnation older than the registered one or the last seen."""
        state = self.leader_state
        if not self.is_leader or state is None:
            raise KafkaError(Errors.NOT_LEADER_OR_FOLLOWER)
        registered = self.broker(replica)
        if broker_epoch != -1 and registered is not None and broker_epoch < registered.broker_epoch:
            raise KafkaError(
                Errors.NOT_LEADER_OR_FOLLOWER,
                f"replica {replica} fetched with broker epoch {broker_epoch}, older than the "
                f"registered {registered.broker_epoch}",
            )
        state.record_fetch(
            replica,
            fetch_offset,
            log_start_offset,
            broker_epoch,
            self.log.log_end_offset,
            self.clock(),
        )
        state.local_broker_epoch = self._local_epoch()
        update = state.maybe_expand_isr(replica, self._eligible)
        if update is not None and self.submit_isr_update is not None:
            self.submit_isr_update(self, update)
        self.maybe_increment_high_watermark()

    def maybe_expand_isr_for(self, replica: int) -> IsrUpdate | None:
        """Try adding ``replica`` from what its last fetch said, once the image says it may
        have become eligible (unfenced, registered again). A caught-up follower whose
        incremental fetches name no partition (nothing changed) is not read again until
        new records arrive, and with the ISR below ``min.insync.replicas`` none arrive:
        without this it would wait out of the ISR for good."""
        state = self.leader_state
        if not self.is_leader or state is None or replica not in state.followers:
            return None
        state.local_broker_epoch = self._local_epoch()
        update = state.maybe_expand_isr(replica, self._eligible)
        if update is not None and self.submit_isr_update is not None:
            self.submit_isr_update(self, update)
        return update

    def maybe_shrink_isr(self) -> IsrUpdate | None:
        """Drop ISR members not caught up for ``replica.lag.time.max.ms`` (run every half of
        it by the replica manager)."""
        state = self.leader_state
        if not self.is_leader or state is None:
            return None
        state.local_broker_epoch = self._local_epoch()
        update = state.maybe_shrink_isr(self.log.log_end_offset, self.clock())
        if update is not None and self.submit_isr_update is not None:
            self.submit_isr_update(self, update)
        return update

    def on_isr_reply(
        self,
        update: IsrUpdate,
        error: int,
        *,
        leader_epoch: int = -1,
        partition_epoch: int = -1,
        isr: tuple[int, ...] = (),
    ) -> Reaction:
        """The controller's answer to ``update``."""
        state = self.leader_state
        if not self.is_leader or state is None:
            return Reaction.IGNORED
        reaction = state.on_reply(
            update, error, leader_epoch=leader_epoch, partition_epoch=partition_epoch, isr=isr
        )
        if reaction is Reaction.COMMITTED:
            self.isr = state.isr
            self.partition_epoch = state.partition_epoch
            self._isr_committed(update)
            self.maybe_increment_high_watermark()
        return reaction

    def _isr_committed(self, update: IsrUpdate) -> None:
        if self.isr_committed is not None:
            self.isr_committed(update)

    # ------------------------------------------------------------------ fetch
    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided and its marker replicated
        (Kafka's LSO): what a read_committed consumer may read up to; the HW without any
        undecided transaction."""
        log = self.log
        hw = self.high_watermark
        log.on_high_watermark(hw)
        first_unstable = log.first_unstable_offset()
        return hw if first_unstable is None else min(first_unstable, hw)

    def read(
        self,
        offset: int,
        max_bytes: int,
        *,
        for_follower: bool,
        min_one_batch: bool,
        spans: bool = False,
        read_committed: bool = False,
    ) -> ReadResult:
        if for_follower:
            upper = None
        elif read_committed:
            upper = self.last_stable_offset
        else:
            upper = self.high_watermark
        return self.log.read(offset, max_bytes, upper, min_one_batch, spans)

    def add_data_waiter(self, fut: asyncio.Future[None], *, follower: bool = False) -> None:
        """Complete ``fut`` when there is something new to read (an append for a follower,
        an HW move for a consumer) or leadership ends; one future may wait on many
        partitions. The waiter must call :meth:`remove_data_waiter` when it stops."""
        (self._follower_waiters if follower else self._consumer_waiters).add(fut)

    @property
    def waiting_fetches(self) -> int:
        return len(self._follower_waiters) + len(self._consumer_waiters)

    def remove_data_waiter(self, fut: asyncio.Future[None]) -> None:
        self._follower_waiters.discard(fut)
        self._consumer_waiters.discard(fut)

    @staticmethod
    def _wake(waiters: set[asyncio.Future[None]]) -> None:
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)
            waiters.clear()

    def _wake_all(self) -> None:
        self._wake(self._follower_waiters)
        self._wake(self._consumer_waiters)
        self._mark_dirty()

    def notify_appended(self) -> None:
        """New data past the HW matters to followers: wake their long-polling fetches."""
        self._wake(self._follower_waiters)
        self._mark_dirty()

    def notify_log_start_moved(self) -> None:
        """Retention or DeleteRecords moved the log start: followers' sessions send it."""
        self._mark_dirty()

    def watch(self, session: FetchSession, key: PartitionKey) -> None:
        """A follower's fetch session holds this partition as ``key``: mark it dirty there
        whenever this partition changes (see ``FetchSession.dirty``)."""
        self._sessions[session] = key

    def _mark_dirty(self) -> None:
        if self._sessions:
            for session, key in list(self._sessions.items()):
                session.mark_dirty(key)

    def mark_offline(self) -> None:
        """The log's directory failed: this replica leads nothing any more, and produces
        still waiting for acks=all fail with KAFKA_STORAGE_ERROR instead of being acked."""
        self.leader_id = -1
        self.leader_state = None
        self.close(Errors.KAFKA_STORAGE_ERROR)

    def close(self, code: int = Errors.NOT_LEADER_OR_FOLLOWER) -> None:
        self._fail_ack_waiters(code)
        self._wake_all()

    def _fail_ack_waiters(self, code: int) -> None:
        for waiter in self._ack_waiters:
            if not waiter.future.done():
                waiter.future.set_exception(KafkaError(code))
        self._ack_waiters = []
