"""The admin client's topic operations: create and delete (CreateTopics / DeleteTopics, sent to
the controller and retried item by item when it moves), list and describe (Metadata)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors

from .core import AdminCore, Outcome, item_error, retry_controller
from .types import CreatedTopic, NewTopic, TopicDescription, TopicListing

__all__ = ["create_topics", "delete_topics", "describe_topics", "list_topics"]


async def create_topics(
    core: AdminCore,
    topics: Iterable[NewTopic | str],
    *,
    validate_only: bool = False,
    timeout_ms: int | None = None,
) -> dict[str, CreatedTopic]:
    """Create topics (a plain name gets the broker's defaults); returns them by name."""
    wanted = {t.name: t for t in (NewTopic(t) if isinstance(t, str) else t for t in topics)}
    deadline = core.deadline(timeout_ms)
    # -1 partitions / replication factor (broker defaults) arrived with CreateTopics v4.
    needs_v4 = any(
        t.num_partitions < 0 or t.replication_factor < 0
        for t in wanted.values()
        if t.replica_assignment is None
    )

    async def attempt(pending: dict[str, NewTopic], deadline: float) -> Outcome:
        data = {
            "topics": [_creatable_topic(t) for t in pending.values()],
            "timeout": core.op_timeout(deadline),
            "validate_only": validate_only,
        }
        resp = await core.send_controller(
            ApiKey.CREATE_TOPICS, data, client_min=4 if needs_v4 else None
        )
        out: Outcome = {}
        for r in resp.topics:
            code = int(r.error_code)
            if code:
                out[r.name] = item_error(code, f"topic {r.name!r}", r.error_message)
                continue
            configs = getattr(r, "configs", None) or ()
            out[r.name] = CreatedTopic(
                r.name,
                topic_id_of(r),
                int(getattr(r, "num_partitions", -1)),
                int(getattr(r, "replication_factor", -1)),
                {c.name: c.value for c in configs},
            )
        return out

    return await core.per_item(wanted, attempt, deadline, retry_controller)


async def delete_topics(
    core: AdminCore, topics: Iterable[str], *, timeout_ms: int | None = None
) -> None:
    """Delete topics by name."""
    names = {name: name for name in topics}
    deadline = core.deadline(timeout_ms)

    async def attempt(pending: dict[str, str], deadline: float) -> Outcome:
        data = {
            "topic_names": list(pending),
            "topics": [{"name": n, "topic_id": None} for n in pending],
            "timeout": core.op_timeout(deadline),
        }
        resp = await core.send_controller(ApiKey.DELETE_TOPICS, data)
        out: Outcome = {}
        for r in resp.responses:
            code = int(r.error_code)
            message = getattr(r, "error_message", None)
            out[r.name] = item_error(code, f"topic {r.name!r}", message) if code else r.name
        return out

    await core.per_item(names, attempt, deadline, retry_controller)


async def list_topics(
    core: AdminCore, *, include_internal: bool = False, timeout_ms: int | None = None
) -> dict[str, TopicListing]:
    """All topics by name (internal ones such as __consumer_offsets only when asked)."""
    deadline = core.deadline(timeout_ms)
    resp = await core.call(lambda: core.network.fetch_metadata(None), deadline)
    listings = {}
    for t in resp.topics:
        if int(t.error_code) or t.name is None:
            continue
        if t.is_internal and not include_internal:
            continue
        listings[t.name] = TopicListing(t.name, topic_id_of(t), bool(t.is_internal))
    return dict(sorted(listings.items()))


async def describe_topics(
    core: AdminCore, topics: Iterable[str], *, timeout_ms: int | None = None
) -> dict[str, TopicDescription]:
    """Partitions (leader, epoch, replicas, ISR, offline replicas) and id of each topic."""
    names = {name: name for name in topics}
    deadline = core.deadline(timeout_ms)

    async def attempt(pending: dict[str, str], deadline: float) -> Outcome:
        resp = await core.network.fetch_metadata(list(pending), allow_auto_topic_creation=False)
        out: Outcome = {}
        for t in resp.topics:
            code = int(t.error_code)
            if code:
                out[t.name] = item_error(code, f"topic {t.name!r}")
                continue
            cached = core.network.cluster.topics.get(t.name)
            parts = tuple(cached.partitions.values()) if cached is not None else ()
            out[t.name] = TopicDescription(t.name, topic_id_of(t), bool(t.is_internal), parts)
        return out

    # A topic still being created answers LEADER_NOT_AVAILABLE for a moment.
    return await core.per_item(
        names, attempt, deadline, lambda e: e.code == Errors.LEADER_NOT_AVAILABLE
    )


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


def topic_id_of(t: Any) -> uuid.UUID | None:
    """A response's topic id; None for the zero UUID (no id) and versions without one."""
    topic_id = getattr(t, "topic_id", None)
    return None if topic_id is None or topic_id.int == 0 else topic_id
