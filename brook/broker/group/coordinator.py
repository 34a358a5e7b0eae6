"""The group coordinator's asyncio shell: owns the groups of the ``__consumer_offsets``
partitions this broker leads, parks JoinGroup/SyncGroup requests on futures, runs the groups'
deadlines from one timer task, writes their records and loads them back on leadership.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import logging
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from brook.protocol.batch import CONTROL_BIT, BatchHeader, iter_whole_batches
from brook.protocol.errors import Errors, KafkaError
from brook.protocol.records import Record, batch_records, build_batch, encode_record
from brook.protocol.txn_marker import MarkerFormatError, TxnMarker, read_marker

from ..internal_topic import InternalTopicCreator
from .model import (
    UNKNOWN_MEMBER_ID,
    Action,
    GroupConfig,
    GroupDescription,
    GroupState,
    JoinResult,
    Reply,
    StoreGroup,
    SyncResult,
)
from .offsets_topic import OFFSETS
from .state import Group
from .store import (
    OFFSETS_TOPIC,
    OffsetAndMetadata,
    Replay,
    encode_group_value,
    group_key,
    offset_records,
    partition_for,
)

if TYPE_CHECKING:
    from ..partition import Partition
    from ..server import Broker

log = logging.getLogger(__name__)

TopicPartition = tuple[str, int]

# Kafka's offsets.commit.timeout.ms and offsets.load.buffer.size defaults.
COMMIT_TIMEOUT_MS = 5000
LOAD_BUFFER_BYTES = 5 * 1024 * 1024

# Append errors as a commit reports them (Kafka's maybeConvertOffsetCommitError) ...
_COMMIT_ERRORS = {
    Errors.UNKNOWN_TOPIC_OR_PARTITION: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_LEADER_OR_FOLLOWER: Errors.NOT_COORDINATOR,
    Errors.KAFKA_STORAGE_ERROR: Errors.NOT_COORDINATOR,
    Errors.MESSAGE_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    Errors.RECORD_LIST_TOO_LARGE: Errors.INVALID_COMMIT_OFFSET_SIZE,
    Errors.INVALID_FETCH_SIZE: Errors.INVALID_COMMIT_OFFSET_SIZE,
}
# ... and as a group metadata write reports them (storeGroup).
_STORE_ERRORS = {
    **_COMMIT_ERRORS,
    Errors.REQUEST_TIMED_OUT: Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.MESSAGE_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.RECORD_LIST_TOO_LARGE: Errors.UNKNOWN_SERVER_ERROR,
    Errors.INVALID_FETCH_SIZE: Errors.UNKNOWN_SERVER_ERROR,
}

_NO_GROUP = GroupDescription("", "", "", ())
_DEAD_GROUP = GroupDescription(GroupState.DEAD.value, "", "", ())


def now_ms() -> int:
    return int(time.time() * 1000)


class GroupCoordinator:
    def __init__(self, broker: Broker) -> None:
        cfg = broker.config
        self.broker = broker
        self.config = GroupConfig(
            min_session_timeout_ms=int(cfg["group.min.session.timeout.ms"]),
            max_session_timeout_ms=int(cfg["group.max.session.timeout.ms"]),
            max_size=int(cfg["group.max.size"]),
            initial_rebalance_delay_ms=int(cfg["group.initial.rebalance.delay.ms"]),
        )
        self.retention_ms = int(cfg["offsets.retention.minutes"]) * 60 * 1000
        self.retention_check_ms = int(cfg["offsets.retention.check.interval.ms"])
        self.metadata_max_bytes = int(cfg["offset.metadata.max.bytes"])
        self.groups: dict[str, Group] = {}
        self._owned: set[int] = set()
        self._loading: dict[int, asyncio.Task[None]] = {}
        self._active = False
        self._heap: list[tuple[int, str]] = []
        self._scheduled: dict[str, int] = {}
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._background: set[asyncio.Task[Any]] = set()
        self.offsets_topic = InternalTopicCreator(broker, OFFSETS)

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        self._active = True
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._timer()), loop.create_task(self._retention())]

    async def stop(self) -> None:
        self._active = False
        for task in [*self._tasks, *self._loading.values(), *self._background]:
            task.cancel()
        for task in [*self._tasks, *self._loading.values(), *self._background]:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks = []
        for index in list(self._owned):
            self._unload(index)

    def on_leadership(self, partition: Partition, is_leader: bool) -> None:
        """Replica manager hook: load the groups of an offsets partition this broker now
        leads (again, on a new leader epoch), or drop them when it stops leading it."""
        if partition.topic != OFFSETS_TOPIC:
            return
        index = partition.partition
        self._unload(index)
        if is_leader:
            task = asyncio.get_running_loop().create_task(self._load(partition))
            self._loading[index] = task

    # ------------------------------------------------------------------ placement
    @property
    def num_partitions(self) -> int:
        topic = self.broker.image.topics.get(OFFSETS_TOPIC)
        if topic is not None and topic.partitions:
            return len(topic.partitions)
        return int(self.broker.config["offsets.topic.num.partitions"])

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.num_partitions)

    def group_error(self, group_id: str | None, allow_empty: bool = False) -> int:
        """Kafka's validateGroupStatus: can this broker answer for ``group_id`` now?"""
        if group_id is None or (not group_id and not allow_empty):
            return Errors.INVALID_GROUP_ID
        if not self._active:
            return Errors.COORDINATOR_NOT_AVAILABLE
        index = self.partition_for(group_id)
        if index in self._loading:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS
        if index not in self._owned:
            return Errors.NOT_COORDINATOR
        return Errors.NONE

    async def find_coordinator(self, key: str) -> tuple[int, int]:
        """(error, node id) of the coordinator of group ``key``; creates the offsets topic on
        first use, as Kafka does."""
        if not await self.offsets_topic.ensure():
            return Errors.COORDINATOR_NOT_AVAILABLE, -1
        info = self.broker.image.partition(OFFSETS_TOPIC, self.partition_for(key))
        if info is None or info.leader < 0:
            return Errors.COORDINATOR_NOT_AVAILABLE, -1
        return Errors.NONE, info.leader

    # ------------------------------------------------------------------ membership
    async def join_group(
        self,
        group_id: str,
        *,
        member_id: str,
        group_instance_id: str | None,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: Sequence[tuple[str, bytes]],
        require_known_member_id: bool,
        support_skip_assignment: bool,
    ) -> JoinResult:
        error = self.group_error(group_id)
        if error:
            return JoinResult(error, member_id)
        now = now_ms()
        group = self.groups.get(group_id)
        if group is None:
            if member_id != UNKNOWN_MEMBER_ID:
                return JoinResult(Errors.UNKNOWN_MEMBER_ID, member_id)
            group = self._new_group(group_id, now)
        waiter: asyncio.Future[JoinResult] = asyncio.get_running_loop().create_future()
        actions = group.join(
            waiter,
            member_id=member_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            client_host=client_host,
            session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            require_known_member_id=require_known_member_id,
            support_skip_assignment=support_skip_assignment,
            now_ms=now,
        )
        self._run(group, actions)
        return await waiter

    async def sync_group(
        self,
        group_id: str,
        *,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: Mapping[str, bytes],
    ) -> SyncResult:
        error = self.group_error(group_id)
        if error == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            # The rebalance this sync belongs to was lost with the old coordinator: rejoin.
            # (Old clients do not expect COORDINATOR_LOAD_IN_PROGRESS here.)
            return SyncResult(Errors.REBALANCE_IN_PROGRESS)
        if error:
            return SyncResult(error)
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(Errors.UNKNOWN_MEMBER_ID)
        waiter: asyncio.Future[SyncResult] = asyncio.get_running_loop().create_future()
        actions = group.sync(
            waiter,
            member_id=member_id,
            group_instance_id=group_instance_id,
            generation_id=generation_id,
            protocol_type=protocol_type,
            protocol_name=protocol_name,
            assignments=assignments,
            now_ms=now_ms(),
        )
        self._run(group, actions)
        return await waiter

    def heartbeat(
        self, group_id: str, *, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        error = self.group_error(group_id)
        if error == Errors.COORDINATOR_LOAD_IN_PROGRESS:
            return Errors.NONE  # Kafka answers blindly while the group is loading
        if error:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return Errors.UNKNOWN_MEMBER_ID
        error = group.heartbeat(
            member_id=member_id,
            group_instance_id=group_instance_id,
            generation_id=generation_id,
            now_ms=now_ms(),
        )
        self._schedule(group)
        return error

    def leave_group(
        self, group_id: str, members: Sequence[tuple[str, str | None]]
    ) -> tuple[int, list[int]]:
        """(top-level error, one error per member)."""
        error = self.group_error(group_id)
        if error:
            return error, []
        group = self.groups.get(group_id)
        if group is None:
            return Errors.NONE, [Errors.UNKNOWN_MEMBER_ID] * len(members)
        top, errors, actions = group.leave(members, now_ms())
        self._run(group, actions)
        return top, errors

    # ------------------------------------------------------------------ offsets
    async def commit_offsets(
        self,
        group_id: str,
        *,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, tuple[int, int, str | None]],
        retention_time_ms: int = -1,
        unknown_group_error: int = Errors.ILLEGAL_GENERATION,
    ) -> dict[TopicPartition, int]:
        """Commit (offset, leader epoch, metadata) per partition; returns an error for each."""
        error = self.group_error(group_id, allow_empty=True)
        if error:
            return dict.fromkeys(offsets, error)
        now = now_ms()
        group = self.groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                return dict.fromkeys(offsets, unknown_group_error)
            # A consumer that assigns partitions itself: the group exists for its offsets only.
            group = self._new_group(group_id, now)
        error = group.validate_offset_commit(
            member_id=member_id,
            group_instance_id=group_instance_id,
            generation_id=generation_id,
            now_ms=now,
        )
        self._schedule(group)
        if error:
            return dict.fromkeys(offsets, error)
        expire = now + retention_time_ms if retention_time_ms != -1 else None
        return await self._commit(group_id, group, offsets, now, expire)

    async def commit_txn_offsets(
        self,
        group_id: str,
        *,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartition, tuple[int, int, str | None]],
    ) -> dict[TopicPartition, int]:
        """TxnOffsetCommit: the offsets are written as a transactional batch of the producer
        and held until its transaction's marker reaches this partition (``complete_txn``)."""
        error = self.group_error(group_id, allow_empty=True)
        if error:
            return dict.fromkeys(offsets, error)
        now = now_ms()
        group = self.groups.get(group_id)
        if group is None:
            group = self._new_group(group_id, now)
        if generation_id >= 0 or member_id != UNKNOWN_MEMBER_ID or group_instance_id is not None:
            error = group.validate_offset_commit(
                member_id=member_id,
                group_instance_id=group_instance_id,
                generation_id=generation_id,
                now_ms=now,
            )
            if error:
                return dict.fromkeys(offsets, error)
        return await self._commit(
            group_id, group, offsets, now, None, producer=(producer_id, producer_epoch)
        )

    async def _commit(
        self,
        group_id: str,
        group: Group,
        offsets: Mapping[TopicPartition, tuple[int, int, str | None]],
        now: int,
        expire: int | None,
        producer: tuple[int, int] | None = None,
    ) -> dict[TopicPartition, int]:
        """Write the offsets whose metadata fits (OFFSET_METADATA_TOO_LARGE for the others);
        an error for each partition."""
        results: dict[TopicPartition, int] = {}
        to_write: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp, (offset, leader_epoch, metadata) in offsets.items():
            if metadata is not None and len(metadata) > self.metadata_max_bytes:
                results[tp] = Errors.OFFSET_METADATA_TOO_LARGE
                continue
            to_write[tp] = OffsetAndMetadata(offset, leader_epoch, metadata or "", now, expire)
            results[tp] = Errors.NONE
        if to_write:
            error = await self._write_offsets(group_id, group, to_write, producer)
            if error:
                results.update(dict.fromkeys(to_write, error))
        return results

    async def _write_offsets(
        self,
        group_id: str,
        group: Group,
        offsets: dict[TopicPartition, OffsetAndMetadata],
        producer: tuple[int, int] | None = None,
    ) -> int:
        """Write a commit's offsets and apply the outcome to the group (held for the
        transaction of ``producer``, if given) in a task of its own; the error. A client that
        disconnects cancels its request's handler, and a commit already in the log must still
        be applied (else OffsetFetch answers the previous offset until the next reload, and a
        transaction's marker finds nothing to apply)."""

        async def write() -> int:
            group.offsets.begin_commit(offsets)
            error, first = await self._append(
                self.partition_for(group_id),
                offset_records(group_id, offsets),
                _COMMIT_ERRORS,
                producer=producer,
            )
            position = None if error else first
            if producer is None:
                group.offsets.end_commit(offsets, position)
            else:
                group.offsets.end_txn_commit(producer[0], offsets, position)
            return error

        return await asyncio.shield(self._spawn(write()))

    def has_pending_txn(self, group_id: str, tp: TopicPartition) -> bool:
        """KIP-447: whether an undecided transaction committed an offset of ``tp``."""
        group = self.groups.get(group_id)
        return group is not None and group.offsets.has_pending_txn(tp)

    def complete_txn(self, index: int, producer_id: int, commit: bool) -> None:
        """A transaction marker of ``producer_id`` reached ``__consumer_offsets-index``: the
        offsets its groups there hold for it are applied (COMMIT) or dropped (ABORT)."""
        if index not in self._owned:
            return
        for group_id, group in self.groups.items():
            if self.partition_for(group_id) == index:
                group.offsets.complete_txn(producer_id, commit)

    def fetch_offsets(
        self, group_id: str, partitions: Iterable[TopicPartition] | None
    ) -> tuple[int, list[tuple[TopicPartition, OffsetAndMetadata | None]]]:
        """(error, committed offset or None per partition); every committed one when
        ``partitions`` is None."""
        error = self.group_error(group_id, allow_empty=True)
        if error:
            return error, []
        group = self.groups.get(group_id)
        if group is not None and group.state is GroupState.DEAD:
            group = None
        if partitions is None:
            return Errors.NONE, sorted(group.offsets.items()) if group is not None else []
        return Errors.NONE, [
            (tp, group.offsets.get(tp) if group is not None else None) for tp in partitions
        ]

    async def delete_offsets(
        self, group_id: str, partitions: Sequence[TopicPartition]
    ) -> tuple[int, dict[TopicPartition, int]]:
        error = self.group_error(group_id)
        if error:
            return error, {}
        group = self.groups.get(group_id)
        if group is None:
            return Errors.GROUP_ID_NOT_FOUND, {}
        error, per_partition = group.offset_delete_errors(partitions)
        if error:
            return error, {}
        removable = [tp for tp, e in per_partition.items() if e == Errors.NONE]
        removed = group.offsets.remove(removable)
        if removed:
            await self._append(
                self.partition_for(group_id),
                offset_records(group_id, dict.fromkeys(removed)),
                _COMMIT_ERRORS,
            )
        return Errors.NONE, per_partition

    # ------------------------------------------------------------------ admin
    def list_groups(
        self, states: Iterable[str] = (), types: Iterable[str] = ()
    ) -> tuple[int, list[tuple[str, str, str]]]:
        """(error, [(group id, protocol type, state)]); LOAD_IN_PROGRESS still lists the rest."""
        if not self._active:
            return Errors.COORDINATOR_NOT_AVAILABLE, []
        wanted_states = {s.lower() for s in states}
        wanted_types = {t.lower() for t in types}
        if wanted_types and "classic" not in wanted_types:
            groups: list[tuple[str, str, str]] = []
        else:
            groups = [
                (gid, g.protocol_type or "", g.state.value)
                for gid, g in self.groups.items()
                if g.state is not GroupState.DEAD
                and (not wanted_states or g.state.value.lower() in wanted_states)
            ]
        error = Errors.COORDINATOR_LOAD_IN_PROGRESS if self._loading else Errors.NONE
        return error, groups

    def describe_group(self, group_id: str) -> tuple[int, GroupDescription]:
        error = self.group_error(group_id, allow_empty=True)
        if error:
            return error, _NO_GROUP
        group = self.groups.get(group_id)
        if group is None:
            return Errors.NONE, _DEAD_GROUP
        return Errors.NONE, group.describe()

    async def delete_groups(self, group_ids: Sequence[str]) -> dict[str, int]:
        results: dict[str, int] = {}
        now = now_ms()
        for group_id in group_ids:
            error = self.group_error(group_id, allow_empty=True)
            group = self.groups.get(group_id) if not error else None
            if error:
                results[group_id] = error
            elif group is None:
                results[group_id] = Errors.GROUP_ID_NOT_FOUND
            else:
                results[group_id] = group.delete(now)
                if results[group_id] == Errors.NONE:
                    removed = group.offsets.remove([tp for tp, _ in list(group.offsets.items())])
                    await self._forget(group, removed)
        return results

    # ------------------------------------------------------------------ the shell
    def _new_group(self, group_id: str, now: int) -> Group:
        group = Group.create(group_id, self.config, now)
        self.groups[group_id] = group
        return group

    def _run(self, group: Group, actions: Sequence[Action]) -> None:
        for action in actions:
            if isinstance(action, Reply):
                waiter = action.waiter
                if isinstance(waiter, asyncio.Future) and not waiter.done():
                    waiter.set_result(action.result)
            elif isinstance(action, StoreGroup):
                self._spawn(self._store_group(group, action))
        self._schedule(group)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        """Run ``coro`` in a task of its own, which stopping the coordinator cancels and a
        request's cancellation does not."""
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    async def _store_group(self, group: Group, action: StoreGroup) -> None:
        error, _ = await self._append(
            self.partition_for(group.group_id),
            [(group_key(group.group_id), encode_group_value(action.value))],
            _STORE_ERRORS,
        )
        if error:
            log.warning("writing the metadata of group %s failed: error %d", group.group_id, error)
        self._run(group, group.stored(action, error, now_ms()))

    async def _forget(self, group: Group, removed: Sequence[TopicPartition]) -> None:
        """Drop a Dead group and write tombstones for it and its offsets."""
        if self.groups.get(group.group_id) is group:
            del self.groups[group.group_id]
        records = offset_records(group.group_id, dict.fromkeys(removed))
        records.append((group_key(group.group_id), None))
        await self._append(self.partition_for(group.group_id), records, _COMMIT_ERRORS)

    async def _append(
        self,
        index: int,
        records: Sequence[tuple[bytes, bytes | None]],
        errors: Mapping[int, int],
        producer: tuple[int, int] | None = None,
    ) -> tuple[int, int]:
        """Append one batch to ``__consumer_offsets-index`` and wait until every in-sync
        replica has it; returns (group-level error, offset of the first record)."""
        rm = self.broker.replica_manager
        partition, error = rm.leader_partition(OFFSETS_TOPIC, index)
        if partition is None:
            return errors.get(error, error), -1
        now = now_ms()
        transactional: dict[str, Any] = {}
        if producer is not None:
            # A transactional batch of the producer (TxnOffsetCommit), its sequence following
            # what this partition last got from it.
            pid, epoch = producer
            entry = partition.log.producer_state.last_entry(pid)
            seq = entry.last_seq + 1 if entry is not None and entry.epoch == epoch else 0
            transactional = {
                "producer_id": pid,
                "producer_epoch": epoch,
                "base_sequence": max(seq, 0),
                "transactional": True,
            }
        batch = build_batch(
            [encode_record(i, 0, key, value) for i, (key, value) in enumerate(records)],
            base_timestamp=now,
            max_timestamp=now,
            **transactional,
        )
        try:
            result = partition.append_as_leader(batch, -1, now)
        except KafkaError as exc:
            return errors.get(exc.code, exc.code), -1
        plog = partition.log
        if plog.unflushed_messages() >= plog.config.flush_messages:
            try:
                await asyncio.to_thread(plog.flush)
            except KafkaError as exc:  # KAFKA_STORAGE_ERROR: its directory went offline
                return errors.get(exc.code, exc.code), -1
        waiter = partition.wait_for_acks(result.last_offset + 1)
        if waiter is not None:
            try:
                await asyncio.wait_for(waiter, COMMIT_TIMEOUT_MS / 1000)
            except TimeoutError:
                return errors.get(Errors.REQUEST_TIMED_OUT, Errors.REQUEST_TIMED_OUT), -1
            except KafkaError as exc:
                return errors.get(exc.code, exc.code), -1
        return Errors.NONE, result.first_offset

    def _schedule(self, group: Group) -> None:
        deadline = group.next_deadline()
        if deadline is None or self._scheduled.get(group.group_id) == deadline:
            return
        self._scheduled[group.group_id] = deadline
        earliest = self._heap[0][0] if self._heap else None
        heapq.heappush(self._heap, (deadline, group.group_id))
        if earliest is None or deadline < earliest:
            self._wake.set()

    async def _timer(self) -> None:
        """Run each group's deadlines (sessions, join and sync phases) when they come due."""
        while True:
            now = now_ms()
            while self._heap and self._heap[0][0] <= now:
                deadline, group_id = heapq.heappop(self._heap)
                if self._scheduled.get(group_id) == deadline:
                    del self._scheduled[group_id]
                group = self.groups.get(group_id)
                if group is not None:
                    try:
                        self._run(group, group.tick(now))
                    except Exception:
                        log.exception("group %s: deadline handling failed", group_id)
            wait = (self._heap[0][0] - now) / 1000 if self._heap else 1.0
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), min(max(wait, 0.0), 1.0))

    async def _retention(self) -> None:
        while True:
            await asyncio.sleep(self.retention_check_ms / 1000)
            try:
                await self.expire_offsets(now_ms())
            except Exception:
                log.exception("offset expiration failed")

    async def expire_offsets(self, now: int) -> int:
        """Remove offsets past ``offsets.retention.minutes`` and Empty groups left with none."""
        count = 0
        for group in list(self.groups.values()):
            if self.groups.get(group.group_id) is not group:
                continue  # unloaded or deleted while an earlier write was in flight
            expired = group.expire_offsets(now, self.retention_ms)
            count += len(expired)
            if group.expire_if_empty(now):
                await self._forget(group, expired)
            elif expired:
                await self._append(
                    self.partition_for(group.group_id),
                    offset_records(group.group_id, dict.fromkeys(expired)),
                    _COMMIT_ERRORS,
                )
        if count:
            log.info("removed %d expired offsets", count)
        return count

    # ------------------------------------------------------------------ loading
    async def _load(self, partition: Partition) -> None:
        index = partition.partition
        started = time.monotonic()
        try:
            replay = Replay()
            held: dict[int, list[Record]] = {}  # open transactions' offset records, by producer
            plog = partition.log
            offset = plog.log_start_offset
            end = plog.log_end_offset
            while offset < end:
                data = plog.read(offset, LOAD_BUFFER_BYTES, None, True).records
                advanced = offset
                for header, marker, records in _batches(bytes(data)):
                    if marker is not None:
                        # a transaction ended: its offsets count from here on (COMMIT)
                        for record in held.pop(header.producer_id, []) if marker.commit else []:
                            replay.apply(record.key, record.value, record.offset, newer_only=True)
                        held.pop(header.producer_id, None)
                    elif header.is_transactional:
                        held.setdefault(header.producer_id, []).extend(records)
                    else:
                        for record in records:
                            replay.apply(record.key, record.value, record.offset)
                    advanced = header.last_offset + 1
                if advanced == offset:
                    break
                offset = advanced
                await asyncio.sleep(0)  # a large partition must not stall the event loop
            now = now_ms()
            loaded: list[Group] = []
            pending = {pid: replay.open_txn_offsets(records) for pid, records in held.items()}
            for group_id in replay.group_ids(pending.values()):
                value = replay.groups.get(group_id)
                if value is not None:
                    group = Group.from_metadata(group_id, self.config, value, now)
                else:
                    group = Group.create(group_id, self.config, now)
                for tp, (committed, position) in replay.offsets.get(group_id, {}).items():
                    group.offsets.apply(tp, committed, position)
                for pid, by_group in pending.items():
                    for tp, (committed, position) in by_group.get(group_id, {}).items():
                        group.offsets.begin_commit([tp])
                        group.offsets.end_txn_commit(pid, {tp: committed}, position)
                self.groups[group_id] = group
                loaded.append(group)
            self._owned.add(index)
            for group in loaded:
                self._run(group, group.on_loaded(now))
            log.info(
                "loaded %d group(s) of %s-%d in %.0f ms",
                len(loaded),
                OFFSETS_TOPIC,
                index,
                (time.monotonic() - started) * 1000,
            )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("loading %s-%d failed", OFFSETS_TOPIC, index)
        finally:
            if self._loading.get(index) is asyncio.current_task():
                del self._loading[index]

    def _unload(self, index: int) -> None:
        task = self._loading.pop(index, None)
        if task is not None:
            task.cancel()
        if index not in self._owned:
            return
        self._owned.discard(index)
        now = now_ms()
        for group_id, group in list(self.groups.items()):
            if self.partition_for(group_id) == index:
                del self.groups[group_id]
                self._run(group, group.unload(now))
        log.info("unloaded the groups of %s-%d", OFFSETS_TOPIC, index)


def _batches(buf: bytes) -> Iterator[tuple[BatchHeader, TxnMarker | None, list[Record]]]:
    """(header, what a transaction marker says, records) of each whole batch in ``buf``;
    control batches have no records (a transaction marker's is read into its marker)."""
    for pos, header in iter_whole_batches(buf, _corrupt):
        marker = None
        records: list[Record] = []
        if not header.attributes & CONTROL_BIT:
            records = batch_records(buf, pos, header)
        elif header.is_transactional:
            try:
                marker = read_marker(buf[pos : pos + header.size])
            except MarkerFormatError:
                log.warning("skipping a malformed marker in %s", OFFSETS_TOPIC)
        yield header, marker, records


def _corrupt(exc: Exception) -> None:
    log.warning("skipping a corrupt batch in %s: %s", OFFSETS_TOPIC, exc)
