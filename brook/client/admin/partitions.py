"""The admin client's partition operations: growing topics (CreatePartitions), offsets
(ListOffsets, to each partition's leader), leader elections (ElectLeaders) and partition
reassignments (AlterPartitionReassignments / ListPartitionReassignments). Changes go to the
controller and are retried while it moves."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from ..cluster import TopicPartition
from ..list_offsets import ISOLATION_LEVELS
from ..list_offsets import list_offsets as list_offsets_by_leader
from .core import AdminCore, Outcome, item_error, retry_controller
from .types import (
    AdminError,
    ElectionType,
    ListedOffset,
    NewPartitions,
    OffsetSpec,
    PartitionReassignment,
)

__all__ = [
    "alter_partition_reassignments",
    "create_partitions",
    "elect_leaders",
    "list_offsets",
    "list_partition_reassignments",
]


def partition_text(tp: TopicPartition) -> str:
    """How an error names a partition: ``partition orders-0``."""
    return f"partition {tp.topic}-{tp.partition}"


def _retry_offsets(exc: KafkaError) -> bool:
    # An unknown topic fails at once rather than being retried until the deadline.
    return exc.retriable and exc.code != Errors.UNKNOWN_TOPIC_OR_PARTITION


async def create_partitions(
    core: AdminCore,
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
    deadline = core.deadline(timeout_ms)

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
            "timeout": core.op_timeout(deadline),
            "validate_only": validate_only,
        }
        resp = await core.send_controller(ApiKey.CREATE_PARTITIONS, data)
        out: Outcome = {}
        for r in resp.results:
            code = int(r.error_code)
            out[r.name] = item_error(code, f"topic {r.name!r}", r.error_message) if code else r.name
        return out

    await core.per_item(wanted, attempt, deadline, retry_controller)


async def list_offsets(
    core: AdminCore,
    specs: Mapping[tuple[str, int], OffsetSpec | int],
    *,
    isolation_level: str = "read_uncommitted",
    timeout_ms: int | None = None,
) -> dict[TopicPartition, ListedOffset]:
    """Offsets per partition: EARLIEST, LATEST, MAX_TIMESTAMP, or the first offset whose
    timestamp is >= a given ms timestamp; each request goes to the partition's leader."""
    wanted = {TopicPartition(*tp): int(spec) for tp, spec in specs.items()}
    level = ISOLATION_LEVELS[isolation_level]
    deadline = core.deadline(timeout_ms)

    async def attempt(pending: dict[TopicPartition, int], deadline: float) -> Outcome:
        topics = sorted({tp.topic for tp in pending})
        await core.network.fetch_metadata(topics, allow_auto_topic_creation=False)
        return await list_offsets_by_leader(
            core.network,
            pending,
            isolation_level=level,
            timeout_ms=core.op_timeout(deadline),
        )

    return await core.per_item(wanted, attempt, deadline, _retry_offsets)


async def elect_leaders(
    core: AdminCore,
    election_type: ElectionType = ElectionType.PREFERRED,
    partitions: Iterable[tuple[str, int]] | None = None,
    *,
    timeout_ms: int | None = None,
) -> dict[TopicPartition, bool]:
    """Run leader elections (None = every partition). Maps each partition to whether a
    leader was elected now; False means ELECTION_NOT_NEEDED (it already had the right one).
    """
    deadline = core.deadline(timeout_ms)
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
            "timeout": core.op_timeout(deadline),
        }
        client_min = 1 if election_type != ElectionType.PREFERRED else None
        resp = await core.send_controller(ApiKey.ELECT_LEADERS, data, client_min=client_min)
        code = int(getattr(resp, "error_code", 0))
        if code:
            raise KafkaError(code, "ElectLeaders")
        return resp

    resp = await core.call(attempt, deadline)
    results: dict[TopicPartition, bool] = {}
    errors: dict[TopicPartition, KafkaError] = {}
    for t in resp.replica_election_results:
        for p in t.partition_result:
            tp = TopicPartition(t.topic, int(p.partition_id))
            code = int(p.error_code)
            if code == Errors.ELECTION_NOT_NEEDED:
                results[tp] = False
            elif code:
                errors[tp] = item_error(code, partition_text(tp), p.error_message)
            else:
                results[tp] = True
    if errors:
        raise AdminError(errors, results)
    return results


async def alter_partition_reassignments(
    core: AdminCore,
    reassignments: Mapping[tuple[str, int], Sequence[int] | None],
    *,
    timeout_ms: int | None = None,
) -> None:
    """Move partitions to new replica lists; None cancels a reassignment in progress."""
    wanted = {TopicPartition(*tp): r for tp, r in reassignments.items()}
    deadline = core.deadline(timeout_ms)

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
            "timeout": core.op_timeout(deadline),
            "allow_replication_factor_change": True,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }
        resp = await core.send_controller(ApiKey.ALTER_PARTITION_REASSIGNMENTS, data)
        code = int(resp.error_code)
        if code:
            raise KafkaError(code, resp.error_message)
        out: Outcome = {}
        for t in resp.responses:
            for p in t.partitions:
                tp = TopicPartition(t.name, int(p.partition_index))
                pcode = int(p.error_code)
                out[tp] = item_error(pcode, partition_text(tp), p.error_message) if pcode else None
        return out

    await core.per_item(wanted, attempt, deadline, retry_controller)


async def list_partition_reassignments(
    core: AdminCore,
    partitions: Iterable[tuple[str, int]] | None = None,
    *,
    timeout_ms: int | None = None,
) -> dict[TopicPartition, PartitionReassignment]:
    """Reassignments in progress (None = for every partition)."""
    deadline = core.deadline(timeout_ms)
    by_topic: dict[str, list[int]] = {}
    for tp in partitions or ():
        by_topic.setdefault(tp[0], []).append(tp[1])

    async def attempt() -> Any:
        data = {
            "timeout": core.op_timeout(deadline),
            "topics": None
            if partitions is None
            else [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()],
        }
        resp = await core.send_controller(ApiKey.LIST_PARTITION_REASSIGNMENTS, data)
        code = int(resp.error_code)
        if code:
            raise KafkaError(code, resp.error_message)
        return resp

    resp = await core.call(attempt, deadline)
    return {
        TopicPartition(t.name, int(p.partition_index)): PartitionReassignment(
            tuple(int(r) for r in p.replicas),
            tuple(int(r) for r in p.adding_replicas),
            tuple(int(r) for r in p.removing_replicas),
        )
        for t in resp.topics
        for p in t.partitions
    }
