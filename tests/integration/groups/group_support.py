"""Raw group-protocol requests for the group suites, and decoding of the consumer protocol's
subscriptions and assignments, so tests can see exactly what the broker answers."""

from __future__ import annotations

import struct
import time
import typing
from collections.abc import Callable
from typing import Any, TypeVar

from rawclient import RawClient

from brook.protocol.api import request_class
from brook.protocol.errors import Errors

T = TypeVar("T")

# Small timeouts keep the suite fast; the initial delay stays on, short.
OVERRIDES = {
    "group.initial.rebalance.delay.ms": "300",
    "group.min.session.timeout.ms": "500",
    "offsets.topic.num.partitions": "4",
    "offsets.topic.replication.factor": "1",
}

RETRIABLE = {
    Errors.COORDINATOR_LOAD_IN_PROGRESS,
    Errors.COORDINATOR_NOT_AVAILABLE,
    Errors.NOT_COORDINATOR,
}


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic)) + topic.encode()
    return out + struct.pack(">i", -1)


def assignment(partitions: dict[str, list[int]]) -> bytes:
    """ConsumerProtocolAssignment v0."""
    out = struct.pack(">hi", 0, len(partitions))
    for topic, parts in partitions.items():
        out += struct.pack(">h", len(topic)) + topic.encode()
        out += struct.pack(">i", len(parts)) + b"".join(struct.pack(">i", p) for p in parts)
    return out + struct.pack(">i", -1)


def parse_assignment(data: bytes) -> set[tuple[str, int]]:
    """The partitions of a ConsumerProtocolAssignment (any version: v0 is the prefix)."""
    if not data:
        return set()
    pos = 2
    (count,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out = set()
    for _ in range(max(count, 0)):
        (size,) = struct.unpack_from(">h", data, pos)
        pos += 2
        topic = data[pos : pos + size].decode()
        pos += size
        (n,) = struct.unpack_from(">i", data, pos)
        pos += 4
        for _ in range(n):
            (p,) = struct.unpack_from(">i", data, pos)
            pos += 4
            out.add((topic, p))
    return out


def until(fn: Callable[[], T | None], timeout: float = 20.0, what: str = "condition") -> T:
    """Poll ``fn`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def find_coordinator(c: RawClient, group: str, version: int = 3) -> Any:
    if version >= 4:
        return c.request(10, version, {"key_type": 0, "coordinator_keys": [group]})
    return c.request(10, version, {"key": group, "key_type": 0})


def ready(c: RawClient, group: str) -> None:
    """Wait until the broker coordinates ``group`` (topic created, partition loaded)."""

    def probe() -> bool:
        resp = find_coordinator(c, group)
        if resp.error_code:
            return False
        return describe(c, group).error_code == Errors.NONE

    until(probe, what=f"a coordinator for {group}")


def join(
    c: RawClient,
    group: str,
    member_id: str = "",
    *,
    version: int = 5,
    instance: str | None = None,
    topics: tuple[str, ...] = ("t",),
    session_ms: int = 10000,
    rebalance_ms: int = 10000,
    protocol_type: str = "consumer",
    protocols: list[tuple[str, bytes]] | None = None,
) -> Any:
    body = {
        "group_id": group,
        "session_timeout": session_ms,
        "rebalance_timeout": rebalance_ms,
        "member_id": member_id,
        "group_instance_id": instance,
        "protocol_type": protocol_type,
        "protocols": [
            {"name": name, "metadata": meta}
            for name, meta in (
                protocols if protocols is not None else [("range", subscription(*topics))]
            )
        ],
        "reason": None,
    }
    return c.request(11, version, body)


def sync(
    c: RawClient,
    group: str,
    member_id: str,
    generation: int,
    assignments: dict[str, bytes] | None = None,
    *,
    version: int = 3,
    instance: str | None = None,
) -> Any:
    return c.request(
        14,
        version,
        {
            "group_id": group,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": instance,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [
                {"member_id": m, "assignment": a} for m, a in (assignments or {}).items()
            ],
        },
    )


def heartbeat(
    c: RawClient, group: str, member_id: str, generation: int, instance: str | None = None
) -> int:
    resp = c.request(
        12,
        3,
        {
            "group_id": group,
            "generation_id": generation,
            "member_id": member_id,
            "group_instance_id": instance,
        },
    )
    return int(resp.error_code)


def leave(c: RawClient, group: str, member_id: str) -> Any:
    return c.request(13, 1, {"group_id": group, "member_id": member_id})


def commit(
    c: RawClient,
    group: str,
    offsets: dict[tuple[str, int], tuple[int, str | None]],
    *,
    member_id: str = "",
    generation: int = -1,
    version: int = 8,
) -> dict[tuple[str, int], int]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), (offset, metadata) in offsets.items():
        topics.setdefault(topic, []).append(
            {
                "partition_index": partition,
                "committed_offset": offset,
                "committed_leader_epoch": -1,
                "committed_metadata": metadata,
            }
        )
    resp = c.request(
        8,
        version,
        {
            "group_id": group,
            "generation_id_or_member_epoch": generation,
            "member_id": member_id,
            "group_instance_id": None,
            "retention_time": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        },
    )
    return {
        (t.name, p.partition_index): int(p.error_code) for t in resp.topics for p in t.partitions
    }


def _nested(cls: type, field: str) -> type:
    hint = typing.get_type_hints(cls)[field]
    for arg in typing.get_args(hint):
        inner = typing.get_args(arg)
        if inner:
            return typing.cast(type, inner[0])
    return typing.cast(type, typing.get_args(hint)[0])


def fetch_offsets(
    c: RawClient,
    group: str,
    partitions: dict[str, list[int]] | None,
    version: int = 7,
) -> Any:
    """OffsetFetch v1-v7 (``partitions`` None = everything committed, v2+)."""
    cls = request_class(9, version)
    topics = None
    if partitions is not None:
        topic_cls = _nested(cls, "topics")
        topics = tuple(
            topic_cls(name=t, partition_indexes=tuple(ps)) for t, ps in partitions.items()
        )
    kwargs: dict[str, Any] = {"group_id": group, "topics": topics}
    if version >= 7:
        kwargs["require_stable"] = False
    return c.request(9, version, cls(**kwargs))


def fetch_offsets_groups(
    c: RawClient, groups: dict[str, dict[str, list[int]] | None], version: int = 8
) -> Any:
    """OffsetFetch v8+ for several groups at once."""
    cls = request_class(9, version)
    group_cls = _nested(cls, "groups")
    topic_cls = _nested(group_cls, "topics")
    entries = []
    for group, partitions in groups.items():
        topics = None
        if partitions is not None:
            topics = tuple(
                topic_cls(name=t, partition_indexes=tuple(ps)) for t, ps in partitions.items()
            )
        extra = {"member_id": None, "member_epoch": -1} if version >= 9 else {}
        entries.append(group_cls(group_id=group, topics=topics, **extra))
    return c.request(9, version, cls(groups=tuple(entries), require_stable=False))


def committed(c: RawClient, group: str) -> dict[tuple[str, int], tuple[int, str]]:
    resp = fetch_offsets(c, group, None)
    assert resp.error_code == 0, resp
    return {
        (t.name, p.partition_index): (p.committed_offset, p.metadata)
        for t in resp.topics
        for p in t.partitions
    }


def describe(c: RawClient, group: str, version: int = 4) -> Any:
    resp = c.request(15, version, {"groups": [group], "include_authorized_operations": True})
    return resp.groups[0]


def list_groups(c: RawClient, states: list[str] | None = None, version: int = 4) -> Any:
    return c.request(16, version, {"states_filter": states or [], "types_filter": []})


def group_assignment(c: RawClient, group: str) -> dict[str, set[tuple[str, int]]] | None:
    """Member id -> partitions of a Stable group, or None when it is not Stable."""
    desc = describe(c, group)
    if desc.error_code or desc.group_state != "Stable":
        return None
    return {m.member_id: parse_assignment(m.member_assignment) for m in desc.members}


def retry(fn: Callable[[], Any], code: Callable[[Any], int], timeout: float = 20.0) -> Any:
    """Call ``fn`` until its error code is not a coordinator-moving one."""
    deadline = time.monotonic() + timeout
    while True:
        result = fn()
        if code(result) not in RETRIABLE or time.monotonic() > deadline:
            return result
        time.sleep(0.1)
