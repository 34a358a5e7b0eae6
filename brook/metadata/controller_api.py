"""The controller as brokers and admin handlers call it: typed requests in, typed results out.

``ControllerApi`` is served in-process by the active ``QuorumController`` on a node that runs
one, and over the controller listener by ``brook.broker.controller_channel`` elsewhere, so a
handler never knows which. A mutating call returns once its records are committed, with the
offset of its last record, so the caller can wait for its own image to hold the result
(``MetadataLoader.wait_for_offset``).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from brook.protocol.errors import KafkaError
from brook.security.acl import AclBinding, AclBindingFilter

from .acl_control import AclDeletion, AclOutcome
from .controller import ConfigOp, CreatedTopic, CreateTopicSpec, Outcome
from .records import BrokerFeature, Endpoint
from .scram_control import ScramDeletion, ScramUpsertion, UserResult

T = TypeVar("T")

__all__ = [
    "BrokerHeartbeat",
    "BrokerRegistration",
    "Committed",
    "ConfigOp",
    "ControllerApi",
    "ControllerError",
    "CreateTopicSpec",
    "CreatedTopic",
    "HeartbeatReply",
    "IsrChange",
    "IsrChangeResult",
    "Outcome",
    "ProducerIdBlock",
    "Reassignment",
]


class ControllerError(KafkaError):
    """A whole request failed (NOT_CONTROLLER, STALE_BROKER_EPOCH, KAFKA_STORAGE_ERROR, ...)."""

    @property
    def error_code(self) -> int:
        return self.code


@dataclass(frozen=True, slots=True)
class Committed(Generic[T]):
    """A controller result and the metadata offset of its last record (-1: it wrote none)."""

    value: T
    offset: int = -1


@dataclass(frozen=True, slots=True)
class BrokerRegistration:
    broker_id: int
    cluster_id: str
    incarnation_id: uuid.UUID
    endpoints: tuple[Endpoint, ...]
    rack: str | None = None
    features: tuple[BrokerFeature, ...] = ()
    previous_broker_epoch: int = -1


@dataclass(frozen=True, slots=True)
class BrokerHeartbeat:
    broker_id: int
    broker_epoch: int
    current_metadata_offset: int
    want_fence: bool
    want_shutdown: bool


@dataclass(frozen=True, slots=True)
class HeartbeatReply:
    is_caught_up: bool
    is_fenced: bool
    should_shutdown: bool


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    broker_id: int
    first_producer_id: int
    size: int


@dataclass(frozen=True, slots=True)
class Reassignment:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    adding: tuple[int, ...] = field(default=())
    removing: tuple[int, ...] = field(default=())


@dataclass(frozen=True, slots=True)
class IsrChange:
    """One partition of an AlterPartition request: the ISR its leader asks for."""

    topic_id: uuid.UUID
    partition: int
    leader_epoch: int
    # (broker id, broker epoch) of each member; the epoch is -1 when not known (v2)
    new_isr: tuple[tuple[int, int], ...]
    partition_epoch: int
    leader_recovery_state: int = 0


@dataclass(frozen=True, slots=True)
class IsrChangeResult:
    """The controller's answer for one partition: an error, or the partition's new state."""

    topic_id: uuid.UUID
    partition: int
    error_code: int
    leader_id: int = -1
    leader_epoch: int = -1
    isr: tuple[int, ...] = ()
    partition_epoch: int = -1
    leader_recovery_state: int = 0


TopicResult = tuple[str | None, uuid.UUID | None, Outcome]
PartitionResult = tuple[str, int, Outcome]


class ControllerApi(Protocol):
    async def create_topics(
        self, specs: Sequence[CreateTopicSpec], validate_only: bool
    ) -> Committed[list[CreatedTopic]]: ...

    async def delete_topics(
        self, names: Sequence[str | None], ids: Sequence[uuid.UUID | None]
    ) -> Committed[list[TopicResult]]: ...

    async def create_partitions(
        self,
        requests: Sequence[tuple[str, int, list[list[int]] | None]],
        validate_only: bool,
    ) -> Committed[list[Outcome]]: ...

    async def alter_user_scram_credentials(
        self, deletions: Sequence[ScramDeletion], upsertions: Sequence[ScramUpsertion]
    ) -> Committed[list[UserResult]]: ...

    async def alter_configs(
        self,
        resources: Sequence[tuple[int, str, Sequence[ConfigOp]]],
        incremental: bool,
        validate_only: bool,
    ) -> Committed[list[Outcome]]: ...

    async def elect_leaders(
        self, election_type: int, partitions: Sequence[tuple[str, int]] | None
    ) -> Committed[list[PartitionResult]]: ...

    async def alter_partition_reassignments(
        self, targets: Sequence[tuple[str, int, list[int] | None]]
    ) -> Committed[list[PartitionResult]]: ...

    async def list_partition_reassignments(
        self, partitions: Sequence[tuple[str, int]] | None
    ) -> list[Reassignment]: ...

    async def allocate_producer_ids(
        self, broker_id: int, broker_epoch: int
    ) -> Committed[ProducerIdBlock]: ...

    async def create_acls(self, bindings: Sequence[AclBinding]) -> Committed[list[AclOutcome]]:
        """CreateAcls: one result per binding, in order."""
        ...

    async def delete_acls(
        self, filters: Sequence[AclBindingFilter]
    ) -> Committed[list[AclDeletion]]:
        """DeleteAcls: one result per filter, with the ACLs it removed."""
        ...

    async def register_broker(self, registration: BrokerRegistration) -> Committed[int]: ...

    async def broker_heartbeat(self, heartbeat: BrokerHeartbeat) -> HeartbeatReply: ...

    async def alter_partition(
        self, broker_id: int, broker_epoch: int, changes: Sequence[IsrChange]
    ) -> Committed[list[IsrChangeResult]]:
        """A partition leader's ISR changes (AlterPartition). A stale broker epoch fails the
        whole request (STALE_BROKER_EPOCH); each partition gets its own error or state."""
        ...
