"""Automatic leader balancing, as Kafka 4's controller does it
(``auto.leader.rebalance.enable``, ``leader.imbalance.check.interval.seconds``).

A partition is imbalanced while its leader is not its preferred replica (the first in the
assignment). While any is, a check is scheduled one interval after the previous one; the check
runs PREFERRED elections (the preferred replica leads if it is in the ISR and acceptable;
otherwise nothing changes) for at most ``MAX_ELECTIONS_PER_IMBALANCE`` partitions, and when it
stopped at that bound the next check runs almost at once instead of an interval later, so a
large cluster is balanced in bounded batches without one huge append.

``leader.imbalance.per.broker.percentage`` plays no part: Kafka's KRaft controller is given
only the interval (ControllerServer), and balances every imbalanced partition it can.

Pure: the schedule is a state machine over the times passed in, the elections a function of
the image; ``QuorumController`` runs the timer and appends the records.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator

from . import quorum_acks
from .image import MetadataImage, PartitionInfo
from .partition_change import Election, partition_change
from .records import NO_LEADER, PartitionChangeRecord

# Kafka's ReplicationControlManager MAX_ELECTIONS_PER_IMBALANCE.
MAX_ELECTIONS_PER_IMBALANCE = 1000
# Kafka delays an "immediate" re-run by 10 ms so other work is not starved.
IMMEDIATE_DELAY_MS = 10


class Schedule(enum.Enum):
    DEFERRED = "deferred"  # the next check waits a whole interval
    IMMEDIATELY = "immediately"  # the last check stopped at its bound: run again soon
    SCHEDULED = "scheduled"  # a check is pending at ``due_ms``


def imbalanced(image: MetadataImage) -> Iterator[tuple[str, PartitionInfo]]:
    """(topic, partition) for every partition with replicas not led by its first replica.
    Quorum-acks topics are left out: moving a healthy leader means fencing the partition
    for a most-complete-log election, which need not give the preferred replica (an
    explicit preferred election still does that)."""
    for topic in image.topics.values():
        if quorum_acks.enabled(quorum_acks.topic_quorum(image, topic.name)):
            continue
        for _, info in sorted(topic.partitions.items()):
            if info.replicas and info.leader != info.replicas[0]:
                yield topic.name, info


def balance_leaders(
    image: MetadataImage,
    acceptable: Callable[[int], bool],
    limit: int = MAX_ELECTIONS_PER_IMBALANCE,
) -> tuple[list[PartitionChangeRecord], bool]:
    """(records, more): the PREFERRED elections that change a leader, at most ``limit``;
    ``more`` when the bound stopped it with imbalanced partitions left unexamined."""
    records: list[PartitionChangeRecord] = []
    for _, info in imbalanced(image):
        if len(records) >= limit:
            return records, True
        change = partition_change(info, acceptable=acceptable, election=Election.PREFERRED)
        # only a move to a replica that can lead (never away from a leader to none)
        if change is not None and change.leader not in (None, NO_LEADER):
            records.append(change)
    return records, False


class LeaderBalancer:
    """When the next balancing check is due: Kafka's maybeScheduleNextBalancePartitionLeaders.

    ``interval_ms`` None means balancing is off (``auto.leader.rebalance.enable=false``)."""

    def __init__(self, interval_ms: int | None, limit: int = MAX_ELECTIONS_PER_IMBALANCE) -> None:
        self.interval_ms = interval_ms
        self.limit = limit
        self.state = Schedule.DEFERRED
        self.due_ms: int | None = None

    def maybe_schedule(self, now_ms: int, is_imbalanced: bool) -> int | None:
        """After each change the controller makes: schedule a check if none is pending and a
        partition is imbalanced. Returns when the pending check is due (None: none is)."""
        if self.state is not Schedule.SCHEDULED and self.interval_ms is not None and is_imbalanced:
            delay = self.interval_ms if self.state is Schedule.DEFERRED else IMMEDIATE_DELAY_MS
            self.due_ms = now_ms + delay
            self.state = Schedule.SCHEDULED
        return self.due_ms if self.state is Schedule.SCHEDULED else None

    def is_due(self, now_ms: int) -> bool:
        return (
            self.state is Schedule.SCHEDULED and self.due_ms is not None and now_ms >= self.due_ms
        )

    def run(
        self, image: MetadataImage, acceptable: Callable[[int], bool]
    ) -> list[PartitionChangeRecord]:
        """The due check: its elections; the next one is deferred a whole interval unless
        this one stopped at its bound."""
        records, more = balance_leaders(image, acceptable, self.limit)
        self.state = Schedule.IMMEDIATELY if more else Schedule.DEFERRED
        self.due_ms = None
        return records

    def reset(self) -> None:
        """A new term as the active controller starts from scratch."""
        self.state = Schedule.DEFERRED
        self.due_ms = None
