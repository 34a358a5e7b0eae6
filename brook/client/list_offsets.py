"""ListOffsets, shared by the admin client and the consumer: partitions grouped by leader, one
request per leader, per-partition results or errors. Retrying is left to the caller."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from .admin.types import SPEC_MIN_VERSION, ListedOffset
from .cluster import ClusterMetadata, TopicPartition
from .network import NetworkClient

__all__ = [
    "ISOLATION_LEVELS",
    "describe_partition",
    "group_by_leader",
    "list_offsets",
    "list_offsets_on",
]

ISOLATION_LEVELS = {"read_uncommitted": 0, "read_committed": 1}

Outcome = dict[TopicPartition, ListedOffset | KafkaError]


def describe_partition(tp: tuple[str, int]) -> str:
    return f"partition {tp[0]}-{tp[1]}"


def group_by_leader(
    cluster: ClusterMetadata, tps: Iterable[TopicPartition]
) -> tuple[dict[int, list[TopicPartition]], dict[TopicPartition, KafkaError]]:
    """Partitions by leader node, and the ones that have none (unknown topic or no leader)."""
    by_leader: dict[int, list[TopicPartition]] = {}
    errors: dict[TopicPartition, KafkaError] = {}
    for tp in tps:
        if tp.topic in cluster.topic_errors:
            errors[tp] = KafkaError(cluster.topic_errors[tp.topic], describe_partition(tp))
        elif cluster.partition(tp) is None:
            errors[tp] = KafkaError(Errors.UNKNOWN_TOPIC_OR_PARTITION, describe_partition(tp))
        elif (leader := cluster.leader_for(tp)) is None:
            errors[tp] = KafkaError(Errors.LEADER_NOT_AVAILABLE, describe_partition(tp))
        else:
            by_leader.setdefault(leader, []).append(tp)
    return by_leader, errors


async def list_offsets_on(
    network: NetworkClient,
    leader: int,
    specs: Mapping[TopicPartition, int],
    *,
    isolation_level: int = 0,
    timeout_ms: int = 30000,
    leader_epochs: Mapping[TopicPartition, int] | None = None,
) -> Outcome:
    """One ListOffsets request to ``leader``: each partition's offset for its spec (a timestamp
    or an OffsetSpec value), or the KafkaError the broker answered for it."""
    # Special timestamps and read_committed need newer versions than plain lookups.
    client_min = max(
        [2 if isolation_level else 1, *(SPEC_MIN_VERSION.get(s, 1) for s in specs.values())]
    )
    epochs = leader_epochs or {}
    by_topic: dict[str, list[dict[str, int]]] = {}
    for tp, spec in specs.items():
        by_topic.setdefault(tp.topic, []).append(
            {
                "partition_index": tp.partition,
                "current_leader_epoch": epochs.get(tp, -1),
                "timestamp": spec,
            }
        )
    data: dict[str, Any] = {
        "replica_id": -1,
        "isolation_level": isolation_level,
        "topics": [{"name": t, "partitions": parts} for t, parts in by_topic.items()],
        "timeout": timeout_ms,
    }
    resp = await network.send_to(leader, ApiKey.LIST_OFFSETS, data, client_min=client_min)
    out: Outcome = {}
    for t in resp.topics:
        for p in t.partitions:
            tp = TopicPartition(t.name, int(p.partition_index))
            code = int(p.error_code)
            if code:
                out[tp] = KafkaError(code, describe_partition(tp))
            else:
                out[tp] = ListedOffset(
                    int(p.offset), int(p.timestamp), int(getattr(p, "leader_epoch", -1))
                )
    for tp in specs:
        if tp not in out:
            out[tp] = KafkaError(
                Errors.UNKNOWN_TOPIC_OR_PARTITION,
                f"{describe_partition(tp)}: missing from the ListOffsets response",
            )
    return out


async def list_offsets(
    network: NetworkClient,
    specs: Mapping[TopicPartition, int],
    *,
    isolation_level: int = 0,
    timeout_ms: int = 30000,
    leader_epochs: bool = False,
) -> Outcome:
    """One attempt for every partition of ``specs``: a request per leader (concurrently), from
    the cached metadata. A partition without a leader, or whose request failed, gets its
    KafkaError; ``leader_epochs`` sends the cached leader epochs for fencing."""
    cluster = network.cluster
    by_leader, errors = group_by_leader(cluster, specs)
    out: Outcome = dict(errors)
    answers = await asyncio.gather(
        *(
            list_offsets_on(
                network,
                leader,
                {tp: specs[tp] for tp in tps},
                isolation_level=isolation_level,
                timeout_ms=timeout_ms,
                leader_epochs={tp: cluster.leader_epoch(tp) for tp in tps}
                if leader_epochs
                else None,
            )
            for leader, tps in by_leader.items()
        ),
        return_exceptions=True,
    )
    for tps, answer in zip(by_leader.values(), answers, strict=True):
        if isinstance(answer, KafkaError):
            out.update(dict.fromkeys(tps, answer))
        elif isinstance(answer, BaseException):
            raise answer
        else:
            out.update(answer)
    return out
