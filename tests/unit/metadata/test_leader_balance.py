"""Automatic leader balancing: which partitions are elected, the bound per check, and when the
checks run, under a simulated clock."""

from __future__ import annotations

import uuid

from brook.metadata.image import MetadataImage
from brook.metadata.leader_balance import (
    IMMEDIATE_DELAY_MS,
    LeaderBalancer,
    balance_leaders,
    imbalanced,
)
from brook.metadata.records import (
    BrokerRegistrationChangeRecord,
    Endpoint,
    PartitionRecord,
    RegisterBrokerRecord,
    TopicRecord,
)

INTERVAL_MS = 300_000


def _image(partitions: list[tuple[tuple[int, ...], tuple[int, ...], int]]) -> MetadataImage:
    """Brokers 1-3, unfenced; topic ``t`` with (replicas, isr, leader) per partition."""
    image = MetadataImage()
    offset = 0
    for b in (1, 2, 3):
        offset += 1
        ep = (Endpoint("PLAINTEXT", "h", 9000 + b),)
        image.apply(RegisterBrokerRecord(b, uuid.uuid4(), offset, ep, fenced=False), offset)
    topic_id = uuid.uuid4()
    offset += 1
    image.apply(TopicRecord("t", topic_id), offset)
    for p, (replicas, isr, leader) in enumerate(partitions):
        offset += 1
        image.apply(PartitionRecord(topic_id, p, replicas, isr, leader), offset)
    return image


def _acceptable(image: MetadataImage):  # type: ignore[no-untyped-def]
    def acceptable(b: int) -> bool:
        broker = image.brokers.get(b)
        return broker is not None and not broker.fenced and not broker.in_controlled_shutdown

    return acceptable


def _apply(image: MetadataImage, records: list) -> None:  # type: ignore[type-arg]
    for record in records:
        image.apply(record, image.offset + 1)


def test_preferred_replica_in_isr_is_elected_others_are_left() -> None:
    image = _image(
        [
            ((1, 2, 3), (1, 2, 3), 2),  # preferred 1 in the ISR: elected
            ((2, 3, 1), (3, 1), 3),  # preferred 2 not in the ISR: left alone
            ((3, 1, 2), (3, 1, 2), 3),  # balanced already
        ]
    )
    assert [info.partition for _, info in imbalanced(image)] == [0, 1]
    records, more = balance_leaders(image, _acceptable(image))
    assert not more
    assert [(r.partition_id, r.leader) for r in records] == [(0, 1)]
    _apply(image, records)
    assert image.partition("t", 0).leader == 1  # type: ignore[union-attr]
    assert [info.partition for _, info in imbalanced(image)] == [1]


def test_fenced_or_shutting_down_preferred_replica_is_not_elected() -> None:
    image = _image([((1, 2, 3), (1, 2, 3), 2), ((3, 1, 2), (3, 1, 2), 2)])
    image.apply(BrokerRegistrationChangeRecord(1, 1, fenced=True), image.offset + 1)
    image.apply(BrokerRegistrationChangeRecord(3, 3, in_controlled_shutdown=True), image.offset + 1)
    records, more = balance_leaders(image, _acceptable(image))
    assert records == [] and not more


def test_elections_are_bounded_per_check() -> None:
    image = _image([((1, 2), (1, 2), 2)] * 5)
    records, more = balance_leaders(image, _acceptable(image), limit=2)
    assert [r.partition_id for r in records] == [0, 1] and more
    _apply(image, records)
    records, more = balance_leaders(image, _acceptable(image), limit=2)
    assert [r.partition_id for r in records] == [2, 3] and more
    _apply(image, records)
    records, more = balance_leaders(image, _acceptable(image), limit=2)
    assert [r.partition_id for r in records] == [4] and not more


def test_schedule_waits_an_interval_then_runs() -> None:
    image = _image([((1, 2, 3), (1, 2, 3), 2)])
    balancer = LeaderBalancer(INTERVAL_MS)
    now = 1_000
    assert balancer.maybe_schedule(now, is_imbalanced=False) is None
    assert balancer.maybe_schedule(now, is_imbalanced=True) == now + INTERVAL_MS
    # scheduling again while a check is pending does not push it back
    assert balancer.maybe_schedule(now + 5_000, is_imbalanced=True) == now + INTERVAL_MS
    assert not balancer.is_due(now + INTERVAL_MS - 1)
    assert balancer.is_due(now + INTERVAL_MS)
    records = balancer.run(image, _acceptable(image))
    assert [(r.partition_id, r.leader) for r in records] == [(0, 1)]
    _apply(image, records)
    later = now + INTERVAL_MS
    assert balancer.maybe_schedule(later, is_imbalanced=False) is None
    # a new imbalance waits a whole interval from when it is seen
    assert balancer.maybe_schedule(later + 7, is_imbalanced=True) == later + 7 + INTERVAL_MS


def test_a_check_stopped_at_its_bound_runs_again_at_once() -> None:
    image = _image([((1, 2), (1, 2), 2)] * 3)
    balancer = LeaderBalancer(INTERVAL_MS, limit=2)
    now = 0
    due = balancer.maybe_schedule(now, is_imbalanced=True)
    assert due == INTERVAL_MS
    _apply(image, balancer.run(image, _acceptable(image)))
    due = balancer.maybe_schedule(INTERVAL_MS, is_imbalanced=True)
    assert due == INTERVAL_MS + IMMEDIATE_DELAY_MS
    records = balancer.run(image, _acceptable(image))
    assert [r.partition_id for r in records] == [2]
    _apply(image, records)
    assert next(imbalanced(image), None) is None


def test_nothing_to_elect_defers_the_next_check_a_whole_interval() -> None:
    image = _image([((2, 3, 1), (3, 1), 3)])  # preferred replica out of the ISR
    balancer = LeaderBalancer(INTERVAL_MS)
    balancer.maybe_schedule(0, is_imbalanced=True)
    assert balancer.run(image, _acceptable(image)) == []
    assert balancer.maybe_schedule(INTERVAL_MS, is_imbalanced=True) == 2 * INTERVAL_MS


def test_disabled_never_schedules() -> None:
    balancer = LeaderBalancer(None)
    assert balancer.maybe_schedule(0, is_imbalanced=True) is None
    assert not balancer.is_due(10**12)
