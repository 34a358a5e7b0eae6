"""The assignors against Kafka's documented examples (RangeAssignor, RoundRobinAssignor and
StickyAssignor javadocs) and the properties the sticky ones promise: balance, stickiness,
generation fencing, and KIP-429's two-step hand-over for cooperative-sticky."""

from __future__ import annotations

import random

import pytest

from brook.client.cluster import TopicPartition
from brook.client.consumer.assignors import (
    CooperativeStickyAssignor,
    GroupMember,
    RangeAssignor,
    RebalanceProtocol,
    RoundRobinAssignor,
    StickyAssignor,
    rebalance_protocol,
    resolve_assignors,
)
from brook.client.consumer.consumer_protocol import Assignment, Subscription
from brook.config.defs import ConfigError


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


def member(
    member_id: str,
    *topics: str,
    owned: tuple[TopicPartition, ...] = (),
    generation: int = -1,
    user_data: bytes | None = None,
    instance: str | None = None,
) -> GroupMember:
    return GroupMember(member_id, instance, Subscription(topics, user_data, owned, generation))


def test_range_gives_each_member_a_consecutive_range_per_topic() -> None:
    plan = RangeAssignor().assign(
        {"t0": 3, "t1": 3}, [member("C1", "t0", "t1"), member("C0", "t0", "t1")]
    )
    assert plan == {
        "C0": [tp("t0", 0), tp("t0", 1), tp("t1", 0), tp("t1", 1)],
        "C1": [tp("t0", 2), tp("t1", 2)],
    }


def test_range_orders_static_members_first_by_instance_id() -> None:
    members = [member("a", "t", instance="z"), member("b", "t"), member("c", "t", instance="y")]
    plan = RangeAssignor().assign({"t": 3}, members)
    assert plan == {"c": [tp("t", 0)], "a": [tp("t", 1)], "b": [tp("t", 2)]}


def test_roundrobin_deals_sorted_partitions_in_turn() -> None:
    plan = RoundRobinAssignor().assign(
        {"t0": 3, "t1": 3}, [member("C0", "t0", "t1"), member("C1", "t0", "t1")]
    )
    assert plan == {
        "C0": [tp("t0", 0), tp("t0", 2), tp("t1", 1)],
        "C1": [tp("t0", 1), tp("t1", 0), tp("t1", 2)],
    }


def test_roundrobin_skips_members_not_subscribed() -> None:
    members = [member("C0", "t0"), member("C1", "t0", "t1"), member("C2", "t0", "t1", "t2")]
    plan = RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, members)
    assert plan == {
        "C0": [tp("t0", 0)],
        "C1": [tp("t1", 0)],
        "C2": [tp("t1", 1), tp("t2", 0), tp("t2", 1), tp("t2", 2)],
    }


FOUR_TOPICS = {"t0": 2, "t1": 2, "t2": 2, "t3": 2}


def test_sticky_example_one_balances_then_keeps_partitions_when_a_member_leaves() -> None:
    topics = tuple(FOUR_TOPICS)
    assignor = StickyAssignor()
    first = assignor.assign(FOUR_TOPICS, [member(c, *topics) for c in ("C0", "C1", "C2")])
    assert first == {
        "C0": [tp("t0", 0), tp("t1", 1), tp("t3", 0)],
        "C1": [tp("t0", 1), tp("t2", 0), tp("t3", 1)],
        "C2": [tp("t1", 0), tp("t2", 1)],
    }
    # C1 leaves; C0 and C2 tell the leader what they had (StickyAssignorUserData).
    members = []
    for name in ("C0", "C2"):
        a = StickyAssignor()
        a.on_assignment(Assignment(tuple(first[name])), 1)
        members.append(member(name, *topics, user_data=a.subscription_user_data(topics)))
    second = assignor.assign(FOUR_TOPICS, members)
    assert set(first["C0"]) <= set(second["C0"]) and set(first["C2"]) <= set(second["C2"])
    assert sorted(len(v) for v in second.values()) == [4, 4]
    assert sorted(second["C0"] + second["C2"]) == sorted(tp(t, p) for t in topics for p in (0, 1))


def test_sticky_example_two_unequal_subscriptions() -> None:
    parts = {"t0": 1, "t1": 2, "t2": 3}
    members = [member("C0", "t0"), member("C1", "t0", "t1"), member("C2", "t0", "t1", "t2")]
    first = StickyAssignor().assign(parts, members)
    assert first == {
        "C0": [tp("t0", 0)],
        "C1": [tp("t1", 0), tp("t1", 1)],
        "C2": [tp("t2", 0), tp("t2", 1), tp("t2", 2)],
    }
    # C0 leaves: only t0-0 moves.
    owned = [
        member("C1", "t0", "t1", owned=tuple(first["C1"]), generation=1),
        member("C2", "t0", "t1", "t2", owned=tuple(first["C2"]), generation=1),
    ]
    second = CooperativeStickyAssignor().assign(parts, owned)
    assert second == {
        "C1": [tp("t1", 0), tp("t1", 1), tp("t0", 0)],
        "C2": [tp("t2", 0), tp("t2", 1), tp("t2", 2)],
    }


def test_cooperative_sticky_hands_a_partition_over_in_two_rounds() -> None:
    assignor = CooperativeStickyAssignor()
    parts = {"t": 3}
    owned = (tp("t", 0), tp("t", 1), tp("t", 2))
    first = assignor.assign(parts, [member("A", "t", owned=owned, generation=4), member("B", "t")])
    # B's partition still belongs to A: it is left out until A has revoked it.
    assert first == {"A": [tp("t", 0), tp("t", 1)], "B": []}
    second = assignor.assign(
        parts,
        [member("A", "t", owned=tuple(first["A"]), generation=5), member("B", "t", generation=5)],
    )
    assert second == {"A": [tp("t", 0), tp("t", 1)], "B": [tp("t", 2)]}


def test_sticky_ignores_claims_of_an_older_generation() -> None:
    claims = [
        member("A", "t", owned=(tp("t", 0), tp("t", 1)), generation=3),
        member("B", "t", owned=(tp("t", 0),), generation=2),  # a zombie's stale claim
    ]
    plan = CooperativeStickyAssignor().assign({"t": 2}, claims)
    assert plan == {"A": [tp("t", 0)], "B": []}  # t-1 moves from A: held back a round


@pytest.mark.parametrize("seed", range(20))
def test_sticky_is_balanced_and_keeps_what_it_can(seed: int) -> None:
    rng = random.Random(seed)
    parts = {f"t{i}": rng.randint(1, 8) for i in range(rng.randint(1, 4))}
    names = [f"m{i}" for i in range(rng.randint(1, 7))]
    topics = tuple(parts)
    plan = StickyAssignor().assign(parts, [member(n, *topics) for n in names])
    everything = sorted(tp(t, p) for t, n in parts.items() for p in range(n))
    assert sorted(x for v in plan.values() for x in v) == everything
    counts = [len(v) for v in plan.values()]
    assert max(counts) - min(counts) <= 1
    # One member leaves, another joins: the others keep everything up to the new quota.
    gone, fresh = names[0], "new"
    rest = [n for n in names if n != gone]
    members = [member(n, *topics, owned=tuple(plan[n]), generation=1) for n in rest]
    members.append(member(fresh, *topics))
    after = CooperativeStickyAssignor().assign(parts, members)
    quota = len(everything) // len(members)
    for n in rest:
        kept = set(plan[n]) & set(after[n])
        assert len(kept) >= min(len(plan[n]), quota)


def test_strategy_names_and_rebalance_protocol() -> None:
    java = "org.apache.kafka.clients.consumer."
    names = [a.name for a in resolve_assignors([java + "RangeAssignor", "cooperative-sticky"])]
    assert names == ["range", "cooperative-sticky"]
    assert (
        rebalance_protocol(resolve_assignors(["range", "cooperative-sticky"]))
        is RebalanceProtocol.EAGER
    )
    assert (
        rebalance_protocol(resolve_assignors(["cooperative-sticky"]))
        is RebalanceProtocol.COOPERATIVE
    )
    with pytest.raises(ConfigError, match="unknown assignor"):
        resolve_assignors(["fair"])
    with pytest.raises(ConfigError, match="twice"):
        resolve_assignors(["range", java + "RangeAssignor"])
