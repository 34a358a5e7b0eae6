"""What the group state machine exchanges with its shell: its states, configuration, members,
the answers it gives to JoinGroup and SyncGroup, and the actions it asks the shell to carry out.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from .store import GroupMetadataValue

UNKNOWN_MEMBER_ID = ""
Waiter = object


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True)
class GroupConfig:
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    max_size: int = 2**31 - 1
    initial_rebalance_delay_ms: int = 3000


# ---------------------------------------------------------------------- results and actions


@dataclass(frozen=True)
class JoinMember:
    member_id: str
    group_instance_id: str | None
    metadata: bytes


@dataclass(frozen=True)
class JoinResult:
    error: int
    member_id: str
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    skip_assignment: bool = False
    members: tuple[JoinMember, ...] = ()


@dataclass(frozen=True)
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass(frozen=True)
class Reply:
    """Answer the parked request ``waiter``."""

    waiter: Waiter
    result: JoinResult | SyncResult


class StoreKind(enum.Enum):
    SYNC = "sync"  # the leader's assignment; the group turns Stable once it is written
    STATIC_REJOIN = "static-rejoin"  # a known static member came back with a new member id
    EMPTY = "empty"  # the group lost its last member; nothing waits for the write


@dataclass(frozen=True)
class StoreGroup:
    """Write ``value`` as the group's metadata record, then call ``Group.stored``."""

    kind: StoreKind
    generation_id: int
    value: GroupMetadataValue
    context: object = None


Action = Reply | StoreGroup


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupDescription:
    state: str
    protocol_type: str
    protocol: str
    members: tuple[MemberDescription, ...]


# ---------------------------------------------------------------------- members


@dataclass(eq=False)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: Waiter | None = None
    sync_waiter: Waiter | None = None
    is_new: bool = False
    heartbeat_deadline: int | None = None

    @property
    def awaiting_join(self) -> bool:
        return self.join_waiter is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata(self, protocol: str) -> bytes:
        for name, data in self.protocols:
            if name == protocol:
                return data
        return b""

    def matches(self, protocols: Sequence[tuple[str, bytes]]) -> bool:
        return list(protocols) == self.protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among ``candidates``."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member supports none of the candidate protocols")
