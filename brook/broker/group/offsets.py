"""A group's committed offsets as the coordinator caches them, kept in the order of the log so
the cache always equals what a replay of ``__consumer_offsets`` would give.
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

    def __len__(self) -> int:
        return len(self.offsets)

    def get(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        return self.offsets.get(tp)

    def items(self) -> Iterable[tuple[TopicPartition, OffsetAndMetadata]]:
        return self.offsets.items()

    @property
    def has_any(self) -> bool:
        """Offsets held or being written."""
        return bool(self.offsets) or bool(self._pending)

    def begin_commit(self, tps: Iterable[TopicPartition]) -> None:
        """Offsets being written are not expired under the writer's feet."""
        for tp in tps:
            self._pending[tp] += 1

    def end_commit(
        self, committed: Mapping[TopicPartition, OffsetAndMetadata], first_position: int | None
    ) -> None:
        """Finish a commit; ``first_position`` is the log offset of its first record (records
        follow in ``committed``'s order), or None when the write failed."""
        for tp in committed:
            self._pending[tp] -= 1
            if self._pending[tp] <= 0:
                del self._pending[tp]
        if first_position is None:
            return
        for i, (tp, value) in enumerate(committed.items()):
            self.apply(tp, value, first_position + i)

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
            if tp[0] in keep_topics or self._pending.get(tp):
                continue
            if value.expire_timestamp is not None:
                if now_ms >= value.expire_timestamp:
                    gone.append(tp)
            elif now_ms - base(value) >= retention_ms:
                gone.append(tp)
        return self.remove(gone)
