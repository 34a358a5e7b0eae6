"""The transactional producer's decisions: Java's TransactionManager as a plain state machine.

No I/O and no clock of its own: the shell (``txn_sender.py``) asks :meth:`next_request` what to
send (passing the time), sends it to the node named, and reports the answer with
:meth:`on_response` or the failure with :meth:`on_send_failed`. The user-facing calls
(``init_transactions`` ...) change the state and queue requests, returning a
:class:`TxnResult` the caller waits on.

Kafka's facts kept here:

- States and their valid previous states (``TransactionManager.State.isTransitionValid``).
- One request in flight at a time, taken from a queue ordered by priority: FindCoordinator,
  InitProducerId, AddPartitionsToTxn / AddOffsetsToTxn / TxnOffsetCommit, EndTxn, the epoch
  bump's InitProducerId. A request whose coordinator is unknown is preceded by a
  FindCoordinator (key type 1 for the transactional id, 0 for a group).
- A partition is added to the transaction (AddPartitionsToTxn) before its first batch is
  sent; the batch waits until then. EndTxn waits until no batch is incomplete, and is not
  sent at all when nothing was added (no partitions, no offsets).
- Each response error is retried (coordinator moved or loading, CONCURRENT_TRANSACTIONS),
  *abortable* (the transaction cannot commit; abort_transaction() recovers) or *fatal*
  (PRODUCER_FENCED and INVALID_PRODUCER_EPOCH from the coordinator, authorization of the
  transactional id, INVALID_TXN_STATE, anything unexpected): Java's handler tables.
- KIP-360: an error that leaves the producer id unknown to the coordinator or a partition
  (UNKNOWN_PRODUCER_ID, INVALID_PRODUCER_ID_MAPPING, a sequence the broker refused) makes
  the error abortable and the abort bumps the epoch: InitProducerId with the current
  (id, epoch) after EndTxn(abort) (skipping EndTxn after INVALID_PRODUCER_ID_MAPPING, which
  the coordinator would refuse), then every partition's sequence starts over at 0.
"""

from __future__ import annotations

import enum
import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from brook.client.cluster import BrokerNode, TopicPartition
from brook.client.consumer.coordinator import ConsumerGroupMetadata, OffsetAndMetadata
from brook.protocol.errors import Errors, KafkaError, error_info

from .errors import (
    AbortableTransactionError,
    FatalTransactionError,
    ProducerFencedError,
    TransactionError,
    TransactionStateError,
)

__all__ = [
    "ConsumerGroupMetadata",
    "Outgoing",
    "State",
    "TransactionManager",
    "TxnResult",
]

log = logging.getLogger(__name__)

TXN_KEY_TYPE = 1
GROUP_KEY_TYPE = 0
# Java's ADD_PARTITIONS_RETRY_BACKOFF_MS: the first AddPartitionsToTxn of a transaction that
# finds the previous one still completing is retried quickly.
ADD_PARTITIONS_RETRY_BACKOFF_MS = 20.0
NO_PRODUCER_ID = -1
NO_EPOCH = -1


class State(enum.Enum):
    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


S = State
# target -> the states it may be entered from (FATAL_ERROR: from any).
VALID_PREVIOUS: dict[State, frozenset[State]] = {
    S.UNINITIALIZED: frozenset({S.UNINITIALIZED}),
    S.INITIALIZING: frozenset({S.UNINITIALIZED, S.ABORTING_TRANSACTION}),
    S.READY: frozenset({S.INITIALIZING, S.COMMITTING_TRANSACTION, S.ABORTING_TRANSACTION}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.COMMITTING_TRANSACTION: frozenset({S.IN_TRANSACTION}),
    S.ABORTING_TRANSACTION: frozenset({S.IN_TRANSACTION, S.ABORTABLE_ERROR}),
    S.ABORTABLE_ERROR: frozenset(
        {S.IN_TRANSACTION, S.COMMITTING_TRANSACTION, S.ABORTABLE_ERROR, S.INITIALIZING}
    ),
    S.FATAL_ERROR: frozenset(State),
}


class TxnResult:
    """The outcome of one transactional call, set once: None or the error it ends with."""

    __slots__ = ("_callbacks", "done", "error")

    def __init__(self) -> None:
        self.done = False
        self.error: BaseException | None = None
        self._callbacks: list[Callable[[TxnResult], Any]] = []

    def add_callback(self, callback: Callable[[TxnResult], Any]) -> None:
        if self.done:
            callback(self)
        else:
            self._callbacks.append(callback)

    def complete(self, error: BaseException | None = None) -> None:
        if self.done:
            return
        self.done = True
        self.error = error
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback(self)


# -- requests --------------------------------------------------------------------------------


class Kind(enum.IntEnum):
    """A handler's kind; its value is its priority (lower goes first), as Java's Priority."""

    FIND_COORDINATOR = 0
    INIT_PRODUCER_ID = 1
    ADD_PARTITIONS = 2
    ADD_OFFSETS = 3
    TXN_OFFSET_COMMIT = 4
    END_TXN = 5
    EPOCH_BUMP = 6


_PRIORITY = {
    Kind.FIND_COORDINATOR: 0,
    Kind.INIT_PRODUCER_ID: 1,
    Kind.ADD_PARTITIONS: 2,
    Kind.ADD_OFFSETS: 2,
    Kind.TXN_OFFSET_COMMIT: 2,
    Kind.END_TXN: 3,
    Kind.EPOCH_BUMP: 4,
}


@dataclass(eq=False)
class _Handler:
    kind: Kind
    result: TxnResult
    # FindCoordinator: (key type, key); TxnOffsetCommit: the offsets still to commit.
    key_type: int = TXN_KEY_TYPE
    key: str = ""
    group: ConsumerGroupMetadata | None = None
    offsets: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)
    committed: bool = False
    partitions: tuple[TopicPartition, ...] = ()
    next_attempt_ms: float = 0.0
    attempts: int = 0
    seq: int = 0

    @property
    def coordinator_key(self) -> tuple[int, str] | None:
        """The coordinator it goes to; None for FindCoordinator (any broker)."""
        if self.kind is Kind.FIND_COORDINATOR:
            return None
        if self.kind is Kind.TXN_OFFSET_COMMIT:
            assert self.group is not None
            return (GROUP_KEY_TYPE, self.group.group_id)
        return (TXN_KEY_TYPE, "")


@dataclass(frozen=True, slots=True)
class Outgoing:
    """One request to send: ``api`` names it, ``body`` is its fields as a dict of the newest
    version the client speaks, ``node`` the coordinator (None = any broker)."""

    api: str
    body: dict[str, Any]
    node: BrokerNode | None
    handler: _Handler


@dataclass(frozen=True, slots=True)
class CoordinatorAnswer:
    error: int
    node: BrokerNode | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ProducerIdAnswer:
    error: int
    producer_id: int = NO_PRODUCER_ID
    epoch: int = NO_EPOCH


@dataclass(frozen=True, slots=True)
class ErrorAnswer:
    error: int


@dataclass(frozen=True, slots=True)
class PartitionsAnswer:
    errors: Mapping[TopicPartition, int]


Answer = CoordinatorAnswer | ProducerIdAnswer | ErrorAnswer | PartitionsAnswer

# TxnOffsetCommit errors that end the producer (Java's isFatalException).
_FATAL_OFFSET_ERRORS = frozenset(
    {
        Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
        Errors.INVALID_PRODUCER_EPOCH,
        Errors.PRODUCER_FENCED,
        Errors.UNSUPPORTED_FOR_MESSAGE_FORMAT,
    }
)


class TransactionManager:
    """One transactional producer's state; see the module docstring.

    ``producer_id`` / ``epoch`` are the ones InitProducerId gave; the shell hands them to the
    idempotence manager (which numbers the batches) through ``on_producer_id``.
    Calls come from the producer's event loop, except :meth:`maybe_add_partition` and
    :meth:`check_send`, which ``Producer.send`` makes from the caller's thread (a lock guards
    the partitions waiting to be added).
    """

    def __init__(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        retry_backoff_ms: float,
        on_producer_id: Callable[[int, int], None] | None = None,
    ) -> None:
        self.transactional_id = transactional_id
        self.transaction_timeout_ms = transaction_timeout_ms
        self.retry_backoff_ms = retry_backoff_ms
        self.on_producer_id = on_producer_id
        self.state = State.UNINITIALIZED
        self.producer_id = NO_PRODUCER_ID
        self.epoch = NO_EPOCH
        self.last_error: TransactionError | None = None
        self.epoch_bump_required = False
        self.transaction_started = False
        self.partitions_in_transaction: set[TopicPartition] = set()
        self.pending_partitions: set[TopicPartition] = set()  # AddPartitionsToTxn in flight
        self.new_partitions: set[TopicPartition] = set()  # not yet asked for
        self.coordinators: dict[tuple[int, str], BrokerNode] = {}
        self._pending: list[_Handler] = []
        self._in_flight: _Handler | None = None
        self._seq = 0
        self._lock = threading.Lock()
        self._init_result: TxnResult | None = None
        self._end_result: tuple[bool, TxnResult] | None = None
        self._last_abortable_code = Errors.NONE
        self._answering: _Handler | None = None

    # -- state -----------------------------------------------------------------------------

    def _transition(self, target: State, error: TransactionError | None = None) -> None:
        if self.state not in VALID_PREVIOUS[target]:
            raise TransactionStateError(
                f"TransactionalId {self.transactional_id}: Invalid transition attempted from "
                f"state {self.state.value} to state {target.value}"
            )
        if target in (State.FATAL_ERROR, State.ABORTABLE_ERROR):
            self.last_error = error
        else:
            self.last_error = None
        log.debug(
            "transactional id %s: %s -> %s", self.transactional_id, self.state.value, target.value
        )
        self.state = target

    @property
    def has_fatal_error(self) -> bool:
        return self.state is State.FATAL_ERROR

    @property
    def has_abortable_error(self) -> bool:
        return self.state is State.ABORTABLE_ERROR

    @property
    def is_aborting(self) -> bool:
        return self.state is State.ABORTING_TRANSACTION

    @property
    def is_completing(self) -> bool:
        return self.state in (State.COMMITTING_TRANSACTION, State.ABORTING_TRANSACTION)

    @property
    def in_transaction(self) -> bool:
        return self.state in (
            State.IN_TRANSACTION,
            State.COMMITTING_TRANSACTION,
            State.ABORTING_TRANSACTION,
            State.ABORTABLE_ERROR,
        )

    def _fail_with_error(self) -> None:
        """Java's maybeFailWithError: a call in an error state raises that error again."""
        error = self.last_error
        if self.state is State.FATAL_ERROR:
            assert error is not None
            raise _again(error)
        if self.state is State.ABORTABLE_ERROR:
            assert error is not None
            raise AbortableTransactionError(
                error.code,
                "Cannot execute transactional method because we are in an error state: "
                f"{error.message or error.name}; call abort_transaction()",
            )

    def _fatal(self, error: TransactionError) -> None:
        log.error("transactional id %s failed for good: %s", self.transactional_id, error)
        self._transition(State.FATAL_ERROR, error)
        self._fail_pending(error)

    def _abortable(self, error: TransactionError, handler: _Handler | None = None) -> None:
        if self.state is State.INITIALIZING and not self.epoch_bump_required:
            self._fatal(FatalTransactionError(error.code, error.message))
            return
        if self.state not in VALID_PREVIOUS[State.ABORTABLE_ERROR]:
            # Already aborting (Java skips the transition), or no transaction to abort: the
            # request fails and the state stays.
            if handler is not None:
                handler.result.complete(error)
            return
        self._transition(State.ABORTABLE_ERROR, error)
        if handler is not None:
            handler.result.complete(error)
        # A commit waiting on this transaction fails: it can only be aborted now.
        for pending in list(self._pending):
            if pending.kind is not Kind.FIND_COORDINATOR and pending.kind is not Kind.EPOCH_BUMP:
                self._pending.remove(pending)
                pending.result.complete(error)

    def _abortable_if_possible(self, error: TransactionError, handler: _Handler) -> None:
        """KIP-360: an unknown producer id is recovered by an epoch bump at abort."""
        self.epoch_bump_required = True
        self._abortable(error, handler)

    def _fail_pending(self, error: BaseException) -> None:
        pending, self._pending = self._pending, []
        for handler in pending:
            handler.result.complete(error)
        if self._in_flight is not None:
            self._in_flight.result.complete(error)
            self._in_flight = None
        if self._answering is not None:
            # The request whose answer made the error: its caller hears of it too.
            self._answering.result.complete(error)

    # -- the user's calls ------------------------------------------------------------------

    def init_transactions(self) -> TxnResult:
        """InitProducerId for the transactional id (fencing older producers of it); a call
        while the previous one is still running returns its result (a retry after a
        timeout)."""
        if self._init_result is not None and not self._init_result.done:
            return self._init_result
        if self.state is not State.UNINITIALIZED:
            self._fail_with_error()
            raise TransactionStateError(
                "init_transactions() may be called once per producer "
                f"(the transaction manager is in state {self.state.value})"
            )
        self._transition(State.INITIALIZING)
        self.producer_id, self.epoch = NO_PRODUCER_ID, NO_EPOCH
        result = self._init_result = TxnResult()
        self._enqueue(_Handler(Kind.INIT_PRODUCER_ID, result))
        return result

    def begin_transaction(self) -> None:
        self._fail_with_error()
        if self.state is not State.READY:
            raise TransactionStateError(self._state_message("begin_transaction()"))
        self._transition(State.IN_TRANSACTION)

    def send_offsets(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        group: ConsumerGroupMetadata,
    ) -> TxnResult:
        """AddOffsetsToTxn to the transaction coordinator, then TxnOffsetCommit to the
        group's coordinator; the result completes when the offsets are written."""
        self._fail_with_error()
        if self.state is not State.IN_TRANSACTION:
            raise TransactionStateError(
                "Cannot send offsets if a transaction is not in progress "
                f"(currentState={self.state.value})"
            )
        if not group.group_id:
            raise ValueError("group_metadata must name a consumer group (group_id)")
        result = TxnResult()
        self._enqueue(_Handler(Kind.ADD_OFFSETS, result, group=group, offsets=dict(offsets)))
        return result

    def begin_commit(self) -> TxnResult:
        self._fail_with_error()
        if self.state is State.COMMITTING_TRANSACTION and self._end_result is not None:
            return self._end_result[1]
        if self.state is not State.IN_TRANSACTION:
            raise TransactionStateError(self._state_message("commit_transaction()"))
        self._transition(State.COMMITTING_TRANSACTION)
        return self._begin_completing(committed=True)

    def begin_abort(self) -> TxnResult:
        if self.state is State.FATAL_ERROR:
            self._fail_with_error()
        if self.state is State.ABORTING_TRANSACTION and self._end_result is not None:
            return self._end_result[1]
        if self.state not in (State.IN_TRANSACTION, State.ABORTABLE_ERROR):
            raise TransactionStateError(self._state_message("abort_transaction()"))
        self._transition(State.ABORTING_TRANSACTION)
        with self._lock:
            self.new_partitions.clear()
        return self._begin_completing(committed=False)

    def _begin_completing(self, committed: bool) -> TxnResult:
        """EndTxn, then for an abort that needs it (KIP-360) the epoch bump; the caller's
        result is the last request's."""
        result = TxnResult()
        self._end_result = (committed, result)
        bump = not committed and self.epoch_bump_required
        # The coordinator refuses EndTxn for a producer id it does not map: bump directly.
        skip_end = bump and self._last_abortable_code == Errors.INVALID_PRODUCER_ID_MAPPING
        if not skip_end:
            self._enqueue(
                _Handler(Kind.END_TXN, TxnResult() if bump else result, committed=committed)
            )
        if bump:
            self._enqueue(_Handler(Kind.EPOCH_BUMP, result))
        return result

    def _state_message(self, call: str) -> str:
        if self.state in (State.UNINITIALIZED, State.INITIALIZING):
            return (
                f"Cannot call {call} before init_transactions() has completed "
                f"(currentState={self.state.value})"
            )
        return f"Cannot call {call} in state {self.state.value}"

    # -- the send path ---------------------------------------------------------------------

    def check_send(self) -> None:
        """Java's failIfNotReadyForSend: send() only inside a transaction, never after an
        error (the transaction must be aborted first)."""
        state = self.state
        if state is State.IN_TRANSACTION:
            return
        if state in (State.ABORTABLE_ERROR, State.FATAL_ERROR):
            error = self.last_error
            assert error is not None
            if not error.abortable:
                raise _again(error)
            raise AbortableTransactionError(
                error.code,
                "Cannot perform send because at least one previous transactional or "
                f"idempotent request has failed with errors: {error.message or error.name}; "
                "call abort_transaction()",
            )
        if state in (State.UNINITIALIZED, State.INITIALIZING):
            raise TransactionStateError(
                "Cannot perform a 'send' before completing a call to init_transactions() when "
                "transactions are enabled."
            )
        raise TransactionStateError(f"Cannot call send in state {state.value}")

    def maybe_add_partition(self, tp: TopicPartition) -> None:
        """A record went to ``tp``: add it to the transaction before its batch is sent."""
        if tp in self.partitions_in_transaction:
            return
        with self._lock:
            if tp not in self.pending_partitions:
                self.new_partitions.add(tp)

    def is_send_allowed(self, tp: tuple[str, int]) -> bool:
        """Whether a batch for ``tp`` may leave: its partition is in the transaction."""
        return tp in self.partitions_in_transaction

    # -- the shell's side ------------------------------------------------------------------

    @property
    def has_in_flight_request(self) -> bool:
        return self._in_flight is not None

    def has_pending_work(self) -> bool:
        return bool(self._pending or self.new_partitions or self._in_flight)

    def _enqueue(self, handler: _Handler) -> None:
        self._seq += 1
        handler.seq = self._seq
        self._pending.append(handler)
        self._pending.sort(key=lambda h: (_PRIORITY[h.kind], h.seq))

    def _lookup(self, key_type: int, key: str) -> None:
        ckey = (key_type, "" if key_type == TXN_KEY_TYPE else key)
        self.coordinators.pop(ckey, None)
        for handler in self._pending:
            if (
                handler.kind is Kind.FIND_COORDINATOR
                and handler.key_type == key_type
                and handler.key == key
            ):
                return
        if (
            self._in_flight is not None
            and self._in_flight.kind is Kind.FIND_COORDINATOR
            and self._in_flight.key_type == key_type
            and self._in_flight.key == key
        ):
            return
        self._enqueue(_Handler(Kind.FIND_COORDINATOR, TxnResult(), key_type=key_type, key=key))

    def next_request(self, now_ms: float, has_incomplete_batches: bool) -> Outgoing | float | None:
        """The request to send now, or the delay in ms until one may be due, or None when
        there is nothing to send (until a call or a batch adds work)."""
        if self._in_flight is not None:
            return None
        if self.new_partitions and self.state is not State.FATAL_ERROR:
            with self._lock:
                partitions = tuple(sorted(self.new_partitions))
                self.pending_partitions.update(partitions)
                self.new_partitions.clear()
            self._enqueue(_Handler(Kind.ADD_PARTITIONS, TxnResult(), partitions=partitions))
        while self._pending:
            handler = self._pending[0]
            if handler.kind is Kind.END_TXN and has_incomplete_batches:
                return None
            if handler.next_attempt_ms > now_ms:
                return handler.next_attempt_ms - now_ms
            if self._terminate_with_error(handler):
                continue
            if handler.kind is Kind.END_TXN and not self.transaction_started:
                self._pending.pop(0)
                self._end_txn_done(handler)
                continue
            ckey = handler.coordinator_key
            if ckey is not None and ckey not in self.coordinators:
                self._lookup(ckey[0], ckey[1])
                continue
            self._pending.pop(0)
            self._in_flight = handler
            handler.attempts += 1
            return Outgoing(
                handler.kind.name,
                self._body(handler),
                None if ckey is None else self.coordinators[ckey],
                handler,
            )
        return None

    def _terminate_with_error(self, handler: _Handler) -> bool:
        """Java's maybeTerminateRequestWithError: in an error state only an abort's own
        requests (and the lookups they need) still go; others fail with the error."""
        if self.state is State.FATAL_ERROR or (
            self.state is State.ABORTABLE_ERROR
            and handler.kind not in (Kind.FIND_COORDINATOR, Kind.END_TXN, Kind.EPOCH_BUMP)
        ):
            self._pending.remove(handler)
            handler.result.complete(self.last_error)
            return True
        return False

    def _body(self, handler: _Handler) -> dict[str, Any]:
        tid = self.transactional_id
        kind = handler.kind
        if kind is Kind.FIND_COORDINATOR:
            return {
                "key": handler.key or tid,
                "key_type": handler.key_type,
                "coordinator_keys": [handler.key or tid],
            }
        if kind in (Kind.INIT_PRODUCER_ID, Kind.EPOCH_BUMP):
            bump = kind is Kind.EPOCH_BUMP
            return {
                "transactional_id": tid,
                "transaction_timeout": self.transaction_timeout_ms,
                "producer_id": self.producer_id if bump else NO_PRODUCER_ID,
                "producer_epoch": self.epoch if bump else NO_EPOCH,
            }
        if kind is Kind.ADD_PARTITIONS:
            by_topic: dict[str, list[int]] = {}
            for tp in handler.partitions:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            return {
                "v3_and_below_transactional_id": tid,
                "v3_and_below_producer_id": self.producer_id,
                "v3_and_below_producer_epoch": self.epoch,
                "v3_and_below_topics": [
                    {"name": t, "partitions": ps} for t, ps in by_topic.items()
                ],
            }
        if kind is Kind.ADD_OFFSETS:
            assert handler.group is not None
            return {
                "transactional_id": tid,
                "producer_id": self.producer_id,
                "producer_epoch": self.epoch,
                "group_id": handler.group.group_id,
            }
        if kind is Kind.TXN_OFFSET_COMMIT:
            group = handler.group
            assert group is not None
            topics: dict[str, list[dict[str, Any]]] = {}
            for tp, om in handler.offsets.items():
                topics.setdefault(tp.topic, []).append(
                    {
                        "partition_index": tp.partition,
                        "committed_offset": om.offset,
                        "committed_leader_epoch": om.leader_epoch,
                        "committed_metadata": om.metadata,
                    }
                )
            return {
                "transactional_id": tid,
                "group_id": group.group_id,
                "producer_id": self.producer_id,
                "producer_epoch": self.epoch,
                "generation_id": group.generation_id,
                "member_id": group.member_id,
                "group_instance_id": group.group_instance_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            }
        assert kind is Kind.END_TXN
        return {
            "transactional_id": tid,
            "producer_id": self.producer_id,
            "producer_epoch": self.epoch,
            "committed": handler.committed,
        }

    def _retry(self, handler: _Handler, now_ms: float, backoff_ms: float | None = None) -> None:
        handler.next_attempt_ms = now_ms + (
            self.retry_backoff_ms if backoff_ms is None else backoff_ms
        )
        self._enqueue(handler)

    def on_send_failed(self, out: Outgoing, error: BaseException, now_ms: float) -> None:
        """No answer (connection lost, request timed out): look the coordinator up again
        and retry, as Java does for a disconnect."""
        handler = out.handler
        self._in_flight = None
        log.debug("transactional request %s failed: %s", out.api, error)
        if handler.result.done:
            return
        ckey = handler.coordinator_key
        if ckey is not None:
            self._lookup(ckey[0], handler.group.group_id if handler.group and ckey[0] == 0 else "")
        self._retry(handler, now_ms)

    def on_response(self, out: Outgoing, answer: Answer, now_ms: float) -> None:
        handler = out.handler
        self._in_flight = None
        if handler.result.done and handler.kind is not Kind.FIND_COORDINATOR:
            return
        log.debug("transactional id %s: %s answered %s", self.transactional_id, out.api, answer)
        self._answering = handler
        try:
            self._on_response(handler, answer, now_ms)
        finally:
            self._answering = None

    def _on_response(self, handler: _Handler, answer: Answer, now_ms: float) -> None:
        kind = handler.kind
        if kind is Kind.FIND_COORDINATOR:
            assert isinstance(answer, CoordinatorAnswer)
            self._on_find_coordinator(handler, answer, now_ms)
        elif kind in (Kind.INIT_PRODUCER_ID, Kind.EPOCH_BUMP):
            assert isinstance(answer, ProducerIdAnswer)
            self._on_init_producer_id(handler, answer, now_ms)
        elif kind is Kind.ADD_PARTITIONS:
            assert isinstance(answer, PartitionsAnswer)
            self._on_add_partitions(handler, answer, now_ms)
        elif kind is Kind.ADD_OFFSETS:
            assert isinstance(answer, ErrorAnswer)
            self._on_add_offsets(handler, answer.error, now_ms)
        elif kind is Kind.TXN_OFFSET_COMMIT:
            assert isinstance(answer, PartitionsAnswer)
            self._on_txn_offset_commit(handler, answer, now_ms)
        else:
            assert isinstance(answer, ErrorAnswer)
            self._on_end_txn(handler, answer.error, now_ms)

    # -- responses -------------------------------------------------------------------------

    def _fenced(self) -> None:
        # INVALID_PRODUCER_EPOCH from a coordinator is an older version's PRODUCER_FENCED.
        self._fatal(ProducerFencedError())

    def _unexpected(self, api: str, code: int) -> None:
        self._fatal(
            FatalTransactionError(code, f"Unexpected error in {api} response: {_name(code)}")
        )

    def _on_find_coordinator(self, h: _Handler, a: CoordinatorAnswer, now: float) -> None:
        code = a.error
        if code == Errors.NONE:
            assert a.node is not None
            ckey = (h.key_type, "" if h.key_type == TXN_KEY_TYPE else h.key)
            self.coordinators[ckey] = a.node
            h.result.complete()
            log.info(
                "transactional id %s: %s coordinator is node %d",
                self.transactional_id,
                "transaction" if h.key_type == TXN_KEY_TYPE else f"group {h.key}",
                a.node.node_id,
            )
        elif code in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.COORDINATOR_LOAD_IN_PROGRESS):
            self._retry(h, now)
        elif code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            self._fatal(
                FatalTransactionError(
                    code, f"Transactional Id authorization failed: {self.transactional_id}"
                )
            )
        elif code == Errors.GROUP_AUTHORIZATION_FAILED:
            self._abortable(
                AbortableTransactionError(code, f"Not authorized to access group: {h.key}")
            )
        else:
            kind = "TRANSACTION" if h.key_type == TXN_KEY_TYPE else "GROUP"
            self._fatal(
                FatalTransactionError(
                    code,
                    f"Could not find a coordinator with type {kind} with key "
                    f"{h.key or self.transactional_id} due to unexpected error: "
                    f"{a.message or _name(code)}",
                )
            )

    def _on_init_producer_id(self, h: _Handler, a: ProducerIdAnswer, now: float) -> None:
        code = a.error
        if code == Errors.NONE:
            bump = h.kind is Kind.EPOCH_BUMP
            self.producer_id, self.epoch = a.producer_id, a.epoch
            if bump:
                self._transition(State.INITIALIZING)
            self._transition(State.READY)
            self.epoch_bump_required = False
            self._last_abortable_code = Errors.NONE
            self._reset_transaction()
            if self.on_producer_id is not None:
                self.on_producer_id(a.producer_id, a.epoch)
            h.result.complete()
        elif code in (Errors.NOT_COORDINATOR, Errors.COORDINATOR_NOT_AVAILABLE):
            self._lookup(TXN_KEY_TYPE, "")
            self._retry(h, now)
        elif code in (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.CONCURRENT_TRANSACTIONS):
            self._retry(h, now)
        elif code in (
            Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            Errors.CLUSTER_AUTHORIZATION_FAILED,
        ):
            self._fatal(FatalTransactionError(code, f"InitProducerId: {_name(code)}"))
        elif code in (Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED):
            self._fenced()
        elif code == Errors.INVALID_TRANSACTION_TIMEOUT:
            self._fatal(
                FatalTransactionError(
                    code,
                    f"transaction.timeout.ms={self.transaction_timeout_ms} is larger than the "
                    "broker's transaction.max.timeout.ms",
                )
            )
        else:
            self._unexpected("InitProducerId", code)

    def _on_add_partitions(self, h: _Handler, a: PartitionsAnswer, now: float) -> None:
        unauthorized: set[str] = set()
        failed = False
        for tp, code in a.errors.items():
            if code == Errors.NONE:
                continue
            if code in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR):
                self._lookup(TXN_KEY_TYPE, "")
                self._retry(h, now)
                return
            if code == Errors.CONCURRENT_TRANSACTIONS:
                backoff = None
                if not self.partitions_in_transaction:
                    backoff = min(self.retry_backoff_ms, ADD_PARTITIONS_RETRY_BACKOFF_MS)
                self._retry(h, now, backoff)
                return
            if code in (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.UNKNOWN_TOPIC_OR_PARTITION):
                self._retry(h, now)
                return
            if code in (Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED):
                self._fenced()
                return
            if code in (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Errors.INVALID_TXN_STATE):
                self._fatal(FatalTransactionError(code, f"AddPartitionsToTxn: {_name(code)}"))
                return
            if code == Errors.TOPIC_AUTHORIZATION_FAILED:
                unauthorized.add(tp.topic)
            elif code in (Errors.UNKNOWN_PRODUCER_ID, Errors.INVALID_PRODUCER_ID_MAPPING):
                self._last_abortable_code = code
                self._abortable_if_possible(
                    AbortableTransactionError(
                        code, f"AddPartitionsToTxn: {_name(code)}; abort the transaction"
                    ),
                    h,
                )
                return
            else:
                failed = True
        with self._lock:
            self.pending_partitions.difference_update(a.errors)
        if unauthorized:
            self._abortable(
                AbortableTransactionError(
                    Errors.TOPIC_AUTHORIZATION_FAILED,
                    f"Not authorized to access topics: {sorted(unauthorized)}",
                ),
                h,
            )
        elif failed:
            errors = {f"{tp.topic}-{tp.partition}": _name(c) for tp, c in a.errors.items()}
            self._abortable(
                AbortableTransactionError(
                    Errors.UNKNOWN_SERVER_ERROR,
                    f"Could not add partitions to transaction due to errors: {errors}",
                ),
                h,
            )
        else:
            self.partitions_in_transaction.update(a.errors)
            self.transaction_started = True
            h.result.complete()

    def _on_add_offsets(self, h: _Handler, code: int, now: float) -> None:
        if code == Errors.NONE:
            self.transaction_started = True
            assert h.group is not None
            # The caller's result completes once TxnOffsetCommit has written the offsets.
            self._enqueue(
                _Handler(Kind.TXN_OFFSET_COMMIT, h.result, group=h.group, offsets=h.offsets)
            )
        elif code in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR):
            self._lookup(TXN_KEY_TYPE, "")
            self._retry(h, now)
        elif code in (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.CONCURRENT_TRANSACTIONS):
            self._retry(h, now)
        elif code in (Errors.UNKNOWN_PRODUCER_ID, Errors.INVALID_PRODUCER_ID_MAPPING):
            self._last_abortable_code = code
            self._abortable_if_possible(
                AbortableTransactionError(code, f"AddOffsetsToTxn: {_name(code)}"), h
            )
        elif code in (Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED):
            self._fenced()
        elif code == Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            self._fatal(FatalTransactionError(code, f"AddOffsetsToTxn: {_name(code)}"))
        elif code == Errors.GROUP_AUTHORIZATION_FAILED:
            assert h.group is not None
            self._abortable(
                AbortableTransactionError(
                    code, f"Not authorized to access group: {h.group.group_id}"
                ),
                h,
            )
        else:
            self._unexpected("AddOffsetsToTxn", code)

    def _on_txn_offset_commit(self, h: _Handler, a: PartitionsAnswer, now: float) -> None:
        assert h.group is not None
        group = h.group.group_id
        reloaded = False
        for tp, code in a.errors.items():
            if code == Errors.NONE:
                h.offsets.pop(tp, None)
            elif code in (
                Errors.COORDINATOR_NOT_AVAILABLE,
                Errors.NOT_COORDINATOR,
                Errors.REQUEST_TIMED_OUT,
            ):
                if not reloaded:
                    reloaded = True
                    self._lookup(GROUP_KEY_TYPE, group)
            elif code in (Errors.UNKNOWN_TOPIC_OR_PARTITION, Errors.COORDINATOR_LOAD_IN_PROGRESS):
                continue
            elif code == Errors.GROUP_AUTHORIZATION_FAILED:
                self._abortable(
                    AbortableTransactionError(code, f"Not authorized to access group: {group}"),
                    h,
                )
                return
            elif code == Errors.FENCED_INSTANCE_ID:
                self._abortable(
                    AbortableTransactionError(
                        code, f"TxnOffsetCommit for group {group}: {_name(code)}"
                    ),
                    h,
                )
                return
            elif code in (Errors.UNKNOWN_MEMBER_ID, Errors.ILLEGAL_GENERATION):
                self._abortable(
                    AbortableTransactionError(
                        code,
                        "Transaction offset Commit failed due to consumer group metadata "
                        f"mismatch: {_name(code)}",
                    ),
                    h,
                )
                return
            elif code in _FATAL_OFFSET_ERRORS:
                if code in (Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED):
                    self._fenced()
                else:
                    self._fatal(FatalTransactionError(code, f"TxnOffsetCommit: {_name(code)}"))
                return
            else:
                self._unexpected("TxnOffsetCommit", code)
                return
        if not h.offsets:
            h.result.complete()
        else:
            self._retry(h, now)

    def _on_end_txn(self, h: _Handler, code: int, now: float) -> None:
        if code == Errors.NONE:
            self._end_txn_done(h)
        elif code in (Errors.COORDINATOR_NOT_AVAILABLE, Errors.NOT_COORDINATOR):
            self._lookup(TXN_KEY_TYPE, "")
            self._retry(h, now)
        elif code in (Errors.COORDINATOR_LOAD_IN_PROGRESS, Errors.CONCURRENT_TRANSACTIONS):
            self._retry(h, now)
        elif code in (Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED):
            self._fenced()
        elif code in (Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, Errors.INVALID_TXN_STATE):
            self._fatal(FatalTransactionError(code, f"EndTxn: {_name(code)}"))
        elif code in (Errors.UNKNOWN_PRODUCER_ID, Errors.INVALID_PRODUCER_ID_MAPPING):
            self._last_abortable_code = code
            self._abortable_if_possible(
                AbortableTransactionError(code, f"EndTxn: {_name(code)}"), h
            )
        else:
            self._unexpected("EndTxn", code)

    def _end_txn_done(self, h: _Handler) -> None:
        """The transaction ended (or had nothing to end); an abort that bumps the epoch
        stays ABORTING until the bump is answered."""
        if self.state is not State.FATAL_ERROR and (h.committed or not self.epoch_bump_required):
            self._complete_transaction()
        h.result.complete()

    def _complete_transaction(self) -> None:
        self._transition(State.READY)
        self._reset_transaction()

    def _reset_transaction(self) -> None:
        self.transaction_started = False
        self.partitions_in_transaction.clear()
        with self._lock:
            self.pending_partitions.clear()
            self.new_partitions.clear()
        self._end_result = None

    # -- produce failures ------------------------------------------------------------------

    def on_batch_failed(self, error: BaseException, needs_epoch_bump: bool) -> None:
        """A batch of the transaction failed for good: the transaction cannot commit
        (Java's maybeTransitionToErrorState). Fatal causes are handled by the caller; the
        first error of a transaction is the one kept."""
        if self.state in (State.FATAL_ERROR, State.ABORTABLE_ERROR):
            if needs_epoch_bump and self.state is State.ABORTABLE_ERROR:
                self.epoch_bump_required = True
            return
        if needs_epoch_bump and not self.is_completing:
            self.epoch_bump_required = True
        code = error.code if isinstance(error, KafkaError) else Errors.UNKNOWN_SERVER_ERROR
        if self.state is State.ABORTING_TRANSACTION:
            return
        if self.state not in VALID_PREVIOUS[State.ABORTABLE_ERROR]:
            return
        self._abortable(
            AbortableTransactionError(
                code, f"a record of the transaction could not be written: {error}"
            )
        )

    def fatal(self, error: BaseException) -> None:
        """A fatal error seen outside the transactional requests (a produce answer)."""
        if self.state is State.FATAL_ERROR:
            return
        if isinstance(error, KafkaError) and error.code == Errors.PRODUCER_FENCED:
            self._fenced()
            return
        code = error.code if isinstance(error, KafkaError) else Errors.UNKNOWN_SERVER_ERROR
        self._fatal(FatalTransactionError(code, str(error)))


def _again(error: TransactionError) -> TransactionError:
    """A fresh exception of the same kind, for a call that fails with an earlier error."""
    if isinstance(error, ProducerFencedError):
        return ProducerFencedError(error.message)
    return type(error)(error.code, error.message)


def _name(code: int) -> str:
    return error_info(code).name


def group_offsets(
    offsets: Mapping[Any, OffsetAndMetadata | int],
) -> dict[TopicPartition, OffsetAndMetadata]:
    """``{(topic, partition): offset or OffsetAndMetadata}`` as TxnOffsetCommit takes them."""
    out: dict[TopicPartition, OffsetAndMetadata] = {}
    for tp, value in offsets.items():
        topic, partition = tp
        if isinstance(value, int):
            value = OffsetAndMetadata(value)
        if value.offset < 0:
            raise ValueError(f"invalid offset {value.offset} for {topic}-{partition}")
        out[TopicPartition(topic, int(partition))] = value
    return out


def partitions_of(tps: Iterable[tuple[str, int]]) -> list[TopicPartition]:
    return [TopicPartition(t, p) for t, p in tps]
