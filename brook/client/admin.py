"""The admin client (AsyncAdmin; Admin blocks on Brook's client loop): topics, partitions,
configs, cluster, offsets, leader elections, partition reassignments and consumer groups
(those in brook.client.admin_groups).

Errors: a call that fails as a whole raises its KafkaError; per-item broker errors raise one
AdminError (code of the first) whose ``errors`` maps every failed item to its KafkaError and
whose ``results`` holds the items that succeeded. Retriable errors are retried with backoff
within default.api.timeout.ms (or the call's ``timeout_ms``).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from . import _sync, admin_groups
from .admin_groups import ConsumerGroupDescription, GroupListing, MemberDescription
from .admin_types import (
    AdminError,
    AlterConfigOp,
    AlterConfigOpType,
    ClusterDescription,
    ConfigEntry,
    ConfigResource,
    ConfigResourceType,
    ConfigSource,
    ConfigSynonym,
    CreatedTopic,
    ElectionType,
    ListedOffset,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    PartitionReassignment,
    TopicDescription,
    TopicListing,
)
from .cluster import BrokerNode, TopicPartition
from .config import parse_admin_config
from .connection import NetworkError, RequestTimeoutError, UnsupportedVersionError
from .consumer.coordinator import OffsetAndMetadata
from .list_offsets import ISOLATION_LEVELS, list_offsets
from .network import NetworkClient, backoff_ms

__all__ = [
    "Admin",
    "AdminError",
    "AlterConfigOp",
    "AlterConfigOpType",
    "AsyncAdmin",
    "ClusterDescription",
    "ConfigEntry",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSource",
    "ConfigSynonym",
    "ConsumerGroupDescription",
    "CreatedTopic",
    "ElectionType",
    "GroupListing",
    "ListedOffset",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetSpec",
    "PartitionReassignment",
    "TopicDescription",
    "TopicListing",
]

K = TypeVar("K")
R = TypeVar("R")
Outcome = dict[Any, Any]  # item -> result or KafkaError


def _item_error(code: int, what: str, message: str | None = None) -> KafkaError:
    return KafkaError(code, f"{what}: {message}" if message else what)


def _retry_controller(exc: KafkaError) -> bool:
    return exc.code == Errors.NOT_CONTROLLER


def _needs_refresh(exc: KafkaError) -> bool:
    # A lost connection may mean a broker or the controller moved: look again before retrying.
    return exc.invalid_metadata or _retry_controller(exc) or isinstance(exc, NetworkError)


def _retry_transport(exc: KafkaError) -> bool:
    return isinstance(exc, NetworkError | RequestTimeoutError)


def _retry_offsets(exc: KafkaError) -> bool:
    # An unknown topic fails at once rather than being retried until the deadline.
    return exc.retriable and exc.code != Errors.UNKNOWN_TOPIC_OR_PARTITION


# ---------------------------------------------------------------------------------------------
# The asyncio admin client
# ---------------------------------------------------------------------------------------------


class AsyncAdmin:
    """Admin client on asyncio: ``async with AsyncAdmin({"bootstrap.servers": ...}) as admin``."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.config = parse_admin_config(config)
        self._network = NetworkClient(self.config, kind="adminclient", all_topics=True)
        self._started = False

    @property
    def network(self) -> NetworkClient:
        return self._network

    async def start(self) -> None:
        """Connect to the cluster (raises if no bootstrap address answers)."""
        if not self._started:
            await self._network.start()
            self._started = True

    async def close(self) -> None:
        await self._network.close()

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

    # -- plumbing --------------------------------------------------------------------------

    def _timeouts(self, timeout_ms: int | None) -> tuple[float, int]:
        total = self.config["default.api.timeout.ms"] if timeout_ms is None else timeout_ms
        loop = asyncio.get_running_loop()
        return loop.time() + total / 1000, int(total)

    def _op_timeout(self, deadline: float) -> int:
        """The timeout handed to the broker for an operation: what is left, at most a request."""
        left = (deadline - asyncio.get_running_loop().time()) * 1000
        return max(0, int(min(left, self.config["request.timeout.ms"])))

    async def _backoff(self, attempt: int, deadline: float, refresh: bool) -> bool:
        """Sleep before attempt ``attempt + 1``; False when the deadline or retries ran out."""
        loop = asyncio.get_running_loop()
        if attempt >= self.config["retries"] or loop.time() >= deadline:
            return False
        if refresh:
            try:
                await self._network.refresh_metadata()
            except KafkaError:
                pass
        wait = (
            backoff_ms(
                self.config["retry.backoff.ms"], self.config["retry.backoff.max.ms"], attempt
            )
            / 1000
        )
        await asyncio.sleep(max(0.0, min(wait, deadline - loop.time())))
        return loop.time() < deadline

    async def _per_item(
        self,
        items: Mapping[K, Any],
        attempt: Callable[[dict[K, Any], float], Awaitable[Outcome]],
        deadline: float,
        retry_item: Callable[[KafkaError], bool],
    ) -> dict[K, Any]:
        """Run ``attempt`` on the items still pending until all succeed or fail for good."""
        pending: dict[K, Any] = dict(items)
        results: dict[K, Any] = {}
        errors: dict[K, KafkaError] = {}
        tries = 0
        while pending:
            try:
                outcome = await attempt(pending, deadline)
            except KafkaError as exc:
                if exc.retriable and await self._backoff(tries, deadline, _needs_refresh(exc)):
                    tries += 1
                    continue
                raise
            retry: dict[K, Any] = {}
            refresh = False
            for key, value in outcome.items():
                if isinstance(value, KafkaError):
                    if retry_item(value):
                        retry[key] = pending[key]
                        refresh = refresh or _needs_refresh(value)
                    else:
                        errors[key] = value
                else:
                    results[key] = value
            pending = retry
            if pending:
                if not await self._backoff(tries, deadline, refresh):
                    for key in pending:
                        errors[key] = outcome[key]
                    break
                tries += 1
        if errors:
            raise AdminError(errors, results)
        return results

    async def _call(self, attempt: Callable[[], Awaitable[R]], deadline: float) -> R:
        """Retry a whole-request call on retriable errors."""
        tries = 0
        while True:
            try:
                return await attempt()
            except KafkaError as exc:
                retry = exc.retriable or _retry_controller(exc)
                if retry and await self._backoff(tries, deadline, _needs_refresh(exc)):
                    tries += 1
                    continue
                raise

    def _controller(self) -> int | None:
        cluster = self._network.cluster
        if cluster.controller_id >= 0 and cluster.controller_id in cluster.brokers:
            return cluster.controller_id
        return None

    async def _send_controller(self, api_key: int, data: Mapping[str, Any], **kw: Any) -> Any:
        controller = self._controller()
        if controller is None:
            return await self._network.send_any(api_key, data, **kw)
        return await self._network.send_to(controller, api_key, data, **kw)

    async def _send_for_resource(
        self, resource: ConfigResource, api_key: int, data: Mapping[str, Any], **kw: Any
    ) -> Any:
        # Broker (and broker logger) configs live on that broker; the rest anywhere.
        if (
            resource.type in (ConfigResourceType.BROKER, ConfigResourceType.BROKER_LOGGER)
            and resource.name
        ):
            return await self._network.send_to(int(resource.name), api_key, data, **kw)
        return await self._network.send_any(api_key, data, **kw)

    # -- topics ----------------------------------------------------------------------------

    async def create_topics(
        self,
        topics: Iterable[NewTopic | str],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[str, CreatedTopic]:
        """Create topics (a plain name gets the broker's defaults); returns them by name."""
        wanted = {t.name: t for t in (NewTopic(t) if isinstance(t, str) else t for t in topics)}
        deadline, _ = self._timeouts(timeout_ms)
        # -1 partitions / replication factor (broker defaults) arrived with CreateTopics v4.
        needs_v4 = any(
            t.num_partitions < 0 or t.replication_factor < 0
            for t in wanted.values()
            if t.replica_assignment is None
        )

        async def attempt(pending: dict[str, NewTopic], deadline: float) -> Outcome:
            data = {
                "topics": [_creatable_topic(t) for t in pending.values()],
                "timeout": self._op_timeout(deadline),
                "validate_only": validate_only,
            }
            resp = await self._send_controller(
                ApiKey.CREATE_TOPICS, data, client_min=4 if needs_v4 else None
            )
            out: Outcome = {}
            for r in resp.topics:
                code = int(r.error_code)
                if code:
                    out[r.name] = _item_error(code, f"topic {r.name!r}", r.error_message)
                    continue
                configs = getattr(r, "configs", None) or ()
                topic_id = getattr(r, "topic_id", None)
                out[r.name] = CreatedTopic(
                    r.name,
                    None if topic_id is None or topic_id.int == 0 else topic_id,
                    int(getattr(r, "num_partitions", -1)),
                    int(getattr(r, "replication_factor", -1)),
                    {c.name: c.value for c in configs},
                )
            return out

        return await self._per_item(wanted, attempt, deadline, _retry_controller)

    async def delete_topics(self, topics: Iterable[str], *, timeout_ms: int | None = None) -> None:
        """Delete topics by name."""
        names = {name: name for name in topics}
        deadline, _ = self._timeouts(timeout_ms)

        async def attempt(pending: dict[str, str], deadline: float) -> Outcome:
            data = {
                "topic_names": list(pending),
                "topics": [{"name": n, "topic_id": None} for n in pending],
                "timeout": self._op_timeout(deadline),
            }
            resp = await self._send_controller(ApiKey.DELETE_TOPICS, data)
            out: Outcome = {}
            for r in resp.responses:
                code = int(r.error_code)
                message = getattr(r, "error_message", None)
                out[r.name] = _item_error(code, f"topic {r.name!r}", message) if code else r.name
            return out

        await self._per_item(names, attempt, deadline, _retry_controller)

    async def list_topics(
        self, *, include_internal: bool = False, timeout_ms: int | None = None
    ) -> dict[str, TopicListing]:
        """All topics by name (internal ones such as __consumer_offsets only when asked)."""
        deadline, _ = self._timeouts(timeout_ms)
        resp = await self._call(lambda: self._network.fetch_metadata(None), deadline)
        listings = {}
        for t in resp.topics:
            if int(t.error_code) or t.name is None:
                continue
            if t.is_internal and not include_internal:
                continue
            listings[t.name] = TopicListing(t.name, _topic_id(t), bool(t.is_internal))
        return dict(sorted(listings.items()))

    async def describe_topics(
        self, topics: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, TopicDescription]:
        """Partitions (leader, epoch, replicas, ISR, offline replicas) and id of each topic."""
        names = {name: name for name in topics}
        deadline, _ = self._timeouts(timeout_ms)

        async def attempt(pending: dict[str, str], deadline: float) -> Outcome:
            resp = await self._network.fetch_metadata(
                list(pending), allow_auto_topic_creation=False
            )
            out: Outcome = {}
            for t in resp.topics:
                code = int(t.error_code)
                if code:
                    out[t.name] = _item_error(code, f"topic {t.name!r}")
                    continue
                cached = self._network.cluster.topics.get(t.name)
                parts = tuple(cached.partitions.values()) if cached is not None else ()
                out[t.name] = TopicDescription(t.name, _topic_id(t), bool(t.is_internal), parts)
            return out

        # A topic still being created answers LEADER_NOT_AVAILABLE for a moment.
        return await self._per_item(
            names, attempt, deadline, lambda e: e.code == Errors.LEADER_NOT_AVAILABLE
        )

    async def create_partitions(
        self,
        new_partitions: Mapping[str, int | NewPartitions],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """Grow topics to the given total partition counts."""
        wanted = {
            name: p if isinstance(p, NewPartitions) else NewPartitions(p)
            for name, p in new_partitions.items()
        }
        deadline, _ = self._timeouts(timeout_ms)

        async def attempt(pending: dict[str, NewPartitions], deadline: float) -> Outcome:
            data = {
                "topics": [
                    {
                        "name": name,
                        "count": p.total_count,
                        "assignments": None
                        if p.assignments is None
                        else [{"broker_ids": list(ids)} for ids in p.assignments],
                    }
                    for name, p in pending.items()
                ],
                "timeout": self._op_timeout(deadline),
                "validate_only": validate_only,
            }
            resp = await self._send_controller(ApiKey.CREATE_PARTITIONS, data)
            out: Outcome = {}
            for r in resp.results:
                code = int(r.error_code)
                out[r.name] = (
                    _item_error(code, f"topic {r.name!r}", r.error_message) if code else r.name
                )
            return out

        await self._per_item(wanted, attempt, deadline, _retry_controller)

    # -- configs ---------------------------------------------------------------------------

    async def describe_configs(
        self,
        resources: Iterable[ConfigResource],
        *,
        include_synonyms: bool = False,
        include_documentation: bool = False,
        timeout_ms: int | None = None,
    ) -> dict[ConfigResource, dict[str, ConfigEntry]]:
        """Every config of each resource, as the broker reports it."""
        wanted = {r: r for r in resources}
        deadline, _ = self._timeouts(timeout_ms)

        async def one(resource: ConfigResource) -> Outcome:
            data = {
                "resources": [
                    {
                        "resource_type": int(resource.type),
                        "resource_name": resource.name,
                        "configuration_keys": None,
                    }
                ],
                "include_synonyms": include_synonyms,
                "include_documentation": include_documentation,
            }
            resp = await self._send_for_resource(resource, ApiKey.DESCRIBE_CONFIGS, data)
            out: Outcome = {}
            for r in resp.results:
                code = int(r.error_code)
                if code:
                    out[resource] = _item_error(code, _describe(resource), r.error_message)
                    continue
                out[resource] = {c.name: _config_entry(c) for c in r.configs}
            return out

        return await self._per_item(
            wanted, lambda pending, _d: _gather(one, pending), deadline, _retry_transport
        )

    async def incremental_alter_configs(
        self,
        changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
        *,
        validate_only: bool = False,
        timeout_ms: int | None = None,
    ) -> None:
        """SET / DELETE / APPEND / SUBTRACT config values of topics or brokers."""
        wanted = {r: list(ops) for r, ops in changes.items()}
        deadline, _ = self._timeouts(timeout_ms)

        async def one(resource: ConfigResource) -> Outcome:
            data = {
                "resources": [
                    {
                        "resource_type": int(resource.type),
                        "resource_name": resource.name,
                        "configs": [
                            {"name": op.name, "config_operation": int(op.op), "value": op.value}
                            for op in wanted[resource]
                        ],
                    }
                ],
                "validate_only": validate_only,
            }
            resp = await self._send_for_resource(resource, ApiKey.INCREMENTAL_ALTER_CONFIGS, data)
            out: Outcome = {}
            for r in resp.responses:
                code = int(r.error_code)
                out[resource] = (
                    _item_error(code, _describe(resource), r.error_message) if code else None
                )
            return out

        await self._per_item(
            wanted, lambda pending, _d: _gather(one, pending), deadline, _retry_transport
        )

    # -- cluster ---------------------------------------------------------------------------

    async def describe_cluster(self, *, timeout_ms: int | None = None) -> ClusterDescription:
        """Cluster id, controller and brokers (DescribeCluster when the broker has it, else
        Metadata)."""
        deadline, _ = self._timeouts(timeout_ms)

        async def attempt() -> ClusterDescription:
            conn = await self._network.any_connection()
            if conn.supports(ApiKey.DESCRIBE_CLUSTER):
                data = {
                    "include_cluster_authorized_operations": False,
                    "endpoint_type": 1,
                    "include_fenced_brokers": False,
                }
                resp = await conn.send(ApiKey.DESCRIBE_CLUSTER, data)
                code = int(resp.error_code)
                if code:
                    raise KafkaError(code, resp.error_message)
                brokers = tuple(
                    BrokerNode(int(b.broker_id), b.host, int(b.port), b.rack) for b in resp.brokers
                )
                return ClusterDescription(resp.cluster_id, int(resp.controller_id), brokers)
            resp = await self._network.fetch_metadata([])
            brokers = tuple(
                BrokerNode(int(b.node_id), b.host, int(b.port), b.rack) for b in resp.brokers
            )
            return ClusterDescription(
                getattr(resp, "cluster_id", None), int(resp.controller_id), brokers
            )

        result = await self._call(attempt, deadline)
        return ClusterDescription(
            result.cluster_id,
            result.controller_id,
            tuple(sorted(result.brokers, key=lambda b: b.node_id)),
        )

    # -- offsets ---------------------------------------------------------------------------

    async def list_offsets(
        self,
        specs: Mapping[tuple[str, int], OffsetSpec | int],
        *,
        isolation_level: str = "read_uncommitted",
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, ListedOffset]:
        """Offsets per partition: EARLIEST, LATEST, MAX_TIMESTAMP, or the first offset whose
        timestamp is >= a given ms timestamp; each request goes to the partition's leader."""
        wanted = {TopicPartition(*tp): int(spec) for tp, spec in specs.items()}
        level = ISOLATION_LEVELS[isolation_level]
        deadline, _ = self._timeouts(timeout_ms)

        async def attempt(pending: dict[TopicPartition, int], deadline: float) -> Outcome:
            topics = sorted({tp.topic for tp in pending})
            await self._network.fetch_metadata(topics, allow_auto_topic_creation=False)
            return await list_offsets(
                self._network,
                pending,
                isolation_level=level,
                timeout_ms=self._op_timeout(deadline),
            )

        return await self._per_item(wanted, attempt, deadline, _retry_offsets)

    # -- leaders and replicas --------------------------------------------------------------

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
        deadline, _ = self._timeouts(timeout_ms)
        wanted = None if partitions is None else [TopicPartition(*tp) for tp in partitions]
        by_topic: dict[str, list[int]] = {}
        for tp in wanted or ():
            by_topic.setdefault(tp.topic, []).append(tp.partition)

        async def attempt() -> Any:
            data = {
                "election_type": int(election_type),
                "topic_partitions": None
                if wanted is None
                else [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                "timeout": self._op_timeout(deadline),
            }
            client_min = 1 if election_type != ElectionType.PREFERRED else None
            resp = await self._send_controller(ApiKey.ELECT_LEADERS, data, client_min=client_min)
            code = int(getattr(resp, "error_code", 0))
            if code:
                raise KafkaError(code, "ElectLeaders")
            return resp

        resp = await self._call(attempt, deadline)
        results: dict[TopicPartition, bool] = {}
        errors: dict[TopicPartition, KafkaError] = {}
        for t in resp.replica_election_results:
            for p in t.partition_result:
                tp = TopicPartition(t.topic, int(p.partition_id))
                code = int(p.error_code)
                if code == Errors.ELECTION_NOT_NEEDED:
                    results[tp] = False
                elif code:
                    errors[tp] = _item_error(code, _describe(tp), p.error_message)
                else:
                    results[tp] = True
        if errors:
            raise AdminError(errors, results)
        return results

    async def alter_partition_reassignments(
        self,
        reassignments: Mapping[tuple[str, int], Sequence[int] | None],
        *,
        timeout_ms: int | None = None,
    ) -> None:
        """Move partitions to new replica lists; None cancels a reassignment in progress."""
        wanted = {TopicPartition(*tp): r for tp, r in reassignments.items()}
        deadline, _ = self._timeouts(timeout_ms)

        async def attempt(pending: dict[TopicPartition, Any], deadline: float) -> Outcome:
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for tp, replicas in pending.items():
                by_topic.setdefault(tp.topic, []).append(
                    {
                        "partition_index": tp.partition,
                        "replicas": None if replicas is None else list(replicas),
                    }
                )
            data = {
                "timeout": self._op_timeout(deadline),
                "allow_replication_factor_change": True,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            }
            resp = await self._send_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, data)
            code = int(resp.error_code)
            if code:
                raise KafkaError(code, resp.error_message)
            out: Outcome = {}
            for t in resp.responses:
                for p in t.partitions:
                    tp = TopicPartition(t.name, int(p.partition_index))
                    pcode = int(p.error_code)
                    out[tp] = _item_error(pcode, _describe(tp), p.error_message) if pcode else None
            return out

        await self._per_item(wanted, attempt, deadline, _retry_controller)

    async def list_partition_reassignments(
        self,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, PartitionReassignment]:
        """Reassignments in progress (None = for every partition)."""
        deadline, _ = self._timeouts(timeout_ms)
        by_topic: dict[str, list[int]] = {}
        for tp in partitions or ():
            by_topic.setdefault(tp[0], []).append(tp[1])

        async def attempt() -> Any:
            data = {
                "timeout": self._op_timeout(deadline),
                "topics": None
                if partitions is None
                else [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
            }
            resp = await self._send_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS, data)
            code = int(resp.error_code)
            if code:
                raise KafkaError(code, resp.error_message)
            return resp

        resp = await self._call(attempt, deadline)
        return {
            TopicPartition(t.name, int(p.partition_index)): PartitionReassignment(
                tuple(int(r) for r in p.replicas),
                tuple(int(r) for r in p.adding_replicas),
                tuple(int(r) for r in p.removing_replicas),
            )
            for t in resp.topics
            for p in t.partitions
        }

    # -- consumer groups (brook.client.admin_groups) ---------------------------------------

    async def list_consumer_groups(
        self,
        *,
        states: Iterable[str] = (),
        types: Iterable[str] = (),
        timeout_ms: int | None = None,
    ) -> list[GroupListing]:
        """Consumer groups of every broker, optionally only those in ``states`` / of ``types``
        (case-insensitive, Kafka's names)."""
        return await admin_groups.list_groups(
            self, states=states, types=types, timeout_ms=timeout_ms
        )

    async def describe_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> dict[str, ConsumerGroupDescription]:
        return await admin_groups.describe_consumer_groups(self, group_ids, timeout_ms=timeout_ms)

    async def list_consumer_group_offsets(
        self,
        group_id: str,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        timeout_ms: int | None = None,
    ) -> dict[TopicPartition, OffsetAndMetadata | None]:
        return await admin_groups.list_consumer_group_offsets(
            self, group_id, partitions, timeout_ms=timeout_ms
        )

    async def alter_consumer_group_offsets(
        self,
        group_id: str,
        offsets: Mapping[tuple[str, int], OffsetAndMetadata | int],
        *,
        timeout_ms: int | None = None,
    ) -> None:
        await admin_groups.alter_consumer_group_offsets(
            self, group_id, offsets, timeout_ms=timeout_ms
        )

    async def delete_consumer_group_offsets(
        self, group_id: str, partitions: Iterable[tuple[str, int]], *, timeout_ms: int | None = None
    ) -> None:
        await admin_groups.delete_consumer_group_offsets(
            self, group_id, partitions, timeout_ms=timeout_ms
        )

    async def delete_consumer_groups(
        self, group_ids: Iterable[str], *, timeout_ms: int | None = None
    ) -> None:
        await admin_groups.delete_consumer_groups(self, group_ids, timeout_ms=timeout_ms)


# ---------------------------------------------------------------------------------------------
# Helpers
# ---------------------------------------------------------------------------------------------


def _creatable_topic(t: NewTopic) -> dict[str, Any]:
    assignments = [
        {"partition_index": p, "broker_ids": list(ids)}
        for p, ids in sorted((t.replica_assignment or {}).items())
    ]
    return {
        "name": t.name,
        # Kafka requires -1 for both when an explicit assignment is given.
        "num_partitions": -1 if assignments else t.num_partitions,
        "replication_factor": -1 if assignments else t.replication_factor,
        "assignments": assignments,
        "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
    }


def _topic_id(t: Any) -> uuid.UUID | None:
    topic_id = getattr(t, "topic_id", None)
    return None if topic_id is None or topic_id.int == 0 else topic_id


def _config_entry(c: Any) -> ConfigEntry:
    return ConfigEntry(
        c.name,
        c.value,
        ConfigSource.of(int(getattr(c, "config_source", 0))),
        bool(c.read_only),
        bool(c.is_sensitive),
        tuple(
            ConfigSynonym(s.name, s.value, ConfigSource.of(int(s.source)))
            for s in getattr(c, "synonyms", ())
        ),
        int(getattr(c, "config_type", 0)),
        getattr(c, "documentation", None),
    )


def _describe(item: Any) -> str:
    if isinstance(item, ConfigResource):
        return f"{item.type.name.lower()} {item.name!r}"
    if isinstance(item, TopicPartition):
        return f"partition {item.topic}-{item.partition}"
    return repr(item)


async def _gather(one: Callable[[Any], Awaitable[Outcome]], items: Iterable[Any]) -> Outcome:
    """One request per item, concurrently; a request-level failure becomes that item's error."""
    keys = list(items)
    answers = await asyncio.gather(*(one(k) for k in keys), return_exceptions=True)
    out: Outcome = {}
    for key, answer in zip(keys, answers, strict=True):
        if isinstance(answer, UnsupportedVersionError):
            raise answer
        if isinstance(answer, KafkaError):
            out[key] = answer
        elif isinstance(answer, BaseException):
            raise answer
        else:
            out.update(answer)
            out.setdefault(
                key,
                _item_error(
                    Errors.UNKNOWN_SERVER_ERROR, _describe(key), "missing from the response"
                ),
            )
    return out


# ---------------------------------------------------------------------------------------------
# The synchronous facade
# ---------------------------------------------------------------------------------------------


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
