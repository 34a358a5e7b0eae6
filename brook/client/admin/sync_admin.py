"""Admin: the blocking admin client, each method running its AsyncAdmin twin on Brook's client
loop thread (brook/client/_sync.py). An Admin left open at interpreter exit is closed there
(it holds nothing but connections)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any

from brook.security.acl import AclBinding, AclBindingFilter

from .. import _sync
from ..cluster import TopicPartition
from ..consumer.coordinator import OffsetAndMetadata
from .async_admin import AsyncAdmin
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

__all__ = ["Admin"]


class Admin:
    """Blocking admin client; each method runs its AsyncAdmin twin on Brook's client loop."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self._admin = AsyncAdmin(config)
        _sync.run(self._admin.start())
        # Left open at interpreter exit: closed (it holds nothing but connections).
        self._exit_key = _sync.on_exit(self._admin.close)

    def close(self) -> None:
        _sync.forget_on_exit(self._exit_key)
        _sync.run(self._admin.close())

    def __enter__(self) -> Admin:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def async_admin(self) -> AsyncAdmin:
        return self._admin

    def create_topics(
        self,
        topics: Iterable[NewTopic | str],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[str, CreatedTopic]:
        return _sync.run(
            self._admin.create_topics(topics, validate_only=validate_only, timeout_ms=timeout_ms)
        )

    def delete_topics(self, topics: Iterable[str], *, timeout_ms: int | None = None) -> None:
        _sync.run(self._admin.delete_topics(topics, timeout_ms=timeout_ms))

    def list_topics(
        self, *, include_internal: bool = False, timeout_ms: int | None = None
    ) -> dict[str, TopicListing]:
        return _sync.run(
            self._admin.list_topics(include_internal=include_internal, timeout_ms=timeout_ms)
        )

    def describe_topics(
        self, topics: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, TopicDescription]:
        return _sync.run(self._admin.describe_topics(topics, timeout_ms=timeout_ms))

    def create_partitions(
        self,
        new_partitions: Mapping[str, int | NewPartitions],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        _sync.run(
            self._admin.create_partitions(
                new_partitions, validate_only=validate_only, timeout_ms=timeout_ms
            )
        )

    def create_acls(self, acls: Iterable[AclBinding], *, timeout_ms: int | None = None) -> None:
        _sync.run(self._admin.create_acls(acls, timeout_ms=timeout_ms))

    def describe_acls(
        self, acl_filter: AclBindingFilter, *, timeout_ms: int | None = None
    ) -> list[AclBinding]:
        return _sync.run(self._admin.describe_acls(acl_filter, timeout_ms=timeout_ms))

    def delete_acls(
        self, filters: Iterable[AclBindingFilter], *, timeout_ms: int | None = None
    ) -> dict[AclBindingFilter, list[AclBinding]]:
        return _sync.run(self._admin.delete_acls(filters, timeout_ms=timeout_ms))

    def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        return _sync.run(
            self._admin.describe_configs(
                resources,
                include_synonyms=include_synonyms,
                include_documentation=include_documentation,
                timeout_ms=timeout_ms,
            )
        )

    def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        _sync.run(
            self._admin.incremental_alter_configs(
                changes, validate_only=validate_only, timeout_ms=timeout_ms
            )
        )

    def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        return _sync.run(self._admin.describe_cluster(timeout_ms=timeout_ms))

    def describe_metadata_quorum(self, *, timeout_ms: int | None = None) -> QuorumInfo:
        return _sync.run(self._admin.describe_metadata_quorum(timeout_ms=timeout_ms))

    def describe_user_scram_credentials(
        self, users: list[str] | None = None, *, timeout_ms: int | None = None
    ) -> dict[str, list[Any]]:
        return _sync.run(self._admin.describe_user_scram_credentials(users, timeout_ms=timeout_ms))

    def alter_user_scram_credentials(
        self, alterations: list[Any], *, timeout_ms: int | None = None
    ) -> dict[str, Any]:
        """Per user: None when applied, else the broker's KafkaError (see admin/scram.py)."""
        return _sync.run(
            self._admin.alter_user_scram_credentials(alterations, timeout_ms=timeout_ms)
        )

    def list_offsets(
        self,
        specs: Mapping[tuple[str, int], OffsetSpec | int],
        *,
        isolation_level: str = "read_uncommitted",
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, ListedOffset]:
        return _sync.run(
            self._admin.list_offsets(specs, isolation_level=isolation_level, timeout_ms=timeout_ms)
        )

    def elect_leaders(
        self,
        election_type: ElectionType = ElectionType.PREFERRED,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, bool]:
        return _sync.run(
            self._admin.elect_leaders(election_type, partitions, timeout_ms=timeout_ms)
        )

    def alter_partition_reassignments(
        self,
        reassignments: Mapping[tuple[str, int], Sequence[int] | None],
        *,
        timeout_ms: int | None = None,
    ) -> None:
        _sync.run(self._admin.alter_partition_reassignments(reassignments, timeout_ms=timeout_ms))

    def list_partition_reassignments(
        self,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, PartitionReassignment]:
        return _sync.run(
            self._admin.list_partition_reassignments(partitions, timeout_ms=timeout_ms)
        )

    def list_consumer_groups(
        self,
        *,
        states: Iterable[str] = (),
        types: Iterable[str] = (),
        timeout_ms: int | None = None,
    ) -> list[GroupListing]:
        return _sync.run(
            self._admin.list_consumer_groups(states=states, types=types, timeout_ms=timeout_ms)
        )

    def describe_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        return _sync.run(self._admin.describe_consumer_groups(group_ids, timeout_ms=timeout_ms))

    def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return _sync.run(
            self._admin.list_consumer_group_offsets(group_id, partitions, timeout_ms=timeout_ms)
        )

    def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata | int],
        *,
        timeout_ms: int | None = None,
    ) -> None:
        _sync.run(
            self._admin.alter_consumer_group_offsets(group_id, offsets, timeout_ms=timeout_ms)
        )

    def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]], *, timeout_ms: int | None = None
    ) -> None:
        _sync.run(
            self._admin.delete_consumer_group_offsets(group_id, partitions, timeout_ms=timeout_ms)
        )

    def delete_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> None:
        _sync.run(self._admin.delete_consumer_groups(group_ids, timeout_ms=timeout_ms))

    def list_transactions(
        self,
        *,
        states: Iterable[str] = (),
        producer_ids: Iterable[int] = (),
        duration_ms: int | None = None,
        timeout_ms: int | None = None,
    ) -> dict[int, list[TransactionListing]]:
        return _sync.run(
            self._admin.list_transactions(
                states=states,
                producer_ids=producer_ids,
                duration_ms=duration_ms,
                timeout_ms=timeout_ms,
            )
        )

    def describe_transactions(
        self, transactional_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, TransactionDescription]:
        return _sync.run(
            self._admin.describe_transactions(transactional_ids, timeout_ms=timeout_ms)
        )

    def describe_producers(
        self,
        partitions: Iterable[tuple[str, int]],
        *,
        broker_id: int | None = None,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, list[ProducerState]]:
        return _sync.run(
            self._admin.describe_producers(partitions, broker_id=broker_id, timeout_ms=timeout_ms)
        )

    def abort_transaction(
        self, spec: AbortTransactionSpec, *, timeout_ms: int | None = None
    ) -> None:
        _sync.run(self._admin.abort_transaction(spec, timeout_ms=timeout_ms))
