"""What every partition assignor shares: the member view the group leader assigns from, the
rebalance protocols (eager, cooperative), and Java's member order (static members by
group.instance.id first, then dynamic members by member id)."""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from ...cluster import TopicPartition
from ..consumer_protocol import Assignment, Subscription

__all__ = [
    "Assignor",
    "GroupMember",
    "RebalanceProtocol",
    "all_partitions",
    "member_order",
]


class RebalanceProtocol(enum.Enum):
    EAGER = "eager"  # every member gives up everything before rejoining
    COOPERATIVE = "cooperative"  # KIP-429: members keep what they are assigned again


@dataclass(frozen=True)
class GroupMember:
    member_id: str
    group_instance_id: str | None
    subscription: Subscription


class Assignor(Protocol):
    """One assignment strategy, named by its JoinGroup protocol name."""

    name: str
    protocols: tuple[RebalanceProtocol, ...]

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        """User data this member sends in its subscription."""
        ...

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        """The leader's plan: member id -> partitions (every member has an entry)."""
        ...

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        """This member received ``assignment`` in ``generation``."""
        ...


class AssignorBase:
    """Defaults for assignors that keep no state between rebalances."""

    name = ""
    protocols: tuple[RebalanceProtocol, ...] = (RebalanceProtocol.EAGER,)

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        return None

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        return None


def member_order(member: GroupMember) -> tuple[int, str]:
    """Java's MemberInfo order: static members (by instance id) before dynamic ones (by id)."""
    if member.group_instance_id is not None:
        return (0, member.group_instance_id)
    return (1, member.member_id)


def all_partitions(
    partitions_per_topic: Mapping[str, int], topics: Iterable[str] | None = None
) -> list[TopicPartition]:
    """Every partition of ``topics`` (default: all) that has metadata, sorted."""
    names = partitions_per_topic if topics is None else topics
    return sorted(
        TopicPartition(t, p)
        for t in set(names)
        if t in partitions_per_topic
        for p in range(partitions_per_topic[t])
    )
