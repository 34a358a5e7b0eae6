"""The admin client's consumer-group operations: list groups (every broker, state and type
filters), describe consumer groups (members and their assignments decoded from the consumer
protocol), list / alter / delete committed offsets, and delete groups. Each group's request
goes to its coordinator (FindCoordinator first), retried while the coordinator moves or loads.

The functions take the admin client's core (network, deadlines, retry loops); AsyncAdmin and
Admin expose them as methods.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from brook.protocol.api import ApiKey
from brook.protocol.errors import Errors, KafkaError

from ..cluster import BrokerNode, TopicPartition
from ..consumer.consumer_protocol import ConsumerProtocolError, decode_assignment
from ..consumer.coordinator import OffsetAndMetadata
from ..group_requests import (
    OFFSET_COMMIT_MAX,
    OFFSET_FETCH_MAX,
    find_coordinator,
    offset_commit_errors,
    offset_commit_request,
    offset_fetch_request,
    parse_offset_fetch,
)
from .core import AdminCore
from .types import AdminError

__all__ = [
    "CONSUMER_GROUP_STATES",
    "ConsumerGroupDescription",
    "GroupListing",
    "MemberDescription",
]

# The classic group states Kafka reports (GroupState's names).
CONSUMER_GROUP_STATES = (
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
)
_CONSUMER_PROTOCOL = "consumer"


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None = None  # ListGroups v4+
    type: str | None = None  # ListGroups v5+ ("classic", "consumer", ...)

    @property
    def is_simple_consumer_group(self) -> bool:
        return not self.protocol_type


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: frozenset[TopicPartition]


@dataclass(frozen=True)
class ConsumerGroupDescription:
    group_id: str
    is_simple_consumer_group: bool
    members: tuple[MemberDescription, ...]
    partition_assignor: str
    state: str
    coordinator: BrokerNode


def _retry_group(exc: KafkaError) -> bool:
    return exc.retriable or exc.code == Errors.NOT_COORDINATOR


async def _coordinator(core: AdminCore, group_id: str, deadline: float) -> BrokerNode:
    return await find_coordinator(core.network, group_id, core.op_timeout(deadline))


async def _send(core: AdminCore, node: BrokerNode, api: int, body: Any, **kw: Any) -> Any:
    return await core.send_to(node.node_id, api, body, **kw)


# ---------------------------------------------------------------------------------------------
# Listing
# ---------------------------------------------------------------------------------------------


async def list_groups(
    core: AdminCore,
    *,
    states: Iterable[str] = (),
    types: Iterable[str] = (),
    consumer_only: bool = True,
    timeout_ms: int | None = None,
) -> list[GroupListing]:
    """Groups of every broker; ``consumer_only`` keeps consumer groups and groups that only
    hold offsets (empty protocol type), as Java's ListGroupsOptions.forConsumerGroups."""
    deadline = core.deadline(timeout_ms)
    states, types = list(states), list(types)

    async def attempt(pending: dict[int, int], deadline: float) -> dict[int, Any]:
        out: dict[int, Any] = {}
        for node_id in pending:
            try:
                resp = await core.network.send_to(
                    node_id,
                    ApiKey.LIST_GROUPS,
                    {"states_filter": states, "types_filter": types},
                    timeout_ms=core.op_timeout(deadline),
                )
            except KafkaError as exc:
                out[node_id] = exc
                continue
            code = int(resp.error_code)
            out[node_id] = KafkaError(code, f"ListGroups on broker {node_id}") if code else resp
        return out

    await core.start()
    nodes = {n: n for n in core.network.cluster.brokers}
    answers = await core.per_item(nodes, attempt, deadline, _retry_group)
    listings: dict[str, GroupListing] = {}
    wanted_states = {s.lower() for s in states}
    for resp in answers.values():
        for g in resp.groups:
            state = getattr(g, "group_state", None)
            if wanted_states and state is not None and state.lower() not in wanted_states:
                continue  # a broker older than v4 does not filter
            listing = GroupListing(
                g.group_id, g.protocol_type or "", state, getattr(g, "group_type", None)
            )
            if consumer_only and listing.protocol_type not in ("", _CONSUMER_PROTOCOL):
                continue
            listings[g.group_id] = listing
    return sorted(listings.values(), key=lambda g: g.group_id)


# ---------------------------------------------------------------------------------------------
# Describing
# ---------------------------------------------------------------------------------------------


def _member(m: Any) -> MemberDescription:
    try:
        partitions = frozenset(decode_assignment(bytes(m.member_assignment)).partitions)
    except ConsumerProtocolError:
        partitions = frozenset()
    return MemberDescription(
        m.member_id, getattr(m, "group_instance_id", None), m.client_id, m.client_host, partitions
    )


async def _each_group(
    core: AdminCore,
    group_ids: Iterable[str],
    timeout_ms: int | None,
    api: int,
    body: Callable[[str], dict[str, Any]],
    answer: Callable[[str, BrokerNode, Any], Any],
) -> dict[str, Any]:
    """One request per group to its coordinator; ``answer`` turns the response into the
    group's result or KafkaError. Groups whose error is retriable are tried again."""
    deadline = core.deadline(timeout_ms)

    async def attempt(pending: dict[str, str], deadline: float) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for group_id in pending:
            try:
                node = await _coordinator(core, group_id, deadline)
                resp = await _send(
                    core, node, api, body(group_id), timeout_ms=core.op_timeout(deadline)
                )
            except KafkaError as exc:
                out[group_id] = exc
                continue
            out[group_id] = answer(group_id, node, resp)
        return out

    await core.start()
    return await core.per_item(
        {g: g for g in dict.fromkeys(group_ids)}, attempt, deadline, _retry_group
    )


def _description(group_id: str, node: BrokerNode, resp: Any) -> Any:
    g = resp.groups[0]
    code = int(g.error_code)
    if code:
        return KafkaError(code, f"describing group {group_id}")
    if g.protocol_type not in ("", _CONSUMER_PROTOCOL):
        return KafkaError(
            Errors.INVALID_GROUP_ID,
            f"group {group_id} is not a consumer group (protocol type {g.protocol_type})",
        )
    return ConsumerGroupDescription(
        group_id,
        not g.protocol_type,
        tuple(_member(m) for m in g.members),
        g.protocol_data or "",
        g.group_state,
        node,
    )


async def describe_consumer_groups(
    core: AdminCore, group_ids: Iterable[str], *, timeout_ms: int | None = None
) -> dict[str, ConsumerGroupDescription]:
    return await _each_group(
        core,
        group_ids,
        timeout_ms,
        ApiKey.DESCRIBE_GROUPS,
        lambda g: {"groups": [g], "include_authorized_operations": False},
        _description,
    )


# ---------------------------------------------------------------------------------------------
# Offsets
# ---------------------------------------------------------------------------------------------


async def list_consumer_group_offsets(
    core: AdminCore,
    group_id: str,
    partitions: Iterable[TopicPartition | tuple[str, int]] | None = None,
    *,
    timeout_ms: int | None = None,
) -> dict[TopicPartition, OffsetAndMetadata | None]:
    """Committed offsets (all of the group's by default; None where a requested partition has
    none)."""
    deadline = core.deadline(timeout_ms)
    wanted = None if partitions is None else [TopicPartition(*tp) for tp in partitions]

    async def attempt() -> dict[TopicPartition, OffsetAndMetadata | None]:
        node = await _coordinator(core, group_id, deadline)
        conn = await core.network.connection(node.node_id)
        version = conn.version_for(ApiKey.OFFSET_FETCH, None, OFFSET_FETCH_MAX)
        resp = await conn.send(
            ApiKey.OFFSET_FETCH,
            offset_fetch_request(group_id, wanted, require_stable=False),
            version=version,
            timeout_ms=core.op_timeout(deadline),
        )
        error, found = parse_offset_fetch(resp, version)
        if error:
            raise KafkaError(error, f"fetching the offsets of group {group_id}")
        failed = {tp: KafkaError(code) for tp, (_, code) in found.items() if code}
        if failed:
            retriable = [e for e in failed.values() if _retry_group(e)]
            if retriable:
                raise retriable[0]
            raise AdminError(failed, {})
        if wanted is None:
            return {tp: v for tp, (v, _) in sorted(found.items()) if v is not None}
        return {tp: found.get(tp, (None, 0))[0] for tp in wanted}

    await core.start()
    return await core.call(attempt, deadline)


async def alter_consumer_group_offsets(
    core: AdminCore,
    group_id: str,
    offsets: Mapping[TopicPartition | tuple[str, int], OffsetAndMetadata | int],
    *,
    timeout_ms: int | None = None,
) -> None:
    """Commit ``offsets`` for the group (it must have no active members: Kafka answers
    UNKNOWN_MEMBER_ID otherwise)."""
    deadline = core.deadline(timeout_ms)
    values = {
        TopicPartition(*tp): v if isinstance(v, OffsetAndMetadata) else OffsetAndMetadata(v)
        for tp, v in offsets.items()
    }

    async def attempt(
        pending: dict[TopicPartition, OffsetAndMetadata], deadline: float
    ) -> dict[TopicPartition, Any]:
        node = await _coordinator(core, group_id, deadline)
        resp = await _send(
            core,
            node,
            ApiKey.OFFSET_COMMIT,
            offset_commit_request(group_id, pending),
            client_max=OFFSET_COMMIT_MAX,
            timeout_ms=core.op_timeout(deadline),
        )
        return {
            tp: KafkaError(code, f"committing {tp.topic}-{tp.partition} for group {group_id}")
            if code
            else pending[tp]
            for tp, code in offset_commit_errors(resp).items()
        }

    await core.start()
    await core.per_item(values, attempt, deadline, _retry_group)


async def delete_consumer_group_offsets(
    core: AdminCore,
    group_id: str,
    partitions: Iterable[TopicPartition | tuple[str, int]],
    *,
    timeout_ms: int | None = None,
) -> None:
    """OffsetDelete: a group error raises KafkaError; partition errors (e.g.
    GROUP_SUBSCRIBED_TO_TOPIC) raise AdminError naming each partition."""
    deadline = core.deadline(timeout_ms)
    tps = [TopicPartition(*tp) for tp in dict.fromkeys(partitions)]

    async def attempt() -> dict[TopicPartition, int]:
        node = await _coordinator(core, group_id, deadline)
        by_topic: dict[str, list[dict[str, int]]] = {}
        for tp in tps:
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition})
        resp = await _send(
            core,
            node,
            ApiKey.OFFSET_DELETE,
            {
                "group_id": group_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            },
            timeout_ms=core.op_timeout(deadline),
        )
        code = int(resp.error_code)
        if code:
            raise KafkaError(code, f"deleting offsets of group {group_id}")
        return {
            TopicPartition(t.name, int(p.partition_index)): int(p.error_code)
            for t in resp.topics
            for p in t.partitions
        }

    await core.start()
    codes = await core.call(attempt, deadline)
    failed = {
        tp: KafkaError(code, f"{tp.topic}-{tp.partition}") for tp, code in codes.items() if code
    }
    if failed:
        raise AdminError(failed, {tp: None for tp, code in codes.items() if not code})


async def delete_consumer_groups(
    core: AdminCore, group_ids: Iterable[str], *, timeout_ms: int | None = None
) -> None:
    """Delete empty groups and their offsets; AdminError names each group that could not go
    (NON_EMPTY_GROUP, GROUP_ID_NOT_FOUND, ...)."""

    def answer(group_id: str, node: BrokerNode, resp: Any) -> KafkaError | None:
        code = int(resp.results[0].error_code)
        return KafkaError(code, f"group {group_id}") if code else None

    await _each_group(
        core,
        group_ids,
        timeout_ms,
        ApiKey.DELETE_GROUPS,
        lambda g: {"groups_names": [g]},
        answer,
    )
