"""The round-robin assignor (``roundrobin``, Java's RoundRobinAssignor): every partition of
every subscribed topic, sorted, dealt in turn to the members in member order, skipping a
member not subscribed to the partition's topic. Two topics of three partitions over C0, C1:
C0 gets t0-0, t0-2, t1-1; C1 gets t0-1, t1-0, t1-2."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...cluster import TopicPartition
from .base import AssignorBase, GroupMember, all_partitions, member_order

__all__ = ["RoundRobinAssignor"]


class RoundRobinAssignor(AssignorBase):
    name = "roundrobin"

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        plan: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        ordered = sorted(members, key=member_order)
        if not ordered:
            return plan
        topics = {t for m in members for t in m.subscription.topics}
        turn = 0
        for tp in all_partitions(partitions_per_topic, topics):
            for _ in range(len(ordered)):
                member = ordered[turn % len(ordered)]
                turn += 1
                if tp.topic in member.subscription.topics:
                    plan[member.member_id].append(tp)
                    break
        return plan
