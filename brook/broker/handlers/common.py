"""Helpers several handlers share: authorized-operation bitfields, topic auto-creation, and
the KIP-951 leader hints filled into Produce and Fetch errors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from brook.metadata.controller import CreateTopicSpec
from brook.metadata.controller_api import ControllerError
from brook.metadata.records import Endpoint

from ..controller_channel import call_controller

if TYPE_CHECKING:
    from ..server import Broker

INT32_MIN = -(2**31)

# Kafka's AclOperation codes
_READ, _WRITE, _CREATE, _DELETE, _ALTER, _DESCRIBE = 3, 4, 5, 6, 7, 8
_CLUSTER_ACTION, _DESCRIBE_CONFIGS, _ALTER_CONFIGS, _IDEMPOTENT_WRITE = 9, 10, 11, 12


def _bits(ops: Iterable[int]) -> int:
    value = 0
    for op in ops:
        value |= 1 << op
    return value


# Without an authorizer every operation is allowed, as Kafka reports it.
TOPIC_OPERATIONS = _bits(
    [_READ, _WRITE, _CREATE, _DELETE, _ALTER, _DESCRIBE, _DESCRIBE_CONFIGS, _ALTER_CONFIGS]
)
CLUSTER_OPERATIONS = _bits(
    [
        _CREATE,
        _ALTER,
        _DESCRIBE,
        _CLUSTER_ACTION,
        _DESCRIBE_CONFIGS,
        _ALTER_CONFIGS,
        _IDEMPOTENT_WRITE,
    ]
)
GROUP_OPERATIONS = _bits([_READ, _DELETE, _DESCRIBE])


async def auto_create_topics(broker: Broker, names: list[str]) -> None:
    """Create topics with the broker's defaults; races with other creators are harmless, and
    so is a controller that cannot be reached (the client retries its metadata request)."""
    specs = [CreateTopicSpec(name) for name in names]
    try:
        await call_controller(broker, lambda c: c.create_topics(specs, False))
    except ControllerError:
        pass


def leader_hint(
    broker: Broker, topic: str, partition: int, listener: str
) -> tuple[tuple[int, int], Endpoint | None]:
    """((leader id, leader epoch), the leader's endpoint on ``listener`` if it is alive)."""
    info = broker.image.partition(topic, partition)
    if info is None:
        return (-1, -1), None
    return (info.leader, info.leader_epoch), broker.image.alive_endpoint(info.leader, listener)
