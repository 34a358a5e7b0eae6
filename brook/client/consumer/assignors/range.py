"""The range assignor (``range``, Java's RangeAssignor): per topic, the members subscribed to it
in member order each take a consecutive range; the first ``partitions % members`` take one
more. Two topics of three partitions over C0, C1: C0 gets t0-0, t0-1, t1-0, t1-1; C1 gets
t0-2, t1-2."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from ...cluster import TopicPartition
from .base import AssignorBase, GroupMember, member_order

__all__ = ["RangeAssignor"]


class RangeAssignor(AssignorBase):
    name = "range"

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        plan: dict[str, list[TopicPartition]] = {m.member_id: [] for m in members}
        by_topic: dict[str, list[GroupMember]] = {}
        for member in members:
            for topic in set(member.subscription.topics):
                by_topic.setdefault(topic, []).append(member)
        for topic in sorted(by_topic):
            count = partitions_per_topic.get(topic)
            if count is None:
                continue  # no metadata for it: nothing to hand out
            consumers = sorted(by_topic[topic], key=member_order)
            per, extra = divmod(count, len(consumers))
            for i, member in enumerate(consumers):
                start = per * i + min(i, extra)
                length = per + (1 if i < extra else 0)
                plan[member.member_id].extend(
                    TopicPartition(topic, p) for p in range(start, start + length)
                )
        return plan
