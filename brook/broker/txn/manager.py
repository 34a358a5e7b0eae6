"""Which transactional ids this node coordinates, as plain state (Kafka's
TransactionStateManager without its I/O): the ``__transaction_state`` partitions it leads and
under which coordinator epoch, those still loading, the entries of each; the requests routed
to the right entry with Kafka's NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS /
INVALID_PRODUCER_ID_MAPPING first; the ids to abort or expire at a given time;
DescribeTransactions and ListTransactions. The coordinator's shell (still to be written, see
docs/design.md "Transactions") feeds it leadership changes and loaded partitions and carries
out the writes it is asked for.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field

from brook.broker.group.store import partition_for
from brook.protocol.errors import Errors

from .loading import Completion, LoadedPartition
from .state import (
    Decision,
    TopicPartition,
    TxnConfig,
    TxnEntry,
    TxnMetadata,
    TxnState,
    check_init_request,
    new_entry,
)
from .verification import verify_partitions


@dataclass(frozen=True, slots=True)
class Routed:
    """A request's answer with where its write must go: the ``__transaction_state`` partition
    and the coordinator epoch the write is valid under."""

    decision: Decision
    partition: int = -1
    coordinator_epoch: int = -1


@dataclass
class _Owned:
    coordinator_epoch: int
    loading: bool = True
    entries: dict[str, TxnEntry] = field(default_factory=dict)


class TxnStateManager:
    def __init__(self, num_partitions: int, config: TxnConfig) -> None:
        self.num_partitions = num_partitions
        self.config = config
        self._owned: dict[int, _Owned] = {}

    def partition_for(self, transactional_id: str) -> int:
        """Kafka's ``abs(hashCode) % transaction.state.log.num.partitions``."""
        return partition_for(transactional_id, self.num_partitions)

    # -------------------------------------------------------------- leadership
    def begin_loading(self, partition: int, coordinator_epoch: int) -> None:
        """This node leads ``partition`` from ``coordinator_epoch`` on (its leader epoch):
        requests for its ids wait (COORDINATOR_LOAD_IN_PROGRESS) until it is loaded."""
        self._owned[partition] = _Owned(coordinator_epoch)

    def finish_loading(self, partition: int, loaded: LoadedPartition) -> list[Completion]:
        """The partition's records are read: serve its ids, and return the decided
        transactions to finish. A load for an epoch no longer current is dropped."""
        owned = self._owned.get(partition)
        if owned is None or owned.coordinator_epoch != loaded.coordinator_epoch:
            return []
        owned.entries = loaded.entries
        owned.loading = False
        return list(loaded.completions)

    def unload(self, partition: int, coordinator_epoch: int | None = None) -> None:
        """Leadership of ``partition`` ended (at ``coordinator_epoch``, if known): forget it."""
        owned = self._owned.get(partition)
        if owned is not None and (
            coordinator_epoch is None or owned.coordinator_epoch <= coordinator_epoch
        ):
            del self._owned[partition]

    def coordinator_epoch(self, partition: int) -> int | None:
        owned = self._owned.get(partition)
        return None if owned is None else owned.coordinator_epoch

    # -------------------------------------------------------------- requests
    def _owner(self, transactional_id: str) -> tuple[Errors, int, _Owned | None]:
        partition = self.partition_for(transactional_id)
        owned = self._owned.get(partition)
        if owned is None:
            return Errors.NOT_COORDINATOR, partition, None
        if owned.loading:
            return Errors.COORDINATOR_LOAD_IN_PROGRESS, partition, None
        return Errors.NONE, partition, owned

    def init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        now_ms: int,
        allocate_producer_id: Callable[[], int],
    ) -> Routed:
        """InitProducerId with a transactional id: Kafka's request checks, then the id's
        entry (created with a new producer id the first time)."""
        error = check_init_request(transactional_id, timeout_ms, self.config)
        if error != Errors.NONE:
            return Routed(Decision(error))
        error, partition, owned = self._owner(transactional_id)
        if owned is None:
            return Routed(Decision(error))
        entry = owned.entries.get(transactional_id)
        if entry is None:
            entry = new_entry(transactional_id, allocate_producer_id(), timeout_ms, now_ms)
            owned.entries[transactional_id] = entry
        decision = entry.init_producer_id(timeout_ms, expected, now_ms, allocate_producer_id)
        return Routed(decision, partition, owned.coordinator_epoch)

    def add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
    ) -> Routed:
        """AddPartitionsToTxn, and AddOffsetsToTxn with the group's offsets partition."""
        return self._with_entry(
            transactional_id,
            lambda e: e.add_partitions(producer_id, producer_epoch, partitions, now_ms),
        )

    def end_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        now_ms: int,
    ) -> Routed:
        return self._with_entry(
            transactional_id, lambda e: e.end_txn(producer_id, producer_epoch, commit, now_ms)
        )

    def _with_entry(self, transactional_id: str, ask: Callable[[TxnEntry], Decision]) -> Routed:
        if not transactional_id:
            return Routed(Decision(Errors.INVALID_REQUEST))
        error, partition, owned = self._owner(transactional_id)
        if owned is None:
            return Routed(Decision(error))
        entry = owned.entries.get(transactional_id)
        if entry is None:
            return Routed(Decision(Errors.INVALID_PRODUCER_ID_MAPPING))
        return Routed(ask(entry), partition, owned.coordinator_epoch)

    def verify_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
    ) -> dict[TopicPartition, Errors]:
        """AddPartitionsToTxn VerifyOnly (KIP-890): whether each partition is in the ongoing
        transaction (``verification.verify_partitions``), after the routing errors."""
        wanted = list(partitions)
        if not transactional_id:
            return dict.fromkeys(wanted, Errors.INVALID_REQUEST)
        error, _, owned = self._owner(transactional_id)
        if owned is None:
            return dict.fromkeys(wanted, error)
        entry = owned.entries.get(transactional_id)
        meta = None if entry is None else entry.meta
        return verify_partitions(meta, producer_id, producer_epoch, wanted)

    def entry(self, transactional_id: str) -> TxnEntry | None:
        _, _, owned = self._owner(transactional_id)
        return None if owned is None else owned.entries.get(transactional_id)

    def write_done(
        self, transactional_id: str, coordinator_epoch: int, target: TxnMetadata, ok: bool
    ) -> Errors:
        """A write's outcome. The partition may have moved meanwhile: then the client gets
        NOT_COORDINATOR (the entry went with it). A Dead target removes the id."""
        partition = self.partition_for(transactional_id)
        owned = self._owned.get(partition)
        if owned is None or owned.coordinator_epoch != coordinator_epoch or owned.loading:
            return Errors.NOT_COORDINATOR
        entry = owned.entries.get(transactional_id)
        if entry is None or entry.pending != target:
            return Errors.NOT_COORDINATOR
        if not ok:
            entry.write_failed(target)
            return Errors.NONE
        entry.complete(target)
        if target.state == TxnState.DEAD:
            del owned.entries[transactional_id]
        return Errors.NONE

    # -------------------------------------------------------------- timers
    def _entries(self) -> Iterator[tuple[int, int, TxnEntry]]:
        for partition, owned in self._owned.items():
            if not owned.loading:
                for entry in owned.entries.values():
                    yield partition, owned.coordinator_epoch, entry

    def abort_timed_out(self, now_ms: int) -> list[tuple[str, Routed]]:
        """Every Ongoing transaction past its timeout, aborted under a bumped epoch."""
        out = []
        for partition, epoch, entry in list(self._entries()):
            decision = entry.abort_if_timed_out(now_ms)
            if decision is not None:
                out.append((entry.transactional_id, Routed(decision, partition, epoch)))
        return out

    def expire_ids(self, now_ms: int) -> list[tuple[str, Routed]]:
        """Every id idle past ``transactional.id.expiration.ms``: a tombstone to write."""
        out = []
        for partition, epoch, entry in list(self._entries()):
            dead = entry.expire(now_ms, self.config.id_expiration_ms)
            if dead is not None:
                out.append(
                    (entry.transactional_id, Routed(Decision(Errors.NONE, dead), partition, epoch))
                )
        return out

    # -------------------------------------------------------------- describing
    def describe(self, transactional_id: str) -> tuple[Errors, TxnMetadata | None]:
        """DescribeTransactions for one id: TRANSACTIONAL_ID_NOT_FOUND for an unknown (or
        expiring) one."""
        if not transactional_id:
            return Errors.INVALID_REQUEST, None
        error, _, owned = self._owner(transactional_id)
        if owned is None:
            return error, None
        entry = owned.entries.get(transactional_id)
        if (
            entry is None
            or entry.state == TxnState.DEAD
            or (entry.pending is not None and entry.pending.state == TxnState.DEAD)
        ):
            return Errors.TRANSACTIONAL_ID_NOT_FOUND, None
        return Errors.NONE, entry.meta

    def list_transactions(
        self, states: Iterable[str] = (), producer_ids: Iterable[int] = ()
    ) -> list[TxnMetadata]:
        """ListTransactions: the ids of every loaded partition, filtered by Kafka's state
        names and producer ids (an empty filter matches all); Dead ones are left out."""
        wanted_states = set(states)
        wanted_pids = set(producer_ids)
        return [
            entry.meta
            for _, _, entry in self._entries()
            if entry.state != TxnState.DEAD
            and (not wanted_states or entry.state.kafka_name in wanted_states)
            and (not wanted_pids or entry.meta.producer_id in wanted_pids)
        ]
