"""KIP-250's quorum acks, the decisions only (pure functions, no I/O).

A topic with ``quorum.required.acks`` = Q (1 < Q < replication factor; -1 turns it off)
acknowledges an acks=all produce once Q replicas, the leader included, have the batch: the
high watermark is the Q-th largest log end offset among the in-sync replicas. An in-sync
follower may then lack acknowledged records, so Kafka's election (the first live in-sync
replica) could lose them. Here a leader is chosen as Raft chooses one: every acknowledged
record is on Q replicas, so any RF - Q + 1 replicas include one holding it, and the replica
whose log is the most complete among them (largest last epoch, then largest log end) holds
every acknowledged record. Fewer reports than that and nobody is elected.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .image import MetadataImage, PartitionInfo
from .records import NO_LEADER, MetadataRecord, PartitionChangeRecord

RECOVERING = 1  # PartitionChangeRecord.leader_recovery_state after an unclean election

OFF = -1
CONFIG = "quorum.required.acks"


@dataclass(frozen=True, slots=True)
class LogEnd:
    """What a replica reports of its log: its last leader epoch and its log end offset."""

    last_epoch: int
    end_offset: int

    def key(self) -> tuple[int, int]:
        return (self.last_epoch, self.end_offset)


def enabled(q: int) -> bool:
    return q != OFF


def config_error(q: int, replication_factor: int) -> str | None:
    """Why ``q`` is not a valid ``quorum.required.acks`` for ``replication_factor``
    replicas (None if it is)."""
    if q == OFF:
        return None
    if q <= 1 or q >= replication_factor:
        return (
            f"{CONFIG} must be -1 (off) or greater than 1 and less than the replication factor; "
            f"got {q} with a replication factor of {replication_factor}"
        )
    return None


def high_watermark(log_ends: Iterable[int], q: int, epoch_start_offset: int = -1) -> int | None:
    """The Q-th largest of the in-sync replicas' log end offsets (the leader's included;
    unknown ones as -1); None while fewer than Q replicas are in sync, or while that offset
    is not past ``epoch_start_offset`` (the leader's log end when its epoch began).

    The second rule is Raft's: a leader commits records of earlier epochs only together with
    one of its own. Counting replicas of an older record alone is not enough: a replica with a
    later epoch but without that record could still win an election (its last epoch is
    larger) and truncate it away everywhere, after it was acknowledged (an idempotent retry
    of its produce is answered once the HW passes it)."""
    ends = sorted(log_ends, reverse=True)
    if len(ends) < q:
        return None
    candidate = ends[q - 1]
    if candidate <= epoch_start_offset:
        return None
    return candidate


def reports_needed(replication_factor: int, q: int) -> int:
    """How many replicas must report before one may be elected: RF - Q + 1."""
    return replication_factor - q + 1


def most_complete(
    replicas: Sequence[int],
    reports: Mapping[int, LogEnd],
    q: int,
    acceptable: Callable[[int], bool] = lambda _: True,
) -> int | None:
    """The replica to elect, or None while fewer than RF - Q + 1 acceptable replicas have
    reported. Among the acceptable reporting replicas: the largest (last epoch, log end),
    ties going to the earlier replica in assignment order."""
    candidates = [r for r in replicas if r in reports and acceptable(r)]
    if len(candidates) < reports_needed(len(replicas), q):
        return None
    best = candidates[0]
    for replica in candidates[1:]:
        if reports[replica].key() > reports[best].key():
            best = replica
    return best


def topic_quorum(image: MetadataImage, topic: str) -> int:
    """The topic's ``quorum.required.acks`` (a topic-level config only; OFF when unset)."""
    raw = image.topic_configs(topic).get(CONFIG)
    try:
        return OFF if raw is None else int(raw)
    except ValueError:
        return OFF


def leaderless(
    image: MetadataImage, acceptable: Callable[[int], bool]
) -> list[tuple[str, PartitionInfo, int]]:
    """(topic, partition, Q) of every leaderless partition of a quorum-acks topic with enough
    live replicas to elect from (RF - Q + 1 acceptable ones)."""
    out = []
    for topic in image.topics.values():
        q = topic_quorum(image, topic.name)
        if not enabled(q):
            continue
        for info in topic.partitions.values():
            if info.leader != NO_LEADER:
                continue
            live = sum(1 for r in info.replicas if acceptable(r))
            if live >= reports_needed(len(info.replicas), q):
                out.append((topic.name, info, q))
    return out


def whom_to_ask(
    waiting: Sequence[tuple[str, PartitionInfo, int]], acceptable: Callable[[int], bool]
) -> dict[int, list[tuple[str, PartitionInfo]]]:
    """Broker id -> the leaderless partitions (``leaderless``) it holds a replica of and may
    lead: what the controller asks each broker about."""
    wanted: dict[int, list[tuple[str, PartitionInfo]]] = {}
    for topic, info, _ in waiting:
        for replica in info.replicas:
            if acceptable(replica):
                wanted.setdefault(replica, []).append((topic, info))
    return wanted


@dataclass(frozen=True, slots=True)
class Election:
    """A most-complete-log election decided for a partition fenced at ``partition``'s epoch."""

    topic: str
    partition: PartitionInfo
    leader: int
    heard: Mapping[int, LogEnd]

    def record(
        self, now: PartitionInfo | None, acceptable: Callable[[int], bool]
    ) -> PartitionChangeRecord | None:
        """The record electing ``leader``, with the live in-sync replicas kept in the ISR;
        None when the partition changed since its replicas were asked (asked again then)."""
        if (
            now is None
            or now.leader != NO_LEADER
            or now.leader_epoch != self.partition.leader_epoch
        ):
            return None
        isr = (self.leader, *(r for r in now.isr if r != self.leader and acceptable(r)))
        return PartitionChangeRecord(now.topic_id, now.partition, leader=self.leader, isr=isr)

    def __str__(self) -> str:
        ends = {r: end.key() for r, end in sorted(self.heard.items())}
        return (
            f"electing {self.leader} for {self.topic}-{self.partition.partition}: the most "
            f"complete log of (last epoch, log end) {ends}"
        )


def elect(
    waiting: Sequence[tuple[str, PartitionInfo, int]],
    reports: Mapping[tuple[str, int], Mapping[int, LogEnd]],
    acceptable: Callable[[int], bool],
) -> list[Election]:
    """The elections the replicas' reports decide (see ``most_complete``)."""
    out = []
    for topic, info, q in waiting:
        heard = reports.get((topic, info.partition), {})
        best = most_complete(info.replicas, heard, q, acceptable)
        if best is not None:
            out.append(Election(topic, info, best, heard))
    return out


def fence_leader_changes(
    image: MetadataImage, records: Sequence[MetadataRecord]
) -> list[MetadataRecord]:
    """The controller's records with every leader change of a quorum topic's partition turned
        into a fence: no leader, the leader epoch bumped, whatever else the record changes kept.
        Kafka's elections (a broker failing or shutting down, preferred and unclean elections,
        reassignments, leader balancing) pick a leader from the ISR without comparing logs, which
        under quorum acks could lose acknowledged records; a fenced partition is given its leader
        by the most-complete-log election instead (``most_complete``), once enough replicas have
        reported their logs. A change to an already leaderless partition keeps it leaderless; an
    unclean election (``unclean.leader.election.enable`` included) never applies."""
    out: list[MetadataRecord] = []
    for record in records:
        if isinstance(record, PartitionChangeRecord) and record.leader is not None:
            topic = image.topics_by_id.get(record.topic_id)
            info = topic.partitions.get(record.partition_id) if topic is not None else None
            if (
                topic is not None
                and info is not None
                and record.leader != info.leader
                and record.leader != NO_LEADER
                and enabled(topic_quorum(image, topic.name))
            ):
                fenced = replace(
                    record,
                    leader=None if info.leader == NO_LEADER else NO_LEADER,
                    # an unclean election's one-replica ISR goes with it: it never applies
                    isr=None if record.leader_recovery_state == RECOVERING else record.isr,
                    leader_recovery_state=-1,
                )
                if fenced.leader is not None or _changes_anything(fenced):
                    out.append(fenced)
                continue
        out.append(record)
    return out


def _changes_anything(record: PartitionChangeRecord) -> bool:
    return any(
        value is not None
        for value in (
            record.isr,
            record.replicas,
            record.removing_replicas,
            record.adding_replicas,
        )
    )
