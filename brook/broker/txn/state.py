"""One transactional id as plain logic: Kafka's transaction states, epochs and fencing
(KIP-98, KIP-360), timeouts and expiry, with the time passed in.

The coordinator never changes a transactional id's state before the change is in
``__transaction_state``: a request is answered with a ``Decision`` that either refuses it (an
error, written nowhere) or names the metadata to append. The entry then holds that metadata as
*pending* (every other request gets CONCURRENT_TRANSACTIONS) until the shell reports the append
replicated (``complete``) or failed (``write_failed``). That is Kafka's TransactionMetadata
protocol (prepareTransitionTo / completeTransitionTo); it is what makes a coordinator that fails
over mid-request safe: the new coordinator loads only what was written.

Kafka's transaction-version-1 semantics (EndTxn below v5), which every released client speaks:
the epoch is bumped by InitProducerId and by fencing, not by every EndTxn (KIP-890 part 2 is left
for later, see docs/design.md "Transactions").
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from brook.protocol.errors import Errors

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
MAX_EPOCH = 32767  # Short.MAX_VALUE

TopicPartition = tuple[str, int]


class TxnState(enum.IntEnum):
    """Kafka's states, with the ids ``TransactionLogValue.TransactionStatus`` stores."""

    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The name DescribeTransactions and ListTransactions report."""
        return _KAFKA_NAMES[self]

    @property
    def expiration_allowed(self) -> bool:
        """Whether an idle transactional id in this state may be expired."""
        return self in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT)

    @classmethod
    def from_kafka_name(cls, name: str) -> TxnState | None:
        return _BY_KAFKA_NAME.get(name)


_KAFKA_NAMES = {
    TxnState.EMPTY: "Empty",
    TxnState.ONGOING: "Ongoing",
    TxnState.PREPARE_COMMIT: "PrepareCommit",
    TxnState.PREPARE_ABORT: "PrepareAbort",
    TxnState.COMPLETE_COMMIT: "CompleteCommit",
    TxnState.COMPLETE_ABORT: "CompleteAbort",
    TxnState.DEAD: "Dead",
    TxnState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_KAFKA_NAME = {name: state for state, name in _KAFKA_NAMES.items()}

_S = TxnState
VALID_PREVIOUS: dict[TxnState, frozenset[TxnState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


class TransitionError(RuntimeError):
    """A transition the state machine must never make: a bug, not bad input."""


def epoch_exhausted(epoch: int) -> bool:
    """Kafka keeps the last epoch back so the coordinator can always fence the current one."""
    return epoch >= MAX_EPOCH - 1


class TxnResult(enum.IntEnum):
    """What a marker says (the control record type and WriteTxnMarkers' field)."""

    ABORT = 0
    COMMIT = 1


@dataclass(frozen=True, slots=True)
class TxnMetadata:
    """What ``__transaction_state`` stores for one transactional id (TransactionLogValue)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[TopicPartition] = frozenset()
    start_ms: int = -1
    last_update_ms: int = -1
    prev_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_PRODUCER_EPOCH


@dataclass(frozen=True, slots=True)
class Decision:
    """The answer to one request.

    ``write`` is None: answer ``error`` now. Otherwise append ``write`` to the transactional
    id's ``__transaction_state`` partition; once replicated call ``TxnEntry.complete`` and
    answer ``error`` (NONE, or CONCURRENT_TRANSACTIONS for a fencing abort the client must
    retry after); if the append fails, call ``TxnEntry.write_failed`` and answer its error.
    ``markers`` set: once the write is complete, the shell calls ``prepare_complete`` and sends
    that result's markers to every partition of the transaction.
    """

    error: Errors
    write: TxnMetadata | None = None
    markers: TxnResult | None = None


def _refuse(error: Errors) -> Decision:
    return Decision(error)


@dataclass(frozen=True, slots=True)
class TxnConfig:
    """The coordinator's settings (Kafka's names in brook/config/server.py)."""

    max_timeout_ms: int = 900_000  # transaction.max.timeout.ms
    id_expiration_ms: int = 604_800_000  # transactional.id.expiration.ms


# ---------------------------------------------------------------------- one transactional id


@dataclass(eq=False)
class TxnEntry:
    """The coordinator's cached state for one transactional id."""

    meta: TxnMetadata
    pending: TxnMetadata | None = None
    _fencing: bool = field(default=False, repr=False)

    @property
    def transactional_id(self) -> str:
        return self.meta.transactional_id

    @property
    def state(self) -> TxnState:
        return self.meta.state

    # -------------------------------------------------------------- requests

    def init_producer_id(
        self,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        now_ms: int,
        allocate_producer_id: Callable[[], int],
    ) -> Decision:
        """InitProducerId for an id already known (``init_producer_id`` below checks the request
        itself). ``expected`` is KIP-360's (producer id, epoch) of a producer recovering."""
        meta = self.meta
        if self.pending is not None:
            return _refuse(Errors.CONCURRENT_TRANSACTIONS)
        if expected is not None and not self._valid_expected_producer(*expected):
            return _refuse(Errors.PRODUCER_FENCED)
        state = meta.state
        if state in (TxnState.PREPARE_ABORT, TxnState.PREPARE_COMMIT):
            return _refuse(Errors.CONCURRENT_TRANSACTIONS)
        if state == TxnState.ONGOING:
            # Fence the producer of the ongoing transaction: abort it under a bumped epoch that
            # is never returned; the client retries and gets one more bump (or a new id).
            return self._fence_and_abort(now_ms)
        if state in (TxnState.EMPTY, TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            if epoch_exhausted(meta.producer_epoch) and (
                expected is None or expected[1] == meta.producer_epoch
            ):
                target = replace(
                    meta,
                    producer_id=allocate_producer_id(),
                    prev_producer_id=meta.producer_id,
                    producer_epoch=0,
                    last_producer_epoch=(
                        meta.producer_epoch if expected is not None else NO_PRODUCER_EPOCH
                    ),
                    timeout_ms=timeout_ms,
                    state=TxnState.EMPTY,
                    partitions=frozenset(),
                    start_ms=-1,
                    last_update_ms=now_ms,
                )
                return self._prepare(target)
            bumped = self._bumped_epoch(expected)
            if bumped is None:
                return _refuse(Errors.PRODUCER_FENCED)
            epoch, last_epoch = bumped
            target = replace(
                meta,
                producer_epoch=epoch,
                last_producer_epoch=last_epoch,
                timeout_ms=timeout_ms,
                state=TxnState.EMPTY,
                partitions=frozenset(),
                start_ms=-1,
                last_update_ms=now_ms,
            )
            return self._prepare(target)
        raise TransitionError(
            f"transactional id {meta.transactional_id!r} is in state {state.name}"
        )

    def add_partitions(
        self,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
    ) -> Decision:
        """AddPartitionsToTxn, and AddOffsetsToTxn with the group's offsets partition."""
        meta = self.meta
        wanted = frozenset(partitions)
        if meta.producer_id != producer_id:
            return _refuse(Errors.INVALID_PRODUCER_ID_MAPPING)
        if meta.producer_epoch != producer_epoch:
            return _refuse(Errors.PRODUCER_FENCED)
        if self.pending is not None:
            return _refuse(Errors.CONCURRENT_TRANSACTIONS)
        if meta.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return _refuse(Errors.CONCURRENT_TRANSACTIONS)
        if meta.state == TxnState.ONGOING and wanted <= meta.partitions:
            return _refuse(Errors.NONE)  # nothing to write
        if meta.state not in VALID_PREVIOUS[TxnState.ONGOING]:
            raise TransitionError(f"AddPartitions in state {meta.state.name}")
        start = now_ms if meta.state != TxnState.ONGOING else meta.start_ms
        target = replace(
            meta,
            state=TxnState.ONGOING,
            partitions=meta.partitions | wanted,
            start_ms=start,
            last_update_ms=now_ms,
        )
        return self._prepare(target)

    def end_txn(self, producer_id: int, producer_epoch: int, commit: bool, now_ms: int) -> Decision:
        """EndTxn from a client: the epoch must be the current one exactly."""
        return self._end(producer_id, producer_epoch, commit, now_ms, from_client=True)

    def abort_if_timed_out(self, now_ms: int) -> Decision | None:
        """Kafka's abortTimedOutTransactions for this id: an Ongoing transaction older than its
        timeout is aborted under a bumped epoch, which fences its producer."""
        meta = self.meta
        if meta.state != TxnState.ONGOING or self.pending is not None:
            return None
        if meta.start_ms + meta.timeout_ms >= now_ms:
            return None
        return self._fence_and_abort(now_ms)

    def expire(self, now_ms: int, id_expiration_ms: int) -> TxnMetadata | None:
        """Kafka's transactional id expiry: an id idle for ``transactional.id.expiration.ms`` in
        a state that allows it becomes Dead (the shell writes a tombstone, then forgets it)."""
        meta = self.meta
        if self.pending is not None or not meta.state.expiration_allowed:
            return None
        if meta.last_update_ms + id_expiration_ms > now_ms:
            return None
        target = replace(meta, state=TxnState.DEAD, partitions=frozenset())
        self.pending = target
        return target

    def prepare_complete(self, now_ms: int) -> TxnMetadata:
        """After PrepareCommit / PrepareAbort is written: the Complete state to write once every
        marker is written. Pending from now on, so nothing else runs while markers are out."""
        meta = self.meta
        if self.pending is not None:
            raise TransitionError(f"prepare_complete with {self.pending.state.name} pending")
        if meta.state == TxnState.PREPARE_COMMIT:
            state = TxnState.COMPLETE_COMMIT
        elif meta.state == TxnState.PREPARE_ABORT:
            state = TxnState.COMPLETE_ABORT
        else:
            raise TransitionError(f"prepare_complete in state {meta.state.name}")
        target = replace(meta, state=state, partitions=frozenset(), last_update_ms=now_ms)
        self.pending = target
        return target

    # -------------------------------------------------------------- the write's outcome

    def complete(self, target: TxnMetadata) -> None:
        """The append of ``target`` is replicated: it becomes the state, after Kafka's checks."""
        pending = self.pending
        if pending is None or pending != target:
            raise TransitionError(f"completing {target.state.name} while {pending} is pending")
        meta = self.meta
        state = target.state
        ok = True
        if state == TxnState.EMPTY:
            ok = (
                (
                    target.producer_epoch == meta.producer_epoch
                    or target.producer_epoch == meta.producer_epoch + 1
                    or (target.producer_epoch == 0 and target.producer_id != meta.producer_id)
                )
                and not target.partitions
                and target.start_ms == -1
            )
        elif state == TxnState.ONGOING:
            ok = (
                self._same_producer(target)
                and target.partitions >= meta.partitions
                and target.timeout_ms == meta.timeout_ms
            )
        elif state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            ok = (
                (self._same_producer(target) or self._fencing)
                and target.partitions == meta.partitions
                and target.timeout_ms == meta.timeout_ms
                and target.start_ms == meta.start_ms
            )
        elif state in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT):
            ok = (
                self._same_producer(target)
                and target.timeout_ms == meta.timeout_ms
                and target.start_ms != -1
            )
        elif state in (TxnState.PREPARE_EPOCH_FENCE, TxnState.DEAD):
            ok = state == TxnState.DEAD  # Dead completes by removal from the cache
        if not ok:
            raise TransitionError(f"{meta} cannot become {target}")
        self.meta = target
        self.pending = None
        self._fencing = False

    def write_failed(self, target: TxnMetadata) -> None:
        """The append of ``target`` failed: nothing changes but the pending state. A fencing
        bump that failed leaves the epoch as it was, so the next fence bumps to the same epoch
        (Kafka's hasFailedEpochFence, which exists because Kafka bumps its cached epoch before
        the write; this entry never changes before the write completes)."""
        if self.pending != target:
            raise TransitionError(f"{target.state.name} failed while {self.pending} is pending")
        self.pending = None
        self._fencing = False

    # -------------------------------------------------------------- internals

    def _end(
        self, producer_id: int, producer_epoch: int, commit: bool, now_ms: int, *, from_client: bool
    ) -> Decision:
        meta = self.meta
        if meta.producer_id != producer_id:
            return _refuse(Errors.INVALID_PRODUCER_ID_MAPPING)
        if (from_client and producer_epoch != meta.producer_epoch) or (
            producer_epoch < meta.producer_epoch
        ):
            return _refuse(Errors.PRODUCER_FENCED)
        if self.pending is not None:
            return _refuse(Errors.CONCURRENT_TRANSACTIONS)
        state = meta.state
        if state == TxnState.ONGOING:
            target = replace(
                meta,
                producer_epoch=producer_epoch,
                state=TxnState.PREPARE_COMMIT if commit else TxnState.PREPARE_ABORT,
                last_update_ms=now_ms,
            )
            if producer_epoch != meta.producer_epoch:
                target = replace(target, last_producer_epoch=NO_PRODUCER_EPOCH)
            decision = self._prepare(target)
            return replace(decision, markers=TxnResult.COMMIT if commit else TxnResult.ABORT)
        done, preparing = (
            (TxnState.COMPLETE_COMMIT, TxnState.PREPARE_COMMIT)
            if commit
            else (TxnState.COMPLETE_ABORT, TxnState.PREPARE_ABORT)
        )
        if state == done:
            return _refuse(Errors.NONE)  # a retry of an EndTxn that completed
        if state == preparing:
            return _refuse(Errors.CONCURRENT_TRANSACTIONS)
        if state in (
            TxnState.EMPTY,
            TxnState.PREPARE_COMMIT,
            TxnState.PREPARE_ABORT,
            TxnState.COMPLETE_COMMIT,
            TxnState.COMPLETE_ABORT,
        ):
            return _refuse(Errors.INVALID_TXN_STATE)
        raise TransitionError(f"EndTxn in state {state.name}")

    def _fence_and_abort(self, now_ms: int) -> Decision:
        """PrepareEpochFence followed by PrepareAbort, as one write: Kafka never persists the
        fence state itself, only the abort under the bumped epoch."""
        meta = self.meta
        epoch = meta.producer_epoch if meta.producer_epoch >= MAX_EPOCH else meta.producer_epoch + 1
        decision = self._end(meta.producer_id, epoch, False, now_ms, from_client=False)
        if decision.write is None:  # cannot happen from Ongoing without a pending write
            raise TransitionError(f"fencing {meta} refused with {decision.error.name}")
        self._fencing = True
        return replace(decision, error=Errors.CONCURRENT_TRANSACTIONS)

    def _valid_expected_producer(self, producer_id: int, epoch: int) -> bool:
        meta = self.meta
        return (
            meta.producer_epoch == NO_PRODUCER_EPOCH
            or producer_id == meta.producer_id
            or (producer_id == meta.prev_producer_id and epoch_exhausted(epoch))
        )

    def _bumped_epoch(self, expected: tuple[int, int] | None) -> tuple[int, int] | None:
        """(epoch, last epoch) for InitProducerId, or None for PRODUCER_FENCED (KIP-360)."""
        meta = self.meta
        bumped = meta.producer_epoch + 1
        if expected is None:
            return bumped, NO_PRODUCER_EPOCH
        expected_epoch = expected[1]
        if meta.producer_epoch == NO_PRODUCER_EPOCH or expected_epoch == meta.producer_epoch:
            return bumped, meta.producer_epoch
        if expected_epoch == meta.last_producer_epoch:
            # A retry of a bump that succeeded but whose answer was lost.
            return meta.producer_epoch, meta.last_producer_epoch
        return None

    def _same_producer(self, target: TxnMetadata) -> bool:
        return (
            target.producer_epoch == self.meta.producer_epoch
            and target.producer_id == self.meta.producer_id
        )

    def _prepare(self, target: TxnMetadata) -> Decision:
        if self.pending is not None:
            raise TransitionError(f"{target.state.name} while {self.pending.state.name} pending")
        if target.producer_id < 0 or target.producer_epoch < 0:
            raise TransitionError(f"illegal producer id/epoch in {target}")
        if self.meta.state not in VALID_PREVIOUS[target.state]:
            raise TransitionError(f"{self.meta.state.name} cannot become {target.state.name}")
        self.pending = target
        return Decision(Errors.NONE, write=target)


# ---------------------------------------------------------------------- requests for new ids


def check_init_request(transactional_id: str, timeout_ms: int, config: TxnConfig) -> Errors:
    """InitProducerId's checks before any state is read, in Kafka's order."""
    if transactional_id == "":
        return Errors.INVALID_REQUEST
    if timeout_ms <= 0 or timeout_ms > config.max_timeout_ms:
        return Errors.INVALID_TRANSACTION_TIMEOUT
    return Errors.NONE


def new_entry(transactional_id: str, producer_id: int, timeout_ms: int, now_ms: int) -> TxnEntry:
    """The entry InitProducerId creates for an id never seen: epoch -1, so the first bump is 0."""
    return TxnEntry(
        TxnMetadata(
            transactional_id=transactional_id,
            producer_id=producer_id,
            producer_epoch=NO_PRODUCER_EPOCH,
            timeout_ms=timeout_ms,
            state=TxnState.EMPTY,
            last_update_ms=now_ms,
        )
    )


def timed_out(entries: Iterable[TxnEntry], now_ms: int) -> list[TxnEntry]:
    """The entries whose Ongoing transaction has outlived its timeout and nothing pending."""
    return [
        e
        for e in entries
        if e.state == TxnState.ONGOING
        and e.pending is None
        and e.meta.start_ms + e.meta.timeout_ms < now_ms
    ]
