"""KIP-250's decisions: the config rule, the quorum high watermark, the most-complete-log
election and the controller's rewrite of every other election into a fence."""

from __future__ import annotations

import uuid

from brook.metadata.image import MetadataImage
from brook.metadata.quorum_acks import (
    LogEnd,
    config_error,
    elect,
    fence_leader_changes,
    high_watermark,
    leaderless,
    most_complete,
    whom_to_ask,
)
from brook.metadata.records import (
    NO_LEADER,
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    TopicRecord,
)

QT = uuid.UUID(int=1)  # quorum.required.acks=2
PT = uuid.UUID(int=2)  # plain


def test_the_config_rule() -> None:
    assert config_error(-1, 3) is None
    assert config_error(2, 3) is None and config_error(2, 4) is None and config_error(3, 4) is None
    for q, rf in ((1, 3), (3, 3), (0, 3), (-2, 3), (2, 2), (5, 4)):
        error = config_error(q, rf)
        assert error is not None and "quorum.required.acks" in error and str(rf) in error


def test_the_quorum_high_watermark() -> None:
    assert high_watermark([10, 8, 3], 2) == 8
    assert high_watermark([3, 10, -1, 8], 2) == 8
    assert high_watermark([10, -1, -1], 2) is None  # a follower unheard-of counts as unknown
    assert high_watermark([10], 2) is None
    # records of earlier epochs are committed only with one of the leader's own epoch
    assert high_watermark([10, 8, 3], 2, epoch_start_offset=8) is None
    assert high_watermark([10, 9, 3], 2, epoch_start_offset=8) == 9


def test_the_most_complete_log_wins_once_enough_replicas_reported() -> None:
    replicas = (1, 2, 3)
    assert most_complete(replicas, {2: LogEnd(4, 100)}, 2) is None  # 1 < RF - Q + 1
    reports = {2: LogEnd(4, 90), 3: LogEnd(4, 100)}
    assert most_complete(replicas, reports, 2) == 3
    # the last epoch first: a longer log from an older epoch has diverged
    assert most_complete(replicas, {2: LogEnd(5, 90), 3: LogEnd(4, 100)}, 2) == 2
    # ties go to the earlier replica in assignment order
    assert most_complete((3, 1, 2), {2: LogEnd(4, 9), 1: LogEnd(4, 9)}, 2) == 1
    # only acceptable replicas count, and may win
    assert most_complete(replicas, reports, 2, acceptable=lambda r: r != 3) is None
    four = (1, 2, 3, 4)  # RF 4, Q 2: three reports needed
    assert most_complete(four, {1: LogEnd(1, 5), 2: LogEnd(1, 6)}, 2) is None
    assert most_complete(four, {1: LogEnd(1, 5), 2: LogEnd(1, 6), 4: LogEnd(1, 7)}, 2) == 4


def image() -> MetadataImage:
    img = MetadataImage()
    for record in (
        TopicRecord("q", QT),
        TopicRecord("p", PT),
        ConfigRecord(ConfigResourceType.TOPIC, "q", "quorum.required.acks", "2"),
        PartitionRecord(QT, 0, (1, 2, 3), (1, 2, 3), 1),
        PartitionRecord(PT, 0, (1, 2, 3), (1, 2, 3), 1),
    ):
        apply(img, record)
    return img


def apply(img: MetadataImage, record: MetadataRecord) -> None:
    img.apply(record, img.offset + 1)


def test_a_leader_change_of_a_quorum_topic_becomes_a_fence() -> None:
    img = image()
    moved = PartitionChangeRecord(QT, 0, leader=2, isr=(2, 3))
    plain = PartitionChangeRecord(PT, 0, leader=2, isr=(2, 3))
    same = PartitionChangeRecord(QT, 0, leader=1)  # names the same leader: epoch bump only
    isr_only = PartitionChangeRecord(QT, 0, isr=(1, 2))
    out = fence_leader_changes(img, [moved, plain, same, isr_only])
    assert out == [
        PartitionChangeRecord(QT, 0, leader=NO_LEADER, isr=(2, 3)),
        plain,
        same,
        isr_only,
    ]


def test_an_unclean_election_never_applies_to_a_quorum_topic() -> None:
    img = image()
    apply(img, PartitionChangeRecord(QT, 0, leader=NO_LEADER, isr=(1,)))
    unclean = PartitionChangeRecord(QT, 0, leader=3, isr=(3,), leader_recovery_state=1)
    assert fence_leader_changes(img, [unclean]) == []  # already leaderless: nothing left
    elected = PartitionChangeRecord(QT, 0, leader=2, isr=(2, 3))
    assert fence_leader_changes(img, [elected]) == [PartitionChangeRecord(QT, 0, isr=(2, 3))]


def test_leaderless_quorum_partitions_with_enough_live_replicas() -> None:
    img = image()
    apply(img, PartitionChangeRecord(QT, 0, leader=NO_LEADER))
    apply(img, PartitionChangeRecord(PT, 0, leader=NO_LEADER))
    waiting = leaderless(img, lambda r: r != 1)
    assert [(t, info.partition, q) for t, info, q in waiting] == [("q", 0, 2)]
    assert leaderless(img, lambda r: r == 3) == []  # one live of three: RF - Q + 1 is 2


def test_the_elections_the_reports_decide_and_their_records() -> None:
    img = image()
    apply(img, PartitionChangeRecord(QT, 0, leader=NO_LEADER, isr=(2, 3)))
    live = lambda r: r != 1  # noqa: E731
    waiting = leaderless(img, live)
    assert {
        b: [(t, i.partition) for t, i in ps] for b, ps in whom_to_ask(waiting, live).items()
    } == {
        2: [("q", 0)],
        3: [("q", 0)],
    }
    assert elect(waiting, {("q", 0): {2: LogEnd(0, 7)}}, live) == []  # one report of two
    (election,) = elect(waiting, {("q", 0): {2: LogEnd(0, 7), 3: LogEnd(0, 9)}}, live)
    assert election.leader == 3
    fenced = img.partition("q", 0)
    assert election.record(fenced, live) == PartitionChangeRecord(QT, 0, leader=3, isr=(3, 2))
    apply(img, PartitionChangeRecord(QT, 0, leader=2))  # elected by someone else meanwhile
    assert election.record(img.partition("q", 0), live) is None
