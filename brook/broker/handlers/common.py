"""Helpers several handlers share: topic auto-creation, and the KIP-951 leader hints filled
into Produce and Fetch errors (authorized-operation bitfields are ``brook.broker.authz``'s)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from brook.metadata.controller import CreateTopicSpec
from brook.metadata.controller_api import ControllerError
from brook.metadata.records import Endpoint

from ..controller_channel import call_controller

if TYPE_CHECKING:
    from ..server import Broker

INT32_MIN = -(2**31)


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
