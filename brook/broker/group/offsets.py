"""A group's committed offsets as the coordinator caches them, kept in the order of the log so
the cache always equals what a replay of ``__consumer_offsets`` would give.

Offsets committed inside a transaction (TxnOffsetCommit) are held per producer id until the
transaction's marker reaches ``__consumer_offsets``: a COMMIT applies them (unless a later
record of the log already set the partition), an ABORT drops them (Kafka's
pendingTransactionalOffsetCommits). Until then the partition is unstable (KIP-447's
UNSTABLE_OFFSET_COMMIT for an OffsetFetch that requires stable offsets).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

from .store import OffsetAndMetadata

TopicPartition = tuple[str, int]


class OffsetCache:
    def __init__(self) -> None:
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        self._positions: dict[TopicPartition, int] = {}
        self._pending: Counter[TopicPartition] = Counter()
        # producer id -> partition -> (offset, log position) written inside a transaction
        self._txn: dict[int, dict[TopicPartition, tuple[OffsetAndMetadata, int]]] = {}

    def __len__(self) -> int:
        return len(self.offsets)

    def get(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        return self.offsets.get(tp)

    def items(self) -> Iterable[tuple[TopicPartition, OffsetAndMetadata]]:
        return self.offsets.items()

    @property
    def has_any(self) -> bool:
        """Offsets held or being written (transactional ones included)."""
        return bool(self.offsets) or bool(self._pending) or bool(self._txn)

    def begin_commit(self, tps: Iterable[TopicPartition]) -> None:
        """Offsets being written are not expired under the writer's feet."""
        for tp in tps:
            self._pending[tp] += 1

    def end_commit(
        self, committed: Mapping[TopicPartition, OffsetAndMetadata], first_position: int | None
    ) -> None:
        """Finish a commit; ``first_position`` is the log offset of its first record (records
        follow in ``committed``'s order), or None when the write failed."""
        self._written(committed)
        if first_position is None:
            return
        for i, (tp, value) in enumerate(committed.items()):
            self.apply(tp, value, first_position + i)

    def _written(self, tps: Iterable[TopicPartition]) -> None:
        """A write ``begin_commit`` announced has ended (either way)."""
        for tp in tps:
            self._pending[tp] -= 1
            if self._pending[tp] <= 0:
                del self._pending[tp]

    # -------------------------------------------------------------- transactions
    def end_txn_commit(
        self,
        producer_id: int,
        committed: Mapping[TopicPartition, OffsetAndMetadata],
        first_position: int | None,
    ) -> None:
        """Finish a TxnOffsetCommit's write (``begin_commit`` first): its offsets wait for the
        transaction's marker. None: the write failed, nothing waits."""
        self._written(committed)
        if first_position is None:
            return
        held = self._txn.setdefault(producer_id, {})
        for i, (tp, value) in enumerate(committed.items()):
            held[tp] = (value, first_position + i)

    def complete_txn(self, producer_id: int, commit: bool) -> list[TopicPartition]:
        """The transaction of ``producer_id`` ended (its marker is in the log): apply its
        offsets on COMMIT, drop them on ABORT; returns the partitions it held."""
        held = self._txn.pop(producer_id, {})
        if commit:
            for tp, (value, position) in held.items():
                self.apply(tp, value, position)
        return list(held)

    def has_pending_txn(self, tp: TopicPartition) -> bool:
        """Whether an undecided transaction committed an offset for ``tp``."""
        return any(tp in held for held in self._txn.values())

    def apply(self, tp: TopicPartition, value: OffsetAndMetadata | None, position: int) -> None:
        """Apply the record at log offset ``position`` unless a later one already applied."""
        if position < self._positions.get(tp, -1):
            return
        if value is None:
            self.offsets.pop(tp, None)
            self._positions.pop(tp, None)
        else:
            self.offsets[tp] = value
            self._positions[tp] = position

    def remove(self, tps: Iterable[TopicPartition]) -> list[TopicPartition]:
        removed = []
        for tp in tps:
            if self.offsets.pop(tp, None) is not None:
                self._positions.pop(tp, None)
                removed.append(tp)
        return removed

    def expire(
        self,
        now_ms: int,
        retention_ms: int,
        base: Callable[[OffsetAndMetadata], int],
        keep_topics: set[str] | frozenset[str] = frozenset(),
    ) -> list[TopicPartition]:
        """Remove offsets older than ``retention_ms`` counted from ``base(offset)`` (or past
        their explicit expire timestamp), except for ``keep_topics`` and pending commits."""
        gone = []
        for tp, value in self.offsets.items():
            if tp[0] in keep_topics or self._pending.get(tp) or self.has_pending_txn(tp):
                continue
            if value.expire_timestamp is not None:
                if now_ms >= value.expire_timestamp:
                    gone.append(tp)
            elif now_ms - base(value) >= retention_ms:
                gone.append(tp)
        return self.remove(gone)
