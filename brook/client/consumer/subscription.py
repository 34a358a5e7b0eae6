"""What the consumer reads and from where: the subscription (topics, a pattern, or partitions
assigned by the user), each assigned partition's position, pause flag and pending offset
reset, and the fetch metadata the broker last reported. Plain state, as Java's
SubscriptionState; the consumer and the fetcher drive it."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..admin.types import OffsetSpec
from ..cluster import TopicPartition

__all__ = [
    "FetchState",
    "PartitionState",
    "SubscriptionState",
    "SubscriptionType",
    "reset_spec",
]


class SubscriptionType(enum.Enum):
    NONE = "none"
    AUTO_TOPICS = "topics"
    AUTO_PATTERN = "pattern"
    USER_ASSIGNED = "assigned"


class FetchState(enum.Enum):
    INITIALIZING = "initializing"  # no position yet: committed offset or reset policy decides
    FETCHING = "fetching"  # has a valid position
    AWAIT_RESET = "await_reset"  # a ListOffsets lookup will set the position


def reset_spec(policy: str) -> int | None:
    """auto.offset.reset as a ListOffsets timestamp: earliest -2, latest -1, none None."""
    return {"earliest": int(OffsetSpec.EARLIEST), "latest": int(OffsetSpec.LATEST)}.get(policy)


class PartitionState:
    """One assigned partition. ``position`` is the offset of the next record to return."""

    __slots__ = (
        "fetch_state",
        "high_watermark",
        "last_stable_offset",
        "log_start_offset",
        "paused",
        "position",
        "position_epoch",
        "reset_spec",
    )

    def __init__(self) -> None:
        self.fetch_state = FetchState.INITIALIZING
        self.position: int | None = None
        self.position_epoch = -1  # leader epoch of the last record returned
        self.paused = False
        self.reset_spec: int | None = None
        self.high_watermark = -1
        self.last_stable_offset = -1
        self.log_start_offset = -1

    def __repr__(self) -> str:
        return (
            f"<PartitionState {self.fetch_state.value} position={self.position} "
            f"paused={self.paused}>"
        )


class SubscriptionState:
    """The consumer's subscription and assignment; ``default_reset`` is auto.offset.reset."""

    def __init__(self, default_reset: str = "latest") -> None:
        self.default_reset = default_reset
        self.type = SubscriptionType.NONE
        self.topics: frozenset[str] = frozenset()  # subscribed names, or the pattern's matches
        self.pattern: re.Pattern[str] | None = None
        self.listener: Any = None
        self._assignment: dict[TopicPartition, PartitionState] = {}
        # Bumped on every assignment change, so in-flight results for an old one are dropped.
        self.assignment_id = 0

    # -- subscribing -----------------------------------------------------------------------

    def _set_type(self, kind: SubscriptionType) -> None:
        if self.type not in (SubscriptionType.NONE, kind):
            raise ValueError(
                "subscription to topics, partitions and pattern are mutually exclusive: "
                f"this consumer already uses {self.type.value}; call unsubscribe() first"
            )
        self.type = kind

    def assign_from_user(self, partitions: Iterable[tuple[str, int]]) -> bool:
        """Manual assignment; keeps the state of partitions that stay. True if it changed."""
        tps = [TopicPartition(*tp) for tp in partitions]
        for tp in tps:
            if not isinstance(tp.topic, str) or not tp.topic.strip():
                raise ValueError(f"topic name of {tp!r} is empty")
        if not tps:
            self.unsubscribe()
            return True
        self._set_type(SubscriptionType.USER_ASSIGNED)
        return self._set_assignment(tps)

    def subscribe(self, topics: Iterable[str], listener: Any = None) -> bool:
        """Subscribe to topic names (the group coordinator assigns partitions)."""
        names = frozenset(topics)
        for name in names:
            if not isinstance(name, str) or not name.strip():
                raise ValueError(f"topic name {name!r} is empty")
        if not names:
            self.unsubscribe()
            return True
        self._set_type(SubscriptionType.AUTO_TOPICS)
        self.listener = listener
        changed = names != self.topics
        self.topics = names
        return changed

    def subscribe_pattern(self, pattern: str | re.Pattern[str], listener: Any = None) -> None:
        """Subscribe to every topic whose whole name matches ``pattern``."""
        self._set_type(SubscriptionType.AUTO_PATTERN)
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.listener = listener
        self.topics = frozenset()

    def match_topics(self, topics: Mapping[str, bool], exclude_internal: bool = True) -> bool:
        """Pattern subscriptions: take the matching names of ``topics`` (name -> is internal).
        True when the matched set changed."""
        if self.pattern is None:
            return False
        matched = frozenset(
            name
            for name, internal in topics.items()
            if self.pattern.fullmatch(name) and not (internal and exclude_internal)
        )
        changed = matched != self.topics
        self.topics = matched
        return changed

    def unsubscribe(self) -> None:
        self.type = SubscriptionType.NONE
        self.topics = frozenset()
        self.pattern = None
        self.listener = None
        self._set_assignment([])

    def assign_from_subscribed(self, partitions: Iterable[tuple[str, int]]) -> None:
        """The group coordinator's assignment for a topic or pattern subscription."""
        if self.type not in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN):
            raise ValueError("assign_from_subscribed needs a topic or pattern subscription")
        tps = [TopicPartition(*tp) for tp in partitions]
        foreign = [tp for tp in tps if tp.topic not in self.topics]
        if foreign:
            raise ValueError(f"assigned partitions {foreign} are not in the subscription")
        self._set_assignment(tps)

    def _set_assignment(self, tps: list[TopicPartition]) -> bool:
        old = self._assignment
        if list(old) == tps:
            return False
        self._assignment = {tp: old.get(tp) or PartitionState() for tp in tps}
        self.assignment_id += 1
        return True

    # -- queries ---------------------------------------------------------------------------

    @property
    def assignment(self) -> list[TopicPartition]:
        return list(self._assignment)

    @property
    def has_auto_assignment(self) -> bool:
        return self.type in (SubscriptionType.AUTO_TOPICS, SubscriptionType.AUTO_PATTERN)

    def is_assigned(self, tp: tuple[str, int]) -> bool:
        return tp in self._assignment

    def state(self, tp: tuple[str, int]) -> PartitionState:
        state = self._assignment.get(tp)  # type: ignore[call-overload]
        if state is None:
            raise ValueError(f"no current assignment for partition {tp[0]}-{tp[1]}")
        return state

    def states(self) -> Mapping[TopicPartition, PartitionState]:
        return self._assignment

    def position(self, tp: tuple[str, int]) -> int | None:
        return self.state(tp).position

    def fetchable(
        self, can_fetch: Callable[[TopicPartition], bool] | None = None
    ) -> list[TopicPartition]:
        """Partitions with a valid position that are not paused (and pass ``can_fetch``)."""
        return [
            tp
            for tp, s in self._assignment.items()
            if s.fetch_state is FetchState.FETCHING
            and not s.paused
            and (can_fetch is None or can_fetch(tp))
        ]

    def initializing(self) -> list[TopicPartition]:
        """Partitions that still need a starting position."""
        return [
            tp for tp, s in self._assignment.items() if s.fetch_state is FetchState.INITIALIZING
        ]

    def awaiting_reset(self) -> dict[TopicPartition, int]:
        """Partitions waiting for a ListOffsets lookup, with the timestamp spec to look up."""
        return {
            tp: s.reset_spec
            for tp, s in self._assignment.items()
            if s.fetch_state is FetchState.AWAIT_RESET and s.reset_spec is not None
        }

    @property
    def paused(self) -> list[TopicPartition]:
        return [tp for tp, s in self._assignment.items() if s.paused]

    # -- positions -------------------------------------------------------------------------

    def seek(self, tp: tuple[str, int], offset: int, epoch: int = -1) -> None:
        if offset < 0:
            raise ValueError(f"seek offset must not be negative, got {offset}")
        state = self.state(tp)
        state.position = int(offset)
        state.position_epoch = epoch
        state.reset_spec = None
        state.fetch_state = FetchState.FETCHING

    def advance(self, tp: tuple[str, int], offset: int, epoch: int) -> None:
        """The fetcher handed out records up to ``offset`` - 1."""
        state = self._assignment[tp]  # type: ignore[index]
        state.position = offset
        if epoch >= 0:
            state.position_epoch = epoch

    def request_reset(self, tp: tuple[str, int], spec: int | None = None) -> None:
        """Look up the position again: ``spec`` is a ListOffsets timestamp (default: the
        auto.offset.reset policy; ValueError if that is none)."""
        if spec is None:
            spec = reset_spec(self.default_reset)
            if spec is None:
                raise ValueError("auto.offset.reset is none")
        state = self.state(tp)
        state.reset_spec = spec
        state.fetch_state = FetchState.AWAIT_RESET

    def complete_reset(self, tp: tuple[str, int], spec: int, offset: int, epoch: int) -> bool:
        """Apply a lookup result if the partition still waits for that same lookup."""
        state = self._assignment.get(tp)  # type: ignore[call-overload]
        if state is None or state.fetch_state is not FetchState.AWAIT_RESET:
            return False
        if state.reset_spec != spec:
            return False
        self.seek(tp, offset, epoch)
        return True

    def pause(self, tps: Iterable[tuple[str, int]]) -> None:
        for tp in tps:
            self.state(tp).paused = True

    def resume(self, tps: Iterable[tuple[str, int]]) -> None:
        for tp in tps:
            self.state(tp).paused = False

    def update_fetch_info(
        self, tp: tuple[str, int], high_watermark: int, last_stable_offset: int, log_start: int
    ) -> None:
        state = self._assignment.get(tp)  # type: ignore[call-overload]
        if state is None:
            return
        if high_watermark >= 0:
            state.high_watermark = high_watermark
        if last_stable_offset >= 0:
            state.last_stable_offset = last_stable_offset
        if log_start >= 0:
            state.log_start_offset = log_start
