"""The sticky assignors: ``sticky`` (eager, Java's StickyAssignor) and ``cooperative-sticky``
(KIP-429, Java's CooperativeStickyAssignor). Both balance the partitions (member counts differ
by at most one where subscriptions allow) while keeping as many partitions as possible where
they were. Ownership comes from the subscription's owned partitions (cooperative) or from the
StickyAssignorUserData a member sends (eager); only claims of the highest generation count.

The cooperative assignor then leaves out of this round every partition that moves from one
member to another: its owner revokes it first, rejoins, and the next round hands it over.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence

from ...cluster import TopicPartition
from ..consumer_protocol import Assignment, ConsumerProtocolError, _Reader
from .base import AssignorBase, GroupMember, RebalanceProtocol, all_partitions

__all__ = ["CooperativeStickyAssignor", "StickyAssignor", "sticky_assign"]

_I32 = struct.Struct(">i")
_NO_GENERATION = -1


def sticky_assign(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, frozenset[str]],
    owned: Mapping[str, Sequence[TopicPartition]],
) -> dict[str, list[TopicPartition]]:
    """Balanced and sticky: member id -> partitions. ``owned`` holds each member's valid
    previous partitions (already filtered to the winning generation, without duplicates)."""
    members = sorted(subscriptions)
    plan: dict[str, list[TopicPartition]] = {m: [] for m in members}
    if not members:
        return plan
    taken: set[TopicPartition] = set()
    for member in members:
        for tp in owned.get(member, ()):
            count = partitions_per_topic.get(tp.topic)
            if (
                tp.topic in subscriptions[member]
                and count is not None
                and tp.partition < count
                and tp not in taken
            ):
                plan[member].append(tp)
                taken.add(tp)
    topics = set().union(*subscriptions.values())
    everything = all_partitions(partitions_per_topic, topics)
    if len(set(subscriptions.values())) == 1:
        _constrained(plan, everything, taken)
    else:
        _general(plan, subscriptions, everything, taken)
    return plan


def _constrained(
    plan: dict[str, list[TopicPartition]],
    everything: list[TopicPartition],
    taken: set[TopicPartition],
) -> None:
    """Same subscription everywhere: quotas of floor or ceil(P / M); the members keeping the
    most get the larger quotas, each keeps what it owned up to its quota, the rest is dealt
    out in order to whoever is below quota."""
    count = len(plan)
    low, extra = divmod(len(everything), count)
    by_owned = sorted(plan, key=lambda m: (-len(plan[m]), m))
    quota = {m: low + (1 if i < extra else 0) for i, m in enumerate(by_owned)}
    for member, tps in plan.items():
        for tp in tps[quota[member] :]:
            taken.discard(tp)
        del tps[quota[member] :]
    free = iter(tp for tp in everything if tp not in taken)
    while True:
        gave = False
        for member in plan:
            if len(plan[member]) < quota[member]:
                tp = next(free, None)
                if tp is None:
                    return
                plan[member].append(tp)
                gave = True
        if not gave:
            return


def _general(
    plan: dict[str, list[TopicPartition]],
    subscriptions: Mapping[str, frozenset[str]],
    everything: list[TopicPartition],
    taken: set[TopicPartition],
) -> None:
    """Different subscriptions: hand out the free partitions (those with the fewest possible
    consumers first) to the least loaded eligible member, then move partitions from a member
    to an eligible one holding at least two fewer until no such move is left."""
    eligible = {tp: [m for m in plan if tp.topic in subscriptions[m]] for tp in everything}
    free = sorted(
        (tp for tp in everything if tp not in taken), key=lambda tp: (len(eligible[tp]), tp)
    )
    for tp in free:
        if eligible[tp]:
            target = min(eligible[tp], key=lambda m: (len(plan[m]), m))
            plan[target].append(tp)
    # Each move lowers the sum of squared counts, so this ends; the bound is a safety net.
    for _ in range(len(everything) * len(plan) + 1):
        moved = False
        for source in sorted(plan, key=lambda m: (-len(plan[m]), m)):
            for tp in reversed(plan[source]):
                targets = [m for m in eligible[tp] if len(plan[m]) + 1 < len(plan[source])]
                if targets:
                    target = min(targets, key=lambda m: (len(plan[m]), m))
                    plan[source].remove(tp)
                    plan[target].append(tp)
                    moved = True
                    break
            if moved:
                break
        if not moved:
            return


def _valid_owned(
    claims: Mapping[str, tuple[Sequence[TopicPartition], int | None]],
) -> dict[str, list[TopicPartition]]:
    """Keep the claims of the highest generation (claims without a generation count only when
    none has one); a partition claimed twice within it stays with the first claimant."""
    generations = [g for _, g in claims.values() if g is not None]
    top = max(generations) if generations else None
    out: dict[str, list[TopicPartition]] = {}
    seen: set[TopicPartition] = set()
    for member in sorted(claims):
        tps, generation = claims[member]
        out[member] = []
        if generation != top:
            continue
        for tp in tps:
            if tp not in seen:
                seen.add(tp)
                out[member].append(tp)
    return out


def _encode_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    out = [_I32.pack(len(by_topic))]
    for topic, parts in by_topic.items():
        raw = topic.encode("utf-8")
        out.append(struct.pack(">h", len(raw)) + raw + _I32.pack(len(parts)))
        out.extend(_I32.pack(p) for p in parts)
    out.append(_I32.pack(generation))
    return b"".join(out)


def _decode_user_data(data: bytes) -> tuple[list[TopicPartition], int | None]:
    """StickyAssignorUserData v0 (partitions) or v1 (+ generation)."""
    reader = _Reader(data)
    partitions = list(reader.partitions())
    generation = reader.i32() if reader.remaining >= 4 else None
    return partitions, generation


class StickyAssignor(AssignorBase):
    """Eager: members revoke everything before rejoining, so each tells the leader what it had
    (and in which generation) in its user data."""

    name = "sticky"

    def __init__(self) -> None:
        self._last: tuple[list[TopicPartition], int] | None = None

    def subscription_user_data(self, topics: Iterable[str]) -> bytes | None:
        if self._last is None:
            return None
        partitions, generation = self._last
        return _encode_user_data(partitions, generation)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._last = (list(assignment.partitions), generation)

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        claims: dict[str, tuple[Sequence[TopicPartition], int | None]] = {}
        for m in members:
            data = m.subscription.user_data
            try:
                claims[m.member_id] = _decode_user_data(data) if data else ([], None)
            except ConsumerProtocolError:
                claims[m.member_id] = ([], None)
        return sticky_assign(
            partitions_per_topic,
            {m.member_id: frozenset(m.subscription.topics) for m in members},
            _valid_owned(claims),
        )


class CooperativeStickyAssignor(AssignorBase):
    name = "cooperative-sticky"
    protocols = (RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER)

    def assign(
        self, partitions_per_topic: Mapping[str, int], members: Sequence[GroupMember]
    ) -> dict[str, list[TopicPartition]]:
        claims: dict[str, tuple[Sequence[TopicPartition], int | None]] = {}
        for m in members:
            sub = m.subscription
            generation: int | None = sub.generation_id if sub.generation_id >= 0 else None
            if generation is None and sub.user_data and len(sub.user_data) >= 4:
                # Pre-v2 subscriptions carried the generation as the user data.
                generation = _I32.unpack_from(sub.user_data)[0]
            claims[m.member_id] = (sub.owned_partitions, generation)
        owned = _valid_owned(claims)
        plan = sticky_assign(
            partitions_per_topic,
            {m.member_id: frozenset(m.subscription.topics) for m in members},
            owned,
        )
        # A partition that changes hands is left out this round: its owner revokes it first.
        owner = {tp: mid for mid, tps in owned.items() for tp in tps}
        for member_id, tps in plan.items():
            plan[member_id] = [tp for tp in tps if owner.get(tp, member_id) == member_id]
        return plan
