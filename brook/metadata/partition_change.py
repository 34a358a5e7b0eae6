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
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence

from .image import PartitionInfo
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
