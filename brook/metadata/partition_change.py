"""How a partition's leader and ISR change, as KRaft's PartitionChangeBuilder decides it.

Pure functions over a ``PartitionInfo``: a target ISR and who may lead in, a
``PartitionChangeRecord`` (or None when nothing changes) out.

- ONLINE election keeps the current leader while it is in the target ISR and acceptable
  (registered, unfenced, not shutting down); otherwise the first replica in assignment order
  that is. The log end offset is never compared (that is what KIP-250 changes, elsewhere).
- PREFERRED election takes the first replica if it is in the ISR and acceptable, else keeps a
  valid current leader, else the next valid replica.
- UNCLEAN election (explicit, or the topic's ``unclean.leader.election.enable``) may take any
  acceptable replica when the ISR has none: the ISR becomes that leader alone and the partition
  is RECOVERING until the leader says it has recovered.
- An ISR is never emptied: when every member is gone, the last ones stay and the leader is -1.
- A record names a leader only when the leader changes (which bumps the leader epoch); an ISR
  change alone bumps only the partition epoch.
- AlterPartition (``alter_isr``): a leader's ISR change, validated in Kafka's order; when it
  completes a reassignment the same record finishes it.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from brook.protocol.errors import Errors

from .image import BrokerInfo, PartitionInfo
from .records import NO_LEADER, PartitionChangeRecord

RECOVERED = 0
RECOVERING = 1


class Election(enum.Enum):
    ONLINE = "online"
    PREFERRED = "preferred"
    UNCLEAN = "unclean"


def choose_leader(
    info: PartitionInfo,
    isr: Sequence[int],
    acceptable: Callable[[int], bool],
    election: Election,
) -> tuple[int, bool]:
    """(leader, unclean): the leader the election gives, -1 if none; unclean when it comes
    from outside the ISR."""
    valid = [r for r in info.replicas if r in isr and acceptable(r)]
    if election is Election.PREFERRED:
        preferred = info.replicas[0] if info.replicas else NO_LEADER
        if preferred in valid:
            return preferred, False
    if info.leader in valid:
        return info.leader, False
    if valid:
        return valid[0], False
    if election is Election.UNCLEAN:
        live = [r for r in info.replicas if acceptable(r)]
        if live:
            return live[0], True
    return NO_LEADER, False


def partition_change(
    info: PartitionInfo,
    *,
    target_isr: Sequence[int] | None = None,
    acceptable: Callable[[int], bool],
    election: Election = Election.ONLINE,
    unclean_allowed: bool = False,
) -> PartitionChangeRecord | None:
    """The record moving ``info`` to ``target_isr`` (default: its ISR) with a leader elected
    as ``election`` says; None when it already is there."""
    isr = tuple(info.isr if target_isr is None else target_isr)
    if unclean_allowed and election is Election.ONLINE:
        election_used = Election.UNCLEAN
    else:
        election_used = election
    leader, unclean = choose_leader(info, isr, acceptable, election_used)
    if unclean:
        isr = (leader,)
    elif not isr:
        isr = info.isr  # never empty the ISR: its last members stay, without a leader
    leader_changed = leader != info.leader
    isr_changed = isr != info.isr
    if not leader_changed and not isr_changed:
        return None
    return PartitionChangeRecord(
        info.topic_id,
        info.partition,
        leader=leader if leader_changed else None,
        isr=isr if isr_changed else None,
        leader_recovery_state=RECOVERING if unclean else -1,
    )


def applied(info: PartitionInfo, record: PartitionChangeRecord | None) -> PartitionInfo:
    """``info`` once ``record`` applies (the image's rule: naming a leader bumps the leader
    epoch, every record the partition epoch), for answers given before the image has it."""
    if record is None:
        return info
    return replace(
        info,
        leader=info.leader if record.leader is None else record.leader,
        isr=info.isr if record.isr is None else tuple(record.isr),
        replicas=info.replicas if record.replicas is None else tuple(record.replicas),
        removing_replicas=info.removing_replicas
        if record.removing_replicas is None
        else tuple(record.removing_replicas),
        adding_replicas=info.adding_replicas
        if record.adding_replicas is None
        else tuple(record.adding_replicas),
        leader_epoch=info.leader_epoch + (record.leader is not None),
        partition_epoch=info.partition_epoch + 1,
        leader_recovery_state=info.leader_recovery_state
        if record.leader_recovery_state < 0
        else record.leader_recovery_state,
    )


def alter_isr(
    info: PartitionInfo,
    sender: int,
    leader_epoch: int,
    partition_epoch: int,
    new_isr: Sequence[tuple[int, int]],
    leader_recovery_state: int,
    brokers: Mapping[int, BrokerInfo],
) -> tuple[int, PartitionChangeRecord | None]:
    """One AlterPartition entry from ``sender``, checked in the order of Kafka's
    ReplicationControlManager.validateAlterPartitionData: (error, record). ``new_isr`` holds
    (broker id, broker epoch), the epoch -1 when the request (v2) does not carry it.

    When the new ISR holds every replica a reassignment is adding, the same record finishes
    the reassignment (the replicas being removed leave, the leader epoch is bumped); if that
    moves the leadership the answer is NEW_LEADER_ELECTED, and the record is still written.
    """
    if leader_epoch > info.leader_epoch or partition_epoch > info.partition_epoch:
        return Errors.NOT_CONTROLLER, None  # this controller is behind the sender
    if leader_epoch < info.leader_epoch:
        return Errors.FENCED_LEADER_EPOCH, None
    if sender != info.leader:
        return Errors.INVALID_REQUEST, None
    if partition_epoch < info.partition_epoch:
        return Errors.INVALID_UPDATE_VERSION, None
    isr = tuple(b for b, _ in new_isr)
    if (
        len(set(isr)) != len(isr)
        or any(b not in info.replicas for b in isr)
        or info.leader not in isr
        or (leader_recovery_state == RECOVERING and len(isr) > 1)
        or (info.leader_recovery_state == RECOVERED and leader_recovery_state == RECOVERING)
    ):
        return Errors.INVALID_REQUEST, None
    for broker_id, epoch in new_isr:
        broker = brokers.get(broker_id)
        if (
            broker is None
            or broker.fenced
            or broker.in_controlled_shutdown
            or (epoch != -1 and epoch != broker.broker_epoch)
        ):
            return Errors.INELIGIBLE_REPLICA, None
    record = PartitionChangeRecord(
        info.topic_id,
        info.partition,
        isr=isr if isr != info.isr else None,
        leader_recovery_state=leader_recovery_state
        if leader_recovery_state != info.leader_recovery_state
        else -1,
    )
    reassigning = bool(info.adding_replicas or info.removing_replicas)
    if reassigning and all(r in isr for r in info.adding_replicas):
        final = tuple(r for r in info.replicas if r not in info.removing_replicas)
        final_isr = tuple(r for r in isr if r in final) or final[:1]

        def acceptable(b: int) -> bool:
            broker = brokers.get(b)
            return not (broker is None or broker.fenced or broker.in_controlled_shutdown)

        leader = info.leader
        if leader not in final_isr or not acceptable(leader):
            leader = next((r for r in final if r in final_isr and acceptable(r)), NO_LEADER)
        record = PartitionChangeRecord(
            info.topic_id,
            info.partition,
            leader=leader if leader != info.leader or info.removing_replicas else None,
            isr=final_isr,
            replicas=final,
            adding_replicas=(),
            removing_replicas=(),
            leader_recovery_state=record.leader_recovery_state,
        )
        if leader != info.leader:
            return Errors.NEW_LEADER_ELECTED, record
    if record.isr is None and record.leader_recovery_state < 0:
        return Errors.NONE, None
    return Errors.NONE, record
