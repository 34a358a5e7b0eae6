"""AsyncAdmin: the admin client on asyncio, one method per operation, each delegating to its
domain module (topics, configs, partitions, cluster, groups, transactions) over the client's
core.

Errors: a call that fails as a whole raises its KafkaError; per-item broker errors raise one
AdminError (code of the first) whose ``errors`` maps every failed item to its KafkaError and
whose ``results`` holds the items that succeeded. Retriable errors are retried with backoff
within default.api.timeout.ms (or the call's ``timeout_ms``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from brook.config.defs import Config
from brook.security.acl import AclBinding, AclBindingFilter

from ..cluster import TopicPartition
from ..consumer.coordinator import OffsetAndMetadata
from ..network import NetworkClient
from . import acls as acl_ops
from . import cluster as cluster_ops
from . import configs as config_ops
from . import groups as group_ops
from . import partitions as partition_ops
from . import scram as scram_ops
from . import topics as topic_ops
from . import transactions as txn_ops
from .core import AdminCore
from .groups import ConsumerGroupDescription, GroupListing
from .transactions import (
    AbortTransactionSpec,
    ProducerState,
    TransactionDescription,
    TransactionListing,
)
from .types import (
    AlterConfigOp,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    CreatedTopic,
    ElectionType,
    ListedOffset,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    PartitionReassignment,
    QuorumInfo,
    TopicDescription,
    TopicListing,
)

__all__ = ["AsyncAdmin"]


class AsyncAdmin:
    """Admin client on asyncio: ``async with AsyncAdmin({"bootstrap.servers": ...}) as admin``."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._core = AdminCore(config)

    @property
    def config(self) -> Config:
        """The parsed admin config (every key with its value or default)."""
        return self._core.config

    @property
    def network(self) -> NetworkClient:
        return self._core.network

    @property
    def core(self) -> AdminCore:
        return self._core

    async def start(self) -> None:
        """Connect to the cluster (raises if no bootstrap address answers)."""
        await self._core.start()

    async def close(self) -> None:
        await self._core.close()

    async def __aenter__(self) -> AsyncAdmin:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # -- topics (topics.py) ----------------------------------------------------------------

    async def create_topics(
        self,
        topics: Iterable[NewTopic | str],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[str, CreatedTopic]:
        """Create topics (a plain name gets the broker's defaults); returns them by name."""
        return await topic_ops.create_topics(
            self._core, topics, validate_only=validate_only, timeout_ms=timeout_ms
        )

    async def delete_topics(self, topics: Iterable[str], *, timeout_ms: int | None = None) -> None:
        """Delete topics by name."""
        await topic_ops.delete_topics(self._core, topics, timeout_ms=timeout_ms)

    async def list_topics(
        self, *, include_internal: bool = False, timeout_ms: int | None = None
    ) -> dict[str, TopicListing]:
        """All topics by name (internal ones such as __consumer_offsets only when asked)."""
        return await topic_ops.list_topics(
            self._core, include_internal=include_internal, timeout_ms=timeout_ms
        )

    async def describe_topics(
        self, topics: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, TopicDescription]:
        """Partitions (leader, epoch, replicas, ISR, offline replicas) and id of each topic."""
        return await topic_ops.describe_topics(self._core, topics, timeout_ms=timeout_ms)

    # -- ACLs (acls.py) ---------------------------------------------------------------------

    async def create_acls(
        self, acls: Iterable[AclBinding], *, timeout_ms: int | None = None
    ) -> None:
        """Create ACLs (an ACL already there is not an error)."""
        await acl_ops.create_acls(self._core, acls, timeout_ms=timeout_ms)

    async def describe_acls(
        self, acl_filter: AclBindingFilter, *, timeout_ms: int | None = None
    ) -> list[AclBinding]:
        """Every ACL the filter matches."""
        return await acl_ops.describe_acls(self._core, acl_filter, timeout_ms=timeout_ms)

    async def delete_acls(
        self, filters: Iterable[AclBindingFilter], *, timeout_ms: int | None = None
    ) -> dict[AclBindingFilter, list[AclBinding]]:
        """Delete every ACL each filter matches; the ACLs removed, per filter."""
        return await acl_ops.delete_acls(self._core, filters, timeout_ms=timeout_ms)

    # -- configs (configs.py) --------------------------------------------------------------

    async def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Every config of each resource, as the broker reports it."""
        return await config_ops.describe_configs(
            self._core,
            resources,
            include_synonyms=include_synonyms,
            include_documentation=include_documentation,
            timeout_ms=timeout_ms,
        )

    async def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """SET / DELETE / APPEND / SUBTRACT config values of topics or brokers."""
        await config_ops.incremental_alter_configs(
            self._core, changes, validate_only=validate_only, timeout_ms=timeout_ms
        )

    # -- cluster (cluster.py) --------------------------------------------------------------

    async def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        """Cluster id, controller and brokers (DescribeCluster when the broker has it, else
        Metadata)."""
        return await cluster_ops.describe_cluster(self._core, timeout_ms=timeout_ms)

    async def describe_metadata_quorum(self, *, timeout_ms: int | None = None) -> QuorumInfo:
        """The KRaft metadata quorum (DescribeQuorum): leader, epoch, high watermark, each
        voter's and observer's progress, and the voters' endpoints."""
        return await cluster_ops.describe_metadata_quorum(self._core, timeout_ms=timeout_ms)

    # -- SCRAM credentials (scram.py) -----------------------------------------------------

    async def describe_user_scram_credentials(
        self, users: list[str] | None = None, *, timeout_ms: int | None = None
    ) -> dict[str, list[scram_ops.ScramCredentialInfo]]:
        return await scram_ops.describe_user_scram_credentials(
            self._core, users, timeout_ms=timeout_ms
        )

    async def alter_user_scram_credentials(
        self,
        alterations: list[scram_ops.ScramUpsertion | scram_ops.ScramDeletion],
        *,
        timeout_ms: int | None = None,
    ) -> dict[str, Any]:
        return await scram_ops.alter_user_scram_credentials(
            self._core, alterations, timeout_ms=timeout_ms
        )

    # -- partitions (partitions.py) --------------------------------------------------------

    async def create_partitions(
        self,
        new_partitions: Mapping[str, int | NewPartitions],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """Grow topics to the given total partition counts."""
        await partition_ops.create_partitions(
            self._core, new_partitions, validate_only=validate_only, timeout_ms=timeout_ms
        )

    async def list_offsets(
        self,
        specs: Mapping[tuple[str, int], OffsetSpec | int],
        *,
        isolation_level: str = "read_uncommitted",
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, ListedOffset]:
        """Offsets per partition: EARLIEST, LATEST, MAX_TIMESTAMP, or the first offset whose
        timestamp is >= a given ms timestamp; each request goes to the partition's leader."""
        return await partition_ops.list_offsets(
            self._core, specs, isolation_level=isolation_level, timeout_ms=timeout_ms
        )

    async def elect_leaders(
        self,
        election_type: ElectionType = ElectionType.PREFERRED,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, bool]:
        """Run leader elections (None = every partition). Maps each partition to whether a
        leader was elected now; False means ELECTION_NOT_NEEDED (it already had the right one).
        """
        return await partition_ops.elect_leaders(
            self._core, election_type, partitions, timeout_ms=timeout_ms
        )

    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[tuple[str, int], Sequence[int] | None],
        *,
        timeout_ms: int | None = None,
    ) -> None:
        """Move partitions to new replica lists; None cancels a reassignment in progress."""
        await partition_ops.alter_partition_reassignments(
            self._core, reassignments, timeout_ms=timeout_ms
        )

    async def list_partition_reassignments(
        self,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, PartitionReassignment]:
        """Reassignments in progress (None = for every partition)."""
        return await partition_ops.list_partition_reassignments(
            self._core, partitions, timeout_ms=timeout_ms
        )

    # -- consumer groups (groups.py) -------------------------------------------------------

    async def list_consumer_groups(
        self,
        *,
        states: Iterable[str] = (),
        types: Iterable[str] = (),
        timeout_ms: int | None = None,
    ) -> list[GroupListing]:
        """Consumer groups of every broker, optionally only those in ``states`` / of ``types``
        (case-insensitive, Kafka's names)."""
        return await group_ops.list_groups(
            self._core, states=states, types=types, timeout_ms=timeout_ms
        )

    async def describe_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        return await group_ops.describe_consumer_groups(
            self._core, group_ids, timeout_ms=timeout_ms
        )

    async def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return await group_ops.list_consumer_group_offsets(
            self._core, group_id, partitions, timeout_ms=timeout_ms
        )

    async def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata | int],
        *,
        timeout_ms: int | None = None,
    ) -> None:
        await group_ops.alter_consumer_group_offsets(
            self._core, group_id, offsets, timeout_ms=timeout_ms
        )

    async def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]], *, timeout_ms: int | None = None
    ) -> None:
        await group_ops.delete_consumer_group_offsets(
            self._core, group_id, partitions, timeout_ms=timeout_ms
        )

    async def delete_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> None:
        await group_ops.delete_consumer_groups(self._core, group_ids, timeout_ms=timeout_ms)

    # -- transactions (transactions.py) ----------------------------------------------------

    async def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int | None = None,
        timeout_ms: int | None = None,
    ) -> dict[int, list[TransactionListing]]:
        """Transactional ids by the broker coordinating them, optionally only those in
        ``states`` (Kafka's names), of ``producer_ids``, or running longer than
        ``duration_ms``."""
        return await txn_ops.list_transactions(
            self._core,
            states=states,
            producer_ids=producer_ids,
            duration_ms=duration_ms,
            timeout_ms=timeout_ms,
        )

    async def describe_transactions(
        self, transactional_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, TransactionDescription]:
        """Each transactional id's state at its coordinator."""
        return await txn_ops.describe_transactions(
            self._core, transactional_ids, timeout_ms=timeout_ms
        )

    async def describe_producers(
        self,
        partitions: Iterable[tuple[str, int]],
        *,
        broker_id: int | None = None,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, list[ProducerState]]:
        """The producers each partition's leader (or broker ``broker_id``) knows, with their
        open transaction's first offset."""
        return await txn_ops.describe_producers(
            self._core, partitions, broker_id=broker_id, timeout_ms=timeout_ms
        )

    async def abort_transaction(
        self, spec: AbortTransactionSpec, *, timeout_ms: int | None = None
    ) -> None:
        """End a hanging transaction: an ABORT marker of ``spec``'s producer written to its
        partition's leader (needs CLUSTER_ACTION)."""
        await txn_ops.abort_transaction(self._core, spec, timeout_ms=timeout_ms)
