"""Where consumer-group membership plugs into the consumer: the GroupCoordinator protocol and
the context a coordinator is made from. With a group.id the consumer uses Brook's own
(``group_coordinator.ConsumerGroupCoordinator``) unless another factory is given
(``AsyncConsumer(config, coordinator_factory=...)``).

The consumer calls, all on its event loop:

- ``await poll(now_ms, timeout_ms)`` before every fetch round of poll(): heartbeats, joins and
  rebalances happen here; a new assignment is installed with
  ``subscriptions.assign_from_subscribed(partitions)`` (the rebalance listener in
  ``subscriptions.listener`` is the coordinator's to call). Returning quickly matters: it
  runs on every poll(), and must not take longer than ``timeout_ms`` (what is left of the
  poll's timeout): work that does not fit is left for the next poll().
- ``await committed(partitions, timeout_ms)``: committed offsets (None where there is none),
  used for the starting position of partitions that have none, before auto.offset.reset.
- ``await commit_sync(offsets, timeout_ms)`` / ``commit_async(offsets, callback)``: commit
  ``{tp: OffsetAndMetadata}``; the callback gets (offsets, exception or None).
- ``await on_unsubscribe()``: unsubscribe() was called (the listener hears of the partitions
  going away, then the member leaves the group).
- ``await on_close(timeout_ms)``: the consumer is closing (final auto-commit, LeaveGroup).

The coordinator reads consumed positions from ``subscriptions.states()`` for auto-commit, and
calls ``context.wake()`` when something happened in the background that poll() should act
on (a rebalance finished), so a waiting poll() comes round at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from ..cluster import TopicPartition
from ..network import NetworkClient
from .subscription import FetchState, SubscriptionState

__all__ = [
    "CommitCallback",
    "ConsumerGroupMetadata",
    "CoordinatorContext",
    "CoordinatorFactory",
    "GroupCoordinator",
    "OffsetAndMetadata",
    "consumed_offsets",
]


@dataclass(frozen=True, slots=True)
class OffsetAndMetadata:
    """A committed position: the offset of the next record to read, with its metadata."""

    offset: int
    metadata: str = ""
    leader_epoch: int = -1


def consumed_offsets(subscriptions: SubscriptionState) -> dict[TopicPartition, OffsetAndMetadata]:
    """The positions to commit (Java's allConsumed): partitions with a valid position, not
    those waiting for an offset reset or a committed-offset lookup."""
    return {
        tp: OffsetAndMetadata(s.position, "", s.position_epoch)
        for tp, s in subscriptions.states().items()
        if s.position is not None and s.fetch_state is FetchState.FETCHING
    }


@dataclass(frozen=True, slots=True)
class ConsumerGroupMetadata:
    """What TxnOffsetCommit needs of the consumer whose offsets it commits (Java's
    ConsumerGroupMetadata, from ``consumer.group_metadata()``): the broker refuses offsets of
    a member that is no longer in the group's current generation, so a consumer that lost its
    partitions cannot commit for them."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


CommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], BaseException | None], Any]


class GroupCoordinator(Protocol):
    async def poll(self, now_ms: float, timeout_ms: float) -> None: ...

    async def committed(
        self, partitions: Iterable[TopicPartition], timeout_ms: int
    ) -> dict[TopicPartition, OffsetAndMetadata | None]: ...

    async def commit_sync(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata], timeout_ms: int
    ) -> None: ...

    def commit_async(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        callback: CommitCallback | None = None,
    ) -> None: ...

    async def on_unsubscribe(self) -> None: ...

    async def on_close(self, timeout_ms: int) -> None: ...


@dataclass(frozen=True)
class CoordinatorContext:
    """What a coordinator is built from: the parsed consumer config (group.id, session and
    heartbeat settings, assignors, auto-commit), the consumer's network client, its
    subscription state, and a callback that wakes a waiting poll()."""

    config: Mapping[str, Any]
    network: NetworkClient
    subscriptions: SubscriptionState
    wake: Callable[[], None] = lambda: None


CoordinatorFactory = Callable[[CoordinatorContext], GroupCoordinator]
