"""Internal topics created on first use: ``__consumer_offsets`` by the first FindCoordinator
for a group, ``__transaction_state`` by the first for a transactional id.

Kafka refuses to create either with fewer replicas than configured (a topic created while a
cluster is starting one node at a time would otherwise keep one replica for good);
FindCoordinator answers COORDINATOR_NOT_AVAILABLE meanwhile, and clients retry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from brook.metadata.controller import CreateTopicSpec
from brook.metadata.controller_api import ControllerError
from brook.protocol.errors import Errors

from .controller_channel import call_controller

if TYPE_CHECKING:
    from .server import Broker

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InternalTopic:
    """One internal topic: its name, how Kafka's messages call it, the config naming its
    replication factor, and its creation spec from the broker's config."""

    name: str
    description: str
    replication_config: str
    spec: Callable[[Mapping[str, Any]], CreateTopicSpec]

    def too_few_brokers(self, live: int, replication_factor: int) -> str | None:
        """Kafka's message when the alive brokers cannot hold the topic; None when they can."""
        if live >= replication_factor:
            return None
        return (
            f"Number of alive brokers '{live}' does not meet the required replication factor "
            f"'{replication_factor}' for the {self.description} (configured via "
            f"'{self.replication_config}'). This error can be ignored if the cluster is "
            "starting up and not all brokers are up yet."
        )


class InternalTopicCreator:
    """Creates one internal topic through the controller, one attempt at a time shared by
    every request waiting for it; a refusal for too few brokers is logged once."""

    def __init__(self, broker: Broker, topic: InternalTopic) -> None:
        self.broker = broker
        self.topic = topic
        self._creating: asyncio.Task[None] | None = None
        self._refusal_logged: str | None = None

    async def ensure(self) -> bool:
        """True once the topic is in the metadata image (creating it if need be)."""
        name = self.topic.name
        if name in self.broker.image.topics:
            return True
        if self._creating is None or self._creating.done():
            self._creating = asyncio.get_running_loop().create_task(self._create())
        with contextlib.suppress(Exception):
            await asyncio.shield(self._creating)
        return name in self.broker.image.topics

    async def _create(self) -> None:
        cfg = self.broker.config
        live = len(self.broker.image.live_brokers())
        refusal = self.topic.too_few_brokers(live, int(cfg[self.topic.replication_config]))
        if refusal is not None:
            if refusal != self._refusal_logged:
                log.warning(refusal)
                self._refusal_logged = refusal
            return
        spec = self.topic.spec(cfg)
        try:
            (result,) = await call_controller(self.broker, lambda c: c.create_topics([spec], False))
        except ControllerError as exc:
            log.warning("could not create %s: %s", self.topic.name, exc)
            return
        if not result.ok and result.error_code != Errors.TOPIC_ALREADY_EXISTS:
            log.warning("could not create %s: %s", self.topic.name, result.error_message)
