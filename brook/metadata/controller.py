"""The controller's decisions: admin requests and broker events in, metadata records out.

Pure logic over the current MetadataImage: each method validates a request the way Kafka's
controller does (same error codes and messages), and returns the records that carry it out
together with the per-item results. Writing the records to the metadata log and applying
them is the quorum shell's job (``service.py``), so the same decisions serve one node or many.
"""

from __future__ import annotations

import random
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from brook.config.defs import ConfigError, Type
from brook.config.server import (
    FOLLOWER_FETCH_DELAY_KEY,
    PRODUCE_DELAY_KEY,
    SERVER_CONFIG,
    VERIFICATION_KEY,
)
from brook.config.topic import SERVER_DEFAULT, TOPIC_CONFIG
from brook.protocol.errors import Errors

from . import quorum_acks
from .image import MetadataImage
from .records import (
    ConfigRecord,
    ConfigResourceType,
    MetadataRecord,
    PartitionChangeRecord,
    PartitionRecord,
    ProducerIdsRecord,
    RemoveTopicRecord,
    TopicRecord,
)
from .topics import (
    collision_key,
    is_internal,
    place_replicas,
    reserved_topic_error,
    topic_name_error,
)

PRODUCER_ID_BLOCK = 1000
ZERO_UUID = uuid.UUID(int=0)
# Broker configs a running node takes from the metadata: the broker-wide defaults of topic
# configs, the fault-injection delays of experiments, KIP-890's verification switch.
DYNAMIC_BROKER_KEYS = frozenset(SERVER_DEFAULT.values()) | {
    PRODUCE_DELAY_KEY,
    FOLLOWER_FETCH_DELAY_KEY,
    VERIFICATION_KEY,
}


def broker_config_error(values: Mapping[str, str]) -> str | None:
    """Kafka's DynamicBrokerConfig checks on a broker resource's dynamic values: every key
    changeable at run time, every value of its key's type and range (a value that would be
    refused in server.properties is refused here too, rather than stored and ignored)."""
    static = sorted(k for k in values if k not in DYNAMIC_BROKER_KEYS)
    if static:
        return f"Cannot update these configs dynamically: Set({', '.join(static)})"
    for name, raw in values.items():
        try:
            SERVER_CONFIG.parse_one(name, raw)
        except ConfigError as exc:
            return str(exc)
    return None


# Kafka's ReplicationControlManager.MAX_PARTITIONS_PER_BATCH: one CreateTopics request may not
# create more partitions than this (Kafka 4's validateTotalNumberOfPartitions), so a typo of
# 100000 partitions cannot make a node create a hundred thousand logs in one decision. It is
# checked before any placement is computed: placing 2^31 - 1 partitions would exhaust memory.
MAX_PARTITIONS_PER_BATCH = 10_000
EXCESSIVE_PARTITIONS = "Excessively large number of partitions per request."


@dataclass
class Outcome:
    """Per-item result: an error code (0 = success) and message."""

    error_code: int = Errors.NONE
    error_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.error_code == Errors.NONE


@dataclass
class CreateTopicSpec:
    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignments: dict[int, list[int]] = field(default_factory=dict)
    configs: dict[str, str | None] = field(default_factory=dict)


@dataclass
class CreatedTopic(Outcome):
    name: str = ""
    topic_id: uuid.UUID = ZERO_UUID
    num_partitions: int = -1
    replication_factor: int = -1


@dataclass
class ConfigOp:
    name: str
    op: int  # 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT
    value: str | None


@dataclass
class Decision:
    records: list[MetadataRecord]
    results: list[Any]


class OpType:
    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class PartitionCapacity:
    """``max.broker.partitions`` (KIP-578) over one request: the replicas each broker hosts,
    counted once from the image, plus those the request's earlier items added. Kafka answers
    a request it refuses by policy with POLICY_VIOLATION; so does this limit."""

    def __init__(self, image: MetadataImage, limit: int) -> None:
        self.image = image
        self.limit = limit
        self._hosted: Counter[int] | None = None

    def _counts(self) -> Counter[int]:
        if self._hosted is None:
            self._hosted = Counter(
                replica
                for topic in self.image.topics.values()
                for info in topic.partitions.values()
                for replica in info.replicas
            )
        return self._hosted

    def refusal(self, placements: Iterable[Sequence[int]]) -> str | None:
        """Why adding these replica lists would take a broker over the limit, or None (and
        then they are counted)."""
        added = Counter(replica for replicas in placements for replica in replicas)
        hosted = self._counts()
        for broker, count in sorted(added.items()):
            if hosted[broker] + count > self.limit:
                return (
                    f"Adding {count} partition replica(s) to broker {broker}, which hosts "
                    f"{hosted[broker]}, would exceed max.broker.partitions={self.limit}."
                )
        hosted.update(added)
        return None


class Controller:
    def __init__(
        self,
        image: MetadataImage,
        server_config: Mapping[str, Any],
        rng: random.Random | None = None,
    ) -> None:
        self.image = image
        self.server_config = server_config
        self.rng = rng or random.Random()

    # ------------------------------------------------------------------ topics
    def create_topics(
        self,
        specs: Sequence[CreateTopicSpec],
        validate_only: bool = False,
        *,
        internal_topics_allowed: bool = True,
    ) -> Decision:
        """``internal_topics_allowed`` is False for a client's CreateTopics: internal topics
        are created by the node that owns them (the group coordinator), with their own
        settings, never by a client."""
        if self._too_many_new_partitions(specs, internal_topics_allowed):
            return Decision(
                [],
                [
                    CreatedTopic(Errors.POLICY_VIOLATION, EXCESSIVE_PARTITIONS, name=spec.name)
                    for spec in specs
                ],
            )
        records: list[MetadataRecord] = []
        results: list[CreatedTopic] = []
        seen: set[str] = set()
        live = [b.broker_id for b in self.image.live_brokers()]
        capacity = self.partition_capacity()
        for spec in specs:
            result = CreatedTopic(name=spec.name)
            results.append(result)
            if not internal_topics_allowed and is_internal(spec.name):
                # Kafka's ControllerApis answers this for __cluster_metadata; Brook extends it
                # to every internal topic (see docs/compatibility.md).
                result.error_code = Errors.INVALID_REQUEST
                result.error_message = f"Creation of internal topic {spec.name} is prohibited."
                continue
            if spec.name in seen:
                result.error_code = Errors.INVALID_REQUEST
                result.error_message = f"Duplicate topic name {spec.name} in the request."
                continue
            seen.add(spec.name)
            reserved = reserved_topic_error(spec.name)
            if reserved:
                result.error_code, result.error_message = Errors.INVALID_REQUEST, reserved
                continue
            plan = self._plan_topic(spec, live, result)
            if plan is None:
                continue
            refusal = capacity.refusal(plan)
            if refusal is not None:
                result.error_code, result.error_message = Errors.POLICY_VIOLATION, refusal
                continue
            topic_id = uuid.uuid4()
            result.topic_id = topic_id
            result.num_partitions = len(plan)
            result.replication_factor = len(plan[0]) if plan else 0
            if validate_only:
                continue
            records.append(TopicRecord(spec.name, topic_id))
            for name, value in spec.configs.items():
                if value is not None:
                    records.append(ConfigRecord(ConfigResourceType.TOPIC, spec.name, name, value))
            for p, replicas in enumerate(plan):
                records.append(
                    PartitionRecord(topic_id, p, tuple(replicas), tuple(replicas), replicas[0])
                )
        return Decision(records, results)

    def _too_many_new_partitions(
        self, specs: Sequence[CreateTopicSpec], internal_topics_allowed: bool
    ) -> bool:
        """Kafka's validateTotalNumberOfPartitions: the partitions the request asks for (the
        default count for -1, the assignments when given, nothing for a non-positive count)
        above MAX_PARTITIONS_PER_BATCH refuse the whole request, validate_only or not. A
        name's repeats and refused internal names add nothing, being created by no one."""
        counted: set[str] = set()
        total = 0
        for spec in specs:
            if spec.name in counted or (not internal_topics_allowed and is_internal(spec.name)):
                continue
            counted.add(spec.name)
            if spec.assignments:
                total += len(spec.assignments)
            elif spec.num_partitions == -1:
                total += int(self.server_config["num.partitions"])
            elif spec.num_partitions > 0:
                total += spec.num_partitions
        return total > MAX_PARTITIONS_PER_BATCH

    def _plan_topic(
        self,
        spec: CreateTopicSpec,
        live: list[int],
        result: CreatedTopic,
    ) -> list[list[int]] | None:
        def fail(code: int, message: str) -> None:
            result.error_code, result.error_message = code, message

        problem = topic_name_error(spec.name)
        if problem:
            fail(Errors.INVALID_TOPIC_EXCEPTION, problem)
            return None
        if spec.name in self.image.topics:
            fail(Errors.TOPIC_ALREADY_EXISTS, f"Topic '{spec.name}' already exists.")
            return None
        key = collision_key(spec.name)
        for existing in self.image.topics:
            if collision_key(existing) == key:
                fail(
                    Errors.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{spec.name}' collides with existing topic: {existing}",
                )
                return None
        if spec.assignments:
            if spec.num_partitions != -1 or spec.replication_factor != -1:
                fail(
                    Errors.INVALID_REQUEST,
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time.",
                )
                return None
            plan = self._check_assignments(spec.assignments, 0, live, result)
        else:
            partitions = spec.num_partitions
            if partitions == -1:
                partitions = int(self.server_config["num.partitions"])
            rf = spec.replication_factor
            if rf == -1:
                rf = int(self.server_config["default.replication.factor"])
            if partitions <= 0:
                fail(
                    Errors.INVALID_PARTITIONS,
                    "Number of partitions was set to an invalid non-positive value.",
                )
                return None
            if rf <= 0:
                fail(
                    Errors.INVALID_REPLICATION_FACTOR,
                    "Replication factor must be larger than 0, or -1 to use the default value.",
                )
                return None
            if rf > len(live):
                fail(
                    Errors.INVALID_REPLICATION_FACTOR,
                    f"Unable to replicate the partition {rf} time(s): The target replication "
                    f"factor of {rf} cannot be reached because only {len(live)} broker(s) "
                    "are registered.",
                )
                return None
            plan = place_replicas(live, partitions, rf, rng=self.rng)
        if plan is None:
            return None
        error = self.validate_topic_configs(spec.configs, len(plan[0]))
        if error:
            fail(Errors.INVALID_CONFIG, error)
            return None
        return plan

    def _check_assignments(
        self, assignments: Mapping[int, Sequence[int]], first: int, live: list[int], result: Outcome
    ) -> list[list[int]] | None:
        expected = list(range(first, first + len(assignments)))
        if sorted(assignments) != expected:
            result.error_code = Errors.INVALID_REPLICA_ASSIGNMENT
            result.error_message = f"Partitions should be consecutive and start from {first}."
            return None
        plan = []
        sizes = set()
        for p in expected:
            replicas = list(assignments[p])
            sizes.add(len(replicas))
            if not replicas or len(set(replicas)) != len(replicas):
                result.error_code = Errors.INVALID_REPLICA_ASSIGNMENT
                result.error_message = f"Duplicate or empty replica assignment for partition {p}."
                return None
            unknown = [r for r in replicas if r not in live]
            if unknown:
                result.error_code = Errors.INVALID_REPLICA_ASSIGNMENT
                result.error_message = (
                    f"The manual partition assignment includes broker(s) {unknown} which are "
                    "not registered or are fenced."
                )
                return None
            plan.append(replicas)
        if len(sizes) > 1:
            result.error_code = Errors.INVALID_REPLICA_ASSIGNMENT
            result.error_message = "All partitions should have the same number of replicas."
            return None
        return plan

    def validate_topic_configs(
        self,
        configs: Mapping[str, str | None],
        replicas: int,
    ) -> str | None:
        for name, value in configs.items():
            if name not in TOPIC_CONFIG:
                return f"Unknown topic config name: {name}"
            if value is None:
                continue
            try:
                parsed = TOPIC_CONFIG.parse_one(name, value)
            except ConfigError as exc:
                return str(exc)
            if name == quorum_acks.CONFIG:
                error = quorum_acks.config_error(parsed, replicas)
                if error is not None:
                    return f"Invalid value {parsed} for configuration {name}: {error}"
        return self._compaction_lag_error(configs)

    def _compaction_lag_error(self, configs: Mapping[str, str | None]) -> str | None:
        """Kafka's LogConfig.validateValues: the topic's min.compaction.lag.ms may not pass
        its max.compaction.lag.ms, each the topic's override or the broker's default."""
        lags = []
        for name in ("min.compaction.lag.ms", "max.compaction.lag.ms"):
            value = configs.get(name)
            if value is None:
                default = self.server_config.get(SERVER_DEFAULT[name])
                lags.append(TOPIC_CONFIG.key(name).default if default is None else int(default))
            else:
                lags.append(int(TOPIC_CONFIG.parse_one(name, value)))
        low, high = lags
        if low > high:
            return (
                f"conflict topic config setting min.compaction.lag.ms ({low}) > "
                f"max.compaction.lag.ms ({high})"
            )
        return None

    def delete_topics(
        self,
        names: Sequence[str | None],
        ids: Sequence[uuid.UUID | None],
    ) -> Decision:
        """Results align with ``names``/``ids`` (one of each pair is set)."""
        records: list[MetadataRecord] = []
        results: list[tuple[str | None, uuid.UUID | None, Outcome]] = []
        enabled = bool(self.server_config["delete.topic.enable"])
        removed: set[uuid.UUID] = set()
        for name, topic_id in zip(names, ids, strict=True):
            outcome = Outcome()
            topic = None
            if topic_id is not None and topic_id.int != 0:
                topic = self.image.topics_by_id.get(topic_id)
                if topic is None:
                    outcome = Outcome(
                        Errors.UNKNOWN_TOPIC_ID, "This server does not host this topic ID."
                    )
            elif name is not None:
                topic = self.image.topics.get(name)
                if topic is None:
                    outcome = Outcome(
                        Errors.UNKNOWN_TOPIC_OR_PARTITION,
                        "This server does not host this topic-partition.",
                    )
            else:
                outcome = Outcome(Errors.INVALID_REQUEST, "Neither topic name nor id given.")
            if topic is not None and not enabled:
                outcome = Outcome(Errors.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
            elif topic is not None and is_internal(topic.name):
                # Kafka leaves this to its authorizer; Brook has none, and deleting
                # __consumer_offsets would drop every group's committed offsets.
                outcome = Outcome(
                    Errors.INVALID_TOPIC_EXCEPTION, f"Cannot delete internal topic {topic.name}"
                )
            elif topic is not None and topic.topic_id not in removed:
                removed.add(topic.topic_id)
                records.append(RemoveTopicRecord(topic.topic_id))
            results.append(
                (topic.name if topic else name, topic.topic_id if topic else topic_id, outcome)
            )
        return Decision(records, results)

    def create_partitions(
        self,
        requests: Sequence[tuple[str, int, list[list[int]] | None]],
        validate_only: bool = False,
    ) -> Decision:
        if self._new_partitions(requests) > MAX_PARTITIONS_PER_BATCH:
            return Decision(
                [], [Outcome(Errors.POLICY_VIOLATION, EXCESSIVE_PARTITIONS) for _ in requests]
            )
        records: list[MetadataRecord] = []
        results: list[Outcome] = []
        live = [b.broker_id for b in self.image.live_brokers()]
        capacity = self.partition_capacity()
        for name, count, assignments in requests:
            outcome = Outcome()
            results.append(outcome)
            topic = self.image.topics.get(name)
            if topic is None:
                outcome.error_code = Errors.UNKNOWN_TOPIC_OR_PARTITION
                outcome.error_message = "This server does not host this topic-partition."
                continue
            if is_internal(name):
                # Kafka allows it, but a new partition count re-maps every group to another
                # partition of __consumer_offsets, away from its committed offsets.
                outcome.error_code = Errors.INVALID_TOPIC_EXCEPTION
                outcome.error_message = f"Cannot add partitions to internal topic {name}"
                continue
            current = len(topic.partitions)
            if count < current:
                outcome.error_code = Errors.INVALID_PARTITIONS
                outcome.error_message = (
                    f"Topic currently has {current} partitions, which is higher than the "
                    f"requested {count}."
                )
                continue
            if count == current:
                outcome.error_code = Errors.INVALID_PARTITIONS
                outcome.error_message = f"Topic already has {current} partitions."
                continue
            rf = len(next(iter(topic.partitions.values())).replicas)
            if assignments is not None:
                if len(assignments) != count - current:
                    outcome.error_code = Errors.INVALID_REPLICA_ASSIGNMENT
                    outcome.error_message = (
                        f"Attempted to add {count - current} additional partition(s), but only "
                        f"{len(assignments)} assignment(s) were specified."
                    )
                    continue
                plan = self._check_assignments(
                    {current + i: a for i, a in enumerate(assignments)}, current, live, outcome
                )
                if plan is None:
                    continue
            else:
                if rf > len(live):
                    outcome.error_code = Errors.INVALID_REPLICATION_FACTOR
                    outcome.error_message = (
                        f"Unable to replicate the partition {rf} time(s): only {len(live)} "
                        "broker(s) are registered."
                    )
                    continue
                plan = place_replicas(
                    live, count - current, rf, first_partition=current, rng=self.rng
                )
            refusal = capacity.refusal(plan)
            if refusal is not None:
                outcome.error_code, outcome.error_message = Errors.POLICY_VIOLATION, refusal
                continue
            if validate_only:
                continue
            for i, replicas in enumerate(plan):
                records.append(
                    PartitionRecord(
                        topic.topic_id, current + i, tuple(replicas), tuple(replicas), replicas[0]
                    )
                )
        return Decision(records, results)

    def _new_partitions(self, requests: Sequence[tuple[str, int, list[list[int]] | None]]) -> int:
        """How many partitions a CreatePartitions request would add to existing topics.

        Kafka's controller writes one record per new partition into a batch bounded at
        10,000 records; Brook applies MAX_PARTITIONS_PER_BATCH to the request as a whole, with
        the message CreateTopics uses, so nothing is created when it is exceeded. Internal
        topics, refused on their own, add nothing."""
        total = 0
        for name, count, _ in requests:
            topic = self.image.topics.get(name)
            if topic is not None and not is_internal(name) and count > len(topic.partitions):
                total += count - len(topic.partitions)
        return total

    # ------------------------------------------------------------------ configs
    def alter_configs(
        self,
        resources: Sequence[tuple[int, str, Sequence[ConfigOp]]],
        incremental: bool,
        validate_only: bool = False,
    ) -> Decision:
        """IncrementalAlterConfigs (``incremental``) or the legacy AlterConfigs, whose entries
        replace the resource's whole set of overrides."""
        records: list[MetadataRecord] = []
        results: list[Outcome] = []
        for resource_type, resource_name, ops in resources:
            outcome = Outcome()
            results.append(outcome)
            if resource_type == ConfigResourceType.TOPIC:
                current = self.image.configs.get((resource_type, resource_name), {})
                topic = self.image.topics.get(resource_name)
                if topic is None:
                    outcome.error_code = Errors.UNKNOWN_TOPIC_OR_PARTITION
                    outcome.error_message = "This server does not host this topic-partition."
                    continue
                table = TOPIC_CONFIG
            elif resource_type == ConfigResourceType.BROKER:
                if resource_name and not resource_name.isdigit():
                    outcome.error_code = Errors.INVALID_REQUEST
                    outcome.error_message = f"Invalid broker id {resource_name}"
                    continue
                current = self.image.configs.get((resource_type, resource_name), {})
                table = SERVER_CONFIG
            else:
                outcome.error_code = Errors.INVALID_REQUEST
                outcome.error_message = f"Unsupported resource type {resource_type}"
                continue
            new, error = self._apply_ops(table, dict(current), ops, incremental)
            if error is None and resource_type == ConfigResourceType.BROKER:
                error = broker_config_error(new)
                if error is not None:
                    # Kafka answers a broker change it cannot apply with INVALID_REQUEST
                    # (KAFKA-13609 keeps it so), not INVALID_CONFIG.
                    outcome.error_code = Errors.INVALID_REQUEST
                    outcome.error_message = error
                    continue
            if error is None and resource_type == ConfigResourceType.TOPIC:
                replicas = len(next(iter(topic.partitions.values())).replicas)
                error = self.validate_topic_configs(new, replicas)
            if error is not None:
                outcome.error_code = Errors.INVALID_CONFIG
                outcome.error_message = error
                continue
            if validate_only:
                continue
            for name in current.keys() - new.keys():
                records.append(ConfigRecord(resource_type, resource_name, name, None))
            for name, value in new.items():
                if current.get(name) != value:
                    records.append(ConfigRecord(resource_type, resource_name, name, value))
        return Decision(records, results)

    @staticmethod
    def _apply_ops(
        table: Any,
        values: dict[str, str],
        ops: Sequence[ConfigOp],
        incremental: bool,
    ) -> tuple[dict[str, str], str | None]:
        if not incremental:
            values = {}
        for op in ops:
            if op.name not in table:
                return values, f"Unknown config name: {op.name}"
            kind = table.key(op.name).type
            if not incremental or op.op == OpType.SET:
                if op.value is None:
                    if incremental:
                        return values, f"Null value not supported for : {op.name}"
                    continue
                values[op.name] = op.value
            elif op.op == OpType.DELETE:
                values.pop(op.name, None)
            elif op.op in (OpType.APPEND, OpType.SUBTRACT):
                if kind is not Type.LIST:
                    return values, (
                        f"Config value append is not allowed for config key: {op.name}"
                        if op.op == OpType.APPEND
                        else f"Config value subtract is not allowed for config key: {op.name}"
                    )
                default = table.key(op.name).default or []
                base = values[op.name].split(",") if op.name in values else list(default)
                items = [v for v in (op.value or "").split(",") if v]
                if op.op == OpType.APPEND:
                    base += [v for v in items if v not in base]
                else:
                    base = [v for v in base if v not in items]
                values[op.name] = ",".join(base)
            else:
                return values, f"Unknown alter config operation {op.op}"
        return values, None

    # ------------------------------------------------------------------ producers
    def allocate_producer_ids(self, broker_id: int, broker_epoch: int) -> tuple[Decision, int]:
        start = self.image.next_producer_id
        record = ProducerIdsRecord(broker_id, broker_epoch, start + PRODUCER_ID_BLOCK)
        return Decision([record], []), start

    # ------------------------------------------------------------------ leadership
    def elect_leaders(
        self, election_type: int, partitions: Sequence[tuple[str, int]] | None
    ) -> Decision:
        """ElectLeaders: 0 preferred, 1 unclean. ``partitions`` None means every partition."""
        live = {b.broker_id for b in self.image.live_brokers()}
        if partitions is None:
            partitions = [(t.name, p) for t in self.image.topics.values() for p in t.partitions]
        records: list[MetadataRecord] = []
        results: list[tuple[str, int, Outcome]] = []
        for topic, p in partitions:
            info = self.image.partition(topic, p)
            if info is None:
                results.append(
                    (
                        topic,
                        p,
                        Outcome(Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
                    )
                )
                continue
            if election_type == 0:
                preferred = info.replicas[0]
                if info.leader == preferred:
                    results.append(
                        (
                            topic,
                            p,
                            Outcome(
                                Errors.ELECTION_NOT_NEEDED,
                                "Leader election not needed for topic partition.",
                            ),
                        )
                    )
                elif preferred not in live or preferred not in info.isr:
                    results.append(
                        (
                            topic,
                            p,
                            Outcome(
                                Errors.PREFERRED_LEADER_NOT_AVAILABLE,
                                "Failed to elect leader for partition "
                                f"{topic}-{p} under strategy "
                                "PreferredReplicaPartitionLeaderElection",
                            ),
                        )
                    )
                else:
                    records.append(PartitionChangeRecord(info.topic_id, p, leader=preferred))
                    results.append((topic, p, Outcome()))
            elif quorum_acks.enabled(quorum_acks.topic_quorum(self.image, topic)):
                results.append(
                    (
                        topic,
                        p,
                        Outcome(
                            Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE,
                            f"Unclean election does not apply to {topic}: it has "
                            f"{quorum_acks.CONFIG} set, and its leader is elected from the most "
                            "complete log of its live replicas.",
                        ),
                    )
                )
            else:
                if info.leader in live:
                    results.append(
                        (
                            topic,
                            p,
                            Outcome(
                                Errors.ELECTION_NOT_NEEDED,
                                "Leader election not needed for topic partition.",
                            ),
                        )
                    )
                    continue
                candidates = [r for r in info.replicas if r in live]
                if not candidates:
                    results.append(
                        (
                            topic,
                            p,
                            Outcome(
                                Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, "No live replica to elect."
                            ),
                        )
                    )
                    continue
                records.append(
                    PartitionChangeRecord(
                        info.topic_id, p, leader=candidates[0], isr=(candidates[0],)
                    )
                )
                results.append((topic, p, Outcome()))
        return Decision(records, results)

    def alter_partition_reassignments(
        self, targets: Sequence[tuple[str, int, list[int] | None]]
    ) -> Decision:
        """Start (target replicas) or cancel (None) reassignments. Replicas being added join as
        followers; ``complete_reassignments`` finishes a move once they are all in the ISR."""
        live = {b.broker_id for b in self.image.live_brokers()}
        records: list[MetadataRecord] = []
        results: list[tuple[str, int, Outcome]] = []
        capacity = self.partition_capacity()
        for topic, p, target in targets:
            info = self.image.partition(topic, p)
            if info is None:
                results.append(
                    (
                        topic,
                        p,
                        Outcome(Errors.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist."),
                    )
                )
                continue
            if target is None:
                if not info.adding_replicas and not info.removing_replicas:
                    results.append(
                        (
                            topic,
                            p,
                            Outcome(
                                Errors.NO_REASSIGNMENT_IN_PROGRESS,
                                f"No reassignment is in progress for {topic}-{p}",
                            ),
                        )
                    )
                    continue
                original = tuple(r for r in info.replicas if r not in info.adding_replicas)
                isr = tuple(r for r in info.isr if r in original) or (original[0],)
                leader = info.leader if info.leader in original else isr[0]
                records.append(
                    PartitionChangeRecord(
                        info.topic_id,
                        p,
                        replicas=original,
                        isr=isr,
                        leader=leader,
                        adding_replicas=(),
                        removing_replicas=(),
                    )
                )
                results.append((topic, p, Outcome()))
                continue
            if not target or len(set(target)) != len(target) or any(r not in live for r in target):
                results.append(
                    (
                        topic,
                        p,
                        Outcome(
                            Errors.INVALID_REPLICA_ASSIGNMENT,
                            f"Invalid target replicas {target}: replicas "
                            "must be distinct live brokers.",
                        ),
                    )
                )
                continue
            q = quorum_acks.topic_quorum(self.image, topic)
            error = quorum_acks.config_error(q, len(target)) if quorum_acks.enabled(q) else None
            if error is not None:
                results.append((topic, p, Outcome(Errors.INVALID_CONFIG, error)))
                continue
            adding = tuple(r for r in target if r not in info.replicas)
            removing = tuple(r for r in info.replicas if r not in target)
            refusal = capacity.refusal([adding])
            if refusal is not None:
                results.append((topic, p, Outcome(Errors.POLICY_VIOLATION, refusal)))
                continue
            merged = tuple(target) + removing
            records.append(
                PartitionChangeRecord(
                    info.topic_id,
                    p,
                    replicas=merged,
                    adding_replicas=adding,
                    removing_replicas=removing,
                )
            )
            results.append((topic, p, Outcome()))
        records.extend(self._completions(pending=records))
        return Decision(records, results)

    def _completions(self, pending: Sequence[MetadataRecord] = ()) -> list[MetadataRecord]:
        """Records finishing reassignments whose added replicas are all in the ISR."""
        overlay = {
            (r.topic_id, r.partition_id): r for r in pending if isinstance(r, PartitionChangeRecord)
        }
        out: list[MetadataRecord] = []
        for topic in self.image.topics.values():
            for p, info in topic.partitions.items():
                change = overlay.get((topic.topic_id, p))
                adding = (
                    info.adding_replicas
                    if change is None or change.adding_replicas is None
                    else change.adding_replicas
                )
                removing = (
                    info.removing_replicas
                    if change is None or change.removing_replicas is None
                    else change.removing_replicas
                )
                replicas = (
                    info.replicas if change is None or change.replicas is None else change.replicas
                )
                if not adding and not removing:
                    continue
                if any(r not in info.isr for r in adding):
                    continue
                final = tuple(r for r in replicas if r not in removing)
                isr = tuple(r for r in info.isr if r in final) or (final[0],)
                leader = info.leader if info.leader in final else isr[0]
                out.append(
                    PartitionChangeRecord(
                        topic.topic_id,
                        p,
                        replicas=final,
                        isr=isr,
                        leader=leader,
                        adding_replicas=(),
                        removing_replicas=(),
                    )
                )
        return out

    def complete_reassignments(self) -> Decision:
        return Decision(self._completions(), [])

    def list_partition_reassignments(
        self,
        partitions: Sequence[tuple[str, int]] | None,
    ) -> list[tuple[str, int, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
        out = []
        for topic in self.image.topics.values():
            for p, info in sorted(topic.partitions.items()):
                if partitions is not None and (topic.name, p) not in partitions:
                    continue
                if info.adding_replicas or info.removing_replicas:
                    out.append(
                        (topic.name, p, info.replicas, info.adding_replicas, info.removing_replicas)
                    )
        return out

    def partition_capacity(self) -> PartitionCapacity:
        """The per-broker partition limit, for one request."""
        return PartitionCapacity(self.image, int(self.server_config["max.broker.partitions"]))

    def is_internal(self, name: str) -> bool:
        return is_internal(name)
